# expect: Error: vLLM rejected the arguments: unrecognized arguments: --tensor-paralel-size 2. Closest: --tensor-parallel-size, --data-parallel-size, --pipeline-parallel-size.
# needs: vllm
vllm serve some-org/some-model --tensor-paralel-size 2

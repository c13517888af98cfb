# expect: Error: The vllm serve command names no model. Give it as `vllm serve MODEL …`.
# needs: vllm
vllm serve --tensor-parallel-size 2

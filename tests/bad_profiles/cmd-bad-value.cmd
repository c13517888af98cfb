# expect: Error: vLLM rejected the arguments: argument --max-num-seqs: invalid int value: 'many'.
# needs: vllm
vllm serve some-org/some-model --max-num-seqs many

# expect: Error: SGLang rejected the arguments: argument --tp-size/--tensor-parallel-size: invalid int value: 'four'.
# needs: sglang
python3 -m sglang.launch_server --model-path org/model --tp four

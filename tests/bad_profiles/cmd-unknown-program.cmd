# expect: Error: Cannot tell the engine from 'vllm-server serve m'. Give the launch command as `vllm serve MODEL …`, `sglang serve --model-path MODEL …` or `python -m sglang.launch_server …`.
vllm-server serve m --tensor-parallel-size 2

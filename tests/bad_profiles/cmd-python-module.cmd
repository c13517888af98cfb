# expect: Error: Cannot tell the engine from 'python -m vllm.entrypoints.foo'. Give the launch command as `vllm serve MODEL …`, `sglang serve --model-path MODEL …` or `python -m sglang.launch_server …`.
python -m vllm.entrypoints.foo --model m

# expect: Error: Cannot tell the engine from 'python -m vllm.entrypoints.foo'. Give the launch command as `sglang serve --model-path MODEL …` or `vllm serve MODEL …` (or the engine's `python -m` server module).
python -m vllm.entrypoints.foo --model m

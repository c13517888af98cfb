# expect: Error: Cannot tell the engine from 'vllm-server serve m'. Give the launch command as `sglang serve --model-path MODEL …` or `vllm serve MODEL …` (or the engine's `python -m` server module).
vllm-server serve m --tensor-parallel-size 2

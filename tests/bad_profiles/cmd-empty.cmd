# expect: Error: No launch command after `--`. Give it as `sglang serve --model-path MODEL …` or `vllm serve MODEL …` (or the engine's `python -m` server module).
VLLM_LOGGING_LEVEL=DEBUG CUDA_VISIBLE_DEVICES=0

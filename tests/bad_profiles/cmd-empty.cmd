# expect: Error: No launch command after `--`. Give it as `vllm serve MODEL …`, `sglang serve --model-path MODEL …` or `python -m sglang.launch_server …`.
VLLM_LOGGING_LEVEL=DEBUG CUDA_VISIBLE_DEVICES=0

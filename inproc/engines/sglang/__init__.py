"""SGLang: rank 0's ``Scheduler`` in this process, stepped one event-loop iteration at a time
(``engine.py``, ``launch.py``, ``io.py``, ``info.py``), read through ``sglang serve``'s own
parser (``args.py``) and checked by its own rules (``check.py``)."""
from __future__ import annotations

from inproc.engines.base import EngineAdapter


class SglangAdapter(EngineAdapter):
    name = "sglang"
    label = "SGLang"
    package = "sglang"
    distributions = ("sglang",)
    launchers = (
        ("sglang", "serve"),
        ("-m", "sglang.launch_server"),
        ("-m", "sglang.cli.main", "serve"),
    )
    command_example = "sglang serve --model-path MODEL …"
    max_len_args = ("context-length",)
    tested_versions = ("0.5.23",)
    speculation_args = ("speculative-",)
    tokenizer_args = ("tokenizer-path",)  # speculative-algorithm and the settings that go with it

    def force_acceptance(self, launch, acceptance):
        from inproc.engines.sglang.acceptance import force

        return force(launch, acceptance)

    def build(self, launch):
        from inproc.engines.sglang.acceptance import check_applied
        from inproc.engines.sglang.engine import build_sglang_engine

        engine = build_sglang_engine(launch)
        try:
            check_applied(launch)  # a forced length SGLang did not read would measure natural acceptance
        except BaseException:
            engine.shutdown()
            raise
        return engine


ADAPTER = SglangAdapter()

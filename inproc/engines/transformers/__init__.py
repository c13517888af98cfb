"""transformers' continuous batching: ``ContinuousBatchingManager`` and its batch processor in this
process, stepped one loop body at a time from inproc's thread (``engine.py``, ``build.py``,
``kv.py``, ``info.py``), its settings the installed ``ContinuousBatchingConfig``'s fields (``args.py``)."""
from __future__ import annotations

from inproc.engines.base import EngineAdapter


class TransformersAdapter(EngineAdapter):
    name = "transformers"
    label = "transformers"
    package = "transformers"
    distributions = ("transformers",)
    launchers = ()  # built from its Python API: no launch command to import
    command_example = "model.generate_batch(...) with a ContinuousBatchingConfig"
    max_len_args = ("max-model-len",)
    tested_versions = ("5.17.0", "5.19.0")
    quiet_env = {"TRANSFORMERS_VERBOSITY": "error"}
    module_of_role = {"nodes": "check"}  # one process, one device: check holds its placement and refuses node ranks
    token_count_note = ("transformers keeps no token count of its own: counters().generation_tokens is inproc's, "
                        "from the same request states as the streamed tokens")

    def check_argument_names(self, names):
        self.guarded("args").check_names({n: None for n in names})

    def profiler_args(self, kind, directory, with_stack):
        return {}

    def build(self, launch):
        from inproc.engines.transformers.engine import build_transformers_engine

        return build_transformers_engine(launch)


ADAPTER = TransformersAdapter()

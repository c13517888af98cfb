"""The shared parser helpers: what one parse hands an engine never leaks into the next parse."""
from __future__ import annotations

import argparse

from inproc.engines import flags


def test_a_built_argument_object_does_not_share_the_parsers_defaults():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default={"dir": None})  # as vLLM's config dataclasses are
    first = flags.build_args(parser, [], "X", lambda ns: ns)
    first.config["dir"] = "/set/by/an/engine/build"  # an engine changing its config in place
    second = flags.build_args(parser, [], "X", lambda ns: ns)
    assert second.config == {"dir": None} and parser.get_default("config") == {"dir": None}

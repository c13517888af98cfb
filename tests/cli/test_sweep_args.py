"""The ``inproc run`` flags a sweep hands to every variant: each matrix flag the sweep takes is passed on."""
from __future__ import annotations

import inspect

from inproc.cli.sweep_cmd import _run_args, sweep
from inproc.telemetry.sampler import DEFAULT_HZ

SAMPLES = {"window_s": 2.0, "window_steps": 16, "max_output": 64, "prompt_mode": "distinct", "temperature": 0.5,
           "anatomy": False, "kernels": True, "kernel_steps": 8}


def test_every_matrix_flag_of_the_sweep_reaches_the_variants_run_command():
    named = set(inspect.signature(sweep.callback).parameters) - {"flags"}
    flags = {p.name for p in sweep.params} - named  # what the command body receives as **flags
    assert flags <= set(SAMPLES), f"a new sweep flag needs a sample here: {flags - set(SAMPLES)}"
    args = _run_args(None, None, None, (), True, DEFAULT_HZ, {k: SAMPLES[k] for k in flags})
    for flag, value in (("--duration", "2"), ("--window-steps", "16"), ("--max-output", "64"),
                        ("--prompt-mode", "distinct"), ("--temperature", "0.5"), ("--anatomy", "off"),
                        ("--kernels", "on"), ("--kernel-steps", "8")):
        assert args[args.index(flag) + 1] == value

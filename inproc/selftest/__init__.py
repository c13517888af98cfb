"""``inproc selftest``: the adapter's assumptions checked on the engine build at hand.

The engine's own module (``inproc/engines/<engine>/selftest.py``) names the modes the adapter
steps and the pieces of engine code it reaches for; this package builds each mode on the
tiny model shipped in ``launch_profiles/models``, runs the checks of :mod:`inproc.selftest.checks`
through the ordinary :class:`~inproc.engines.Engine` interface, and reports capability × ✓/✗.
"""
from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from typing import Callable

from inproc import engines
from inproc.engines.pieces import MissingPiece, require
from inproc.errors import UsageError
from inproc.plan.prompts import PromptFactory
from inproc.profiles.spec import Profile, load_profile, profiles_dir
from inproc.selftest import checks
from inproc.selftest.report import Check, SelftestReport

Echo = Callable[[str], None]


def pieces_check(adapter) -> Check:
    """Every piece of engine code the adapter uses, at one of the places it is known to live; one line if not."""
    module = adapter.selftest_module()
    for locations in module.PIECES:
        require(adapter, *locations)  # raises MissingPiece, the one line naming it
    return Check("engine internals present", True, f"{len(module.PIECES)} pieces found")


def tiny_launch(adapter, profile: Profile | None):
    """The tiny model's launch: the engine's shipped tiny profile, or ``profile``'s settings (parallelism, graphs,
    speculative decoding) on its model and small pool: the module's ``MODEL_ARGS`` (the model's own settings) and
    ``TINY_ARGS`` (the tiny profile's pool and limits) come from the tiny profile, everything else from ``profile``."""
    module = adapter.selftest_module()
    tiny = load_profile(profiles_dir() / module.TINY_PROFILE).launch
    if profile is None:
        return tiny
    launch = profile.launch
    taken = module.tiny_args() if hasattr(module, "tiny_args") else module.TINY_ARGS  # the machine's, where it says
    args = {k: v for k, v in launch.engine_args.items() if k not in module.MODEL_ARGS and k not in taken}
    args.update({k: tiny.engine_args[k] for k in taken if k in tiny.engine_args})
    return dataclasses.replace(launch, model=tiny.model, engine_args=args, env={**tiny.env, **launch.env})


def _mode_checks(adapter, mode, workdir: str, echo: Echo) -> tuple[list[Check], str]:
    """Build ``mode``, run its checks, release it; a failed build or step is a ✗ row, not an exception."""
    launch = dataclasses.replace(mode.launch, temperature=0.0)  # the checks' requests are greedy (checks.py)
    profile_dir = os.path.join(workdir, "profile")
    if mode.main:
        extra = adapter.profiler_args("torch", profile_dir, False)
        launch = dataclasses.replace(launch, engine_args={**launch.engine_args, **extra})
    echo(f"selftest: building {adapter.label} ({mode.name}) ...")
    engine = None
    try:
        with mode.build_context():
            engine = engines.build_engine(launch)
        info = engine.info
        prompts = PromptFactory(info.vocab_size, 7, info.special_token_ids)
        rows = checks.decode_checks(engine, mode.name, mode.returned_lag(info), mode.speculative, prompts,
                                    adapter.token_count_note)
        if mode.main:
            rows += checks.capacity_checks(engine)
            unforced = getattr(adapter.selftest_module(), "PREEMPTION_NOT_FORCED", "")
            rows.append(checks.Check("preemption counted", None, unforced) if unforced
                        else checks.preemption_check(engine, prompts))
            rows.append(checks.profiler_check(engine, profile_dir, prompts))
        gpus = info.placement.gpus_per_node if info.placement is not None else 0
        device = f"{gpus} GPU(s) per node" if gpus else "CPU"
        return [dataclasses.replace(r, capability=f"{mode.name}: {r.capability}") for r in rows], device
    except MissingPiece:
        raise
    except Exception as e:  # noqa: BLE001 - any failure of the engine is this mode's ✗, with its line
        text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        return [Check(f"{mode.name}: built and stepped", False, f"{type(e).__name__}: {text}"[:300])], ""
    finally:
        if engine is not None:
            engine.shutdown()


def run_selftest(engine_name: str, profile: Profile | None = None, echo: Echo = lambda s: None) -> SelftestReport:
    """Check the adapter of ``engine_name`` on the installed build; a missing piece raises :class:`MissingPiece`."""
    adapter = engines.get(engine_name)
    if not adapter.installed():
        raise UsageError(f"{adapter.label} is not installed in this environment; install it (pip install "
                         f"'inproc[{adapter.name}]') or choose another --engine ({', '.join(engines.names())}).")
    if profile is not None and profile.engine != adapter.name:
        raise UsageError(f"The profile is for engine {profile.engine!r}, not {adapter.name!r}. Drop --engine or pass "
                         f"a {adapter.name} profile.")
    t0 = time.perf_counter()
    launch = tiny_launch(adapter, profile)
    # Engines read settings from the environment when first imported (SGLang: its CPU engine),
    # and the pieces check imports them: the launch's environment comes first, as in a build.
    os.environ.update(launch.env)
    adapter.quiet()
    rows = [pieces_check(adapter)]
    module = adapter.selftest_module()
    device = ""
    with tempfile.TemporaryDirectory(prefix="inproc-selftest-") as workdir:
        for mode in module.modes(launch):
            more, built_on = _mode_checks(adapter, mode, workdir, echo)
            rows += more
            device = device or built_on
    if profile is not None and profile.gpus and device == "CPU":  # a GPU profile's checks ran without its GPUs
        device = f"CPU: the tiny CPU variant of a {profile.gpus}-GPU profile (no CUDA device used here)"
    return SelftestReport(adapter.name, adapter.label, adapter.version(), module.commit(), device or "?", tuple(rows),
                          time.perf_counter() - t0)

"""``--kernels`` and ``--kernel-steps``: their defaults come from MatrixSettings (off in run and sweep, on in
cell), bad counts stop with one line and exit 2 before anything is built."""
from __future__ import annotations

import pytest

from inproc.cli.options import settings_with
from inproc.errors import UsageError
from inproc.plan.settings import MatrixSettings
from tests.conftest import DEFAULT_PROFILE
from tests.spawn import run_main

CELL = ["cell", str(DEFAULT_PROFILE), "--context", "256", "--concurrency", "1"]
RUN = ["run", str(DEFAULT_PROFILE), "--cells", "256x1"]


def test_the_settings_default_to_the_commands_choice_and_16_steps():
    m = MatrixSettings()
    assert m.kernels is None and m.kernel_steps == 16 and m.kernel_pass_steps == 0  # run: off
    assert settings_with(m, kernels=True).kernel_pass_steps == 16
    assert settings_with(m, kernels=True, kernel_steps=4).kernel_pass_steps == 4
    assert settings_with(m, kernels=False, kernel_steps=4).kernel_pass_steps == 0
    with pytest.raises(UsageError, match=r"Bad --kernel-steps 0: it must be a whole number of at least 1 step\."):
        settings_with(m, kernel_steps=0)


@pytest.mark.parametrize("args,needle", [
    (CELL + ["--kernel-steps", "0"], "Bad --kernel-steps 0: it must be a whole number of at least 1 step."),
    (RUN + ["--kernels", "--kernel-steps", "-3"], "Bad --kernel-steps -3: it must be a whole number of at least 1 step."),
    (CELL + ["--kernel-steps", "2.5"], "'2.5' is not a valid integer"),
    (CELL + ["--kernels", "maybe"], "'maybe' is not one of 'on', 'off'"),
])
def test_a_bad_kernel_pass_flag_is_one_line_exit_2_before_any_build(args, needle, tmp_path, capfd):
    out = tmp_path / "r.json"
    p = run_main(capfd, *args, "--out", str(out))
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2 and len(lines) == 1 and needle in lines[0], p.stderr
    assert "Traceback" not in p.stderr and not out.exists()


def test_a_sweep_refuses_a_bad_count_before_any_variant(tmp_path, capfd):
    out = tmp_path / "sweep"
    p = run_main(capfd, "sweep", str(DEFAULT_PROFILE), "--vary", "max-num-seqs=2,4", "--cells", "256x1",
                 "--kernel-steps", "0", "--out", str(out))
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2 and len(lines) == 1 and "Bad --kernel-steps 0" in lines[0], p.stderr
    assert not out.exists()

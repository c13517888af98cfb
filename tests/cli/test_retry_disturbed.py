"""``--retry-disturbed N`` on run, sweep and bisect: a bad count is one line and exit 2 before anything is built."""
from __future__ import annotations

import pytest

from inproc.cli.options import MAX_RETRY_DISTURBED, parse_retry_disturbed
from inproc.errors import UsageError
from tests.conftest import DEFAULT_PROFILE
from tests.spawn import run_main

RUN = ["run", str(DEFAULT_PROFILE), "--cells", "256x1", "--out"]
SWEEP = ["sweep", str(DEFAULT_PROFILE), "--vary", "max-num-seqs=2,4", "--cells", "256x1", "--out"]


def test_counts_from_0_to_the_maximum_are_taken():
    assert [parse_retry_disturbed(str(n)) for n in (0, 2, MAX_RETRY_DISTURBED)] == [0, 2, MAX_RETRY_DISTURBED]


@pytest.mark.parametrize("bad", ["-1", "2.5", "two", str(MAX_RETRY_DISTURBED + 1), ""])
def test_a_bad_count_names_itself_and_the_valid_ones(bad):
    with pytest.raises(UsageError, match=rf"Bad --retry-disturbed '{bad}': .* a whole number from 0 to "
                                         rf"{MAX_RETRY_DISTURBED}\."):
        parse_retry_disturbed(bad)


BISECT = ["bisect", str(DEFAULT_PROFILE), "--cell", "256x1", "--builds", "nowhere.txt", "--out"]


@pytest.mark.parametrize("command", [RUN, SWEEP, BISECT], ids=["run", "sweep", "bisect"])
def test_a_bad_count_is_one_line_exit_2_before_any_build(command, tmp_path, capfd):
    out = tmp_path / "out"
    p = run_main(capfd, *command, str(out), "--retry-disturbed", "-2")
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2 and len(lines) == 1 and "Bad --retry-disturbed '-2'" in lines[0], p.stderr
    assert "Traceback" not in p.stderr and not out.exists()

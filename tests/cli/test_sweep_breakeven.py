"""Where speculation pays, for real: a vLLM n-gram sweep on the CPU whose variants differ in measured acceptance
(one and three draft tokens, greedy), beside the profile with speculation removed.

Wrong code this catches: the variant without speculation still speculating (its record keeps the speculative
config, or it drafts), the curve reading the asked draft count instead of each record's measured acceptance, a
break-even file whose rows are not the report's, a chart missing.
"""
from __future__ import annotations

import json

import pytest

from inproc.record.io import load_results
from inproc.sweep.breakeven import VERDICTS
from inproc.sweep.manifest import DONE
from tests.conftest import DEFAULT_PROFILE, needs_vllm
from tests.spawn import run_inproc

pytestmark = pytest.mark.engine
NGRAM = DEFAULT_PROFILE.parent / "cpu-vllm-tiny-llama-ngram.toml"


@pytest.mark.long
@needs_vllm
def test_an_ngram_draft_count_sweep_finds_where_speculation_pays(tmp_path):
    out = tmp_path / "sweep"
    p = run_inproc("sweep", NGRAM, "--break-even", "--vary", "speculative-config.num_speculative_tokens=1,3",
                   "--temperature", "0", "--cells", "256x2", "--duration", "3", "--max-output", "512", "--no-loop-check",
                   "--kernels", "off", "--at", "2", "--out", out)
    assert p.returncode == 0, p.stderr[-3000:]
    s = json.loads((out / "sweep.json").read_text())
    assert s["plan"]["break_even"] and s["variants"][0]["status"] == DONE
    # A speculative variant may fail on a loaded machine (a step past the watchdog): it is data, named as left out.
    done = [v for v in s["variants"][1:] if v["status"] == DONE]
    assert done, [v["error"] for v in s["variants"]]
    base = load_results(out / s["variants"][0]["file"])
    assert "speculative-config" not in base.profile.engine_args and "!speculative-config" in base.profile.overrides
    assert base.decode[0].figures.spec_mean_acceptance_length is None  # no drafts: it did not speculate
    data = json.loads((out / "break-even.json").read_text())
    (cell,) = data["cells"]
    assert cell["verdict"] in VERDICTS and (cell["context"], cell["concurrency"]) == (256, 2)
    points = {q["name"]: q for q in cell["points"]}
    if "no speculation" in points:
        assert points["no speculation"]["total_tok_s"] == pytest.approx(base.decode[0].figures.total_tok_s)
    for v in done:
        e = load_results(out / v["file"]).decode[0]
        a, k = e.figures.spec_mean_acceptance_length, int(v["name"].rpartition("=")[2])
        assert a is None or 1 <= a <= k + 1 + 1e-9  # k draft tokens: at most k + 1 tokens per verify
        if v["name"] in points:  # on the curve: its x is the acceptance its own record measured
            assert points[v["name"]]["acceptance"] == pytest.approx(a)
        else:
            assert any(v["name"] in why for why in cell["left_out"])
    for v in s["variants"][1:]:
        if v["status"] != DONE:
            assert any(v["name"] in why for why in cell["left_out"])
    csv = (out / "break-even.csv").read_text().splitlines()
    assert len(csv) == 1 + len(cell["points"]) and all(row.split(",")[8] == cell["verdict"] for row in csv[1:])
    assert "## Where speculation pays" in (out / "sweep.md").read_text()
    html = run_inproc("report", out, "--format", "html").stdout
    assert "speculative ÷ no-speculation tok/s" in html and html.count("<svg") == 2

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
    assert [v["status"] for v in s["variants"]] == [DONE] * 3 and s["plan"]["break_even"]
    base, one, three = (load_results(out / v["file"]) for v in s["variants"])
    assert "speculative-config" not in base.profile.engine_args and "!speculative-config" in base.profile.overrides
    assert base.decode[0].figures.spec_mean_acceptance_length is None  # no drafts: it did not speculate
    measured = [r.decode[0].figures.spec_mean_acceptance_length for r in (one, three)]
    assert measured[0] is not None and 1 <= measured[0] <= 2 + 1e-9  # one draft token: at most 2 per verify
    assert measured[1] is None or 1 <= measured[1] <= 4 + 1e-9
    data = json.loads((out / "break-even.json").read_text())
    (cell,) = data["cells"]
    assert cell["verdict"] in VERDICTS and (cell["context"], cell["concurrency"]) == (256, 2)
    points = {q["name"]: q for q in cell["points"]}
    if not base.decode[0].disturbed:
        assert points["no speculation"]["total_tok_s"] == pytest.approx(base.decode[0].figures.total_tok_s)
    for rec, name, a in zip((one, three), ("speculative-config.num_speculative_tokens=1",
                                           "speculative-config.num_speculative_tokens=3"), measured):
        if name in points:  # on the curve: its x is the acceptance its own record measured
            assert points[name]["acceptance"] == pytest.approx(a)
    csv = (out / "break-even.csv").read_text().splitlines()
    assert len(csv) == 1 + len(cell["points"]) and all(row.split(",")[8] == cell["verdict"] for row in csv[1:])
    assert "## Where speculation pays" in (out / "sweep.md").read_text()
    html = run_inproc("report", out, "--format", "html").stdout
    assert "speculative ÷ no-speculation tok/s" in html and html.count("<svg") == 2

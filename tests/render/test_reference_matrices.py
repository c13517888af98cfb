"""The two published matrices (tests/fixtures/reference/*.json, docs/reference-matrices.md) against inproc:
the same grid and statuses as the launch profiles plan, the same columns and number formats in
the report, and Over capacity cells that one KV pool explains under the rule inproc records
beside its own (C × (L + M) tokens, ``reference_tokens_needed``)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from inproc.plan.capacity import check_cell
from inproc.profiles.spec import load_profile
from inproc.render import fmt
from inproc.render.measurements import COLUMNS
from inproc.types import EXCEEDS_MAX_LEN, LOOPED, OVER_CAPACITY, QUEUED, STATUSES, VALID, Capacity, KVCacheGroup
from inproc.units import format_tokens, parse_tokens

ROOT = Path(__file__).resolve().parents[2]
MATRICES = sorted((ROOT / "tests" / "fixtures" / "reference").glob("*.json"))
PUBLISHED_COLUMNS = ["Phase", "Context", "Requests at once", "Status", "Total tok/s", "Per request tok/s", "TTFT",
                     "Time between tokens", "Average active requests", "Completed requests", "Output tokens",
                     "Measured for"]


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def tokens(label: str) -> int:
    return parse_tokens(label.replace(",", ""))


def test_both_published_matrices_are_here():
    assert [p.stem for p in MATRICES] == ["sglang-deepseek-v4-flash-vision-h200x4", "vllm-deepseek-v4.1-flash-rtxpro6000x8"]


@pytest.mark.parametrize("path", MATRICES, ids=lambda p: p.stem)
def test_a_full_grid_with_inproc_statuses_and_reasons(path):
    m = load(path)
    grid = [(d["context"], d["concurrency"]) for d in m["decode"]]
    assert grid == [(L, C) for L in m["contexts"] for C in m["concurrency"]]  # row by row, every cell once
    assert [d["context"] for d in m["prefill"]] == m["prefill_contexts"]
    for d in m["decode"] + m["prefill"]:
        assert d["status"] in STATUSES and d["status"] not in (EXCEEDS_MAX_LEN,)
        assert d.get("reason", "") == m["legend"].get(d["status"], ""), d  # a status carries its reason
    for d in m["decode"]:
        has_figures = d["status"] in (VALID, QUEUED)
        assert ("total_tok_s" in d) is has_figures, d  # Looped and Over capacity show no headline figure


@pytest.mark.parametrize("path", MATRICES, ids=lambda p: p.stem)
def test_the_launch_profile_plans_the_same_matrix(path):
    m = load(path)
    plan = load_profile(ROOT / m["launch_profile"]).matrix
    assert [format_tokens(L) for L in plan.contexts] == m["contexts"]
    assert list(plan.concurrency) == m["concurrency"]
    assert [format_tokens(L) for L in plan.prefill_list] == m["prefill_contexts"]
    assert plan.window_s == float(m["window"].removesuffix(" s"))
    assert f"{plan.max_output:,} tokens" == m["max_output"]
    assert (ROOT / m["launch_command"]).exists()


@pytest.mark.parametrize("path", MATRICES, ids=lambda p: p.stem)
def test_inproc_prints_the_published_figures_as_published(path):
    """Each published figure, read as a number, comes back as the same text from inproc's formats."""
    m = load(path)
    assert [c.name for c in COLUMNS[: len(PUBLISHED_COLUMNS)]] == PUBLISHED_COLUMNS
    for d in m["prefill"]:
        assert fmt.tok_s(_tok_s(d["total_tok_s"])) == d["total_tok_s"], d
        assert fmt.ms(float(d["ttft"].removesuffix(" ms").replace(",", ""))) == d["ttft"]
        assert format_tokens(tokens(d["context"])) == d["context"]
    for d in (d for d in m["decode"] if "total_tok_s" in d):
        assert fmt.tok_s(_tok_s(d["total_tok_s"])) == d["total_tok_s"], d
        assert fmt.tok_s(_tok_s(d["per_request_tok_s"])) == d["per_request_tok_s"], d
        assert fmt.ms(float(d["ttft"].removesuffix(" ms").replace(",", ""))) == d["ttft"], d
        assert fmt.ms(float(d["tbt"].removesuffix(" ms")), 1) == d["tbt"], d
        assert fmt.num(int(d["output_tokens"].replace(",", ""))) == d["output_tokens"], d
        assert fmt.num(int(d["completed"])) == d["completed"], d
        assert fmt.secs(float(d["measured_for"].removesuffix(" s"))) == d["measured_for"], d
        # Output tokens over the window is the total rate (to the published rounding).
        rate = int(d["output_tokens"].replace(",", "")) / float(d["measured_for"].removesuffix(" s"))
        assert rate == pytest.approx(_tok_s(d["total_tok_s"]), rel=0.03), d


def _tok_s(text: str) -> float:
    return float(text[:-1]) * 1000 if text.endswith("K") else float(text.replace(",", ""))


@pytest.mark.parametrize("path", MATRICES, ids=lambda p: p.stem)
def test_one_kv_pool_explains_every_over_capacity_cell(path):
    """The published tool marks Over capacity by C × (L + M) against the server's KV pool. The
    pool is not published; the smallest that holds every cell that ran must refuse every cell
    marked Over capacity, as inproc's record of that rule (``reference_fits``) says."""
    m = load(path)
    max_output = int(m["max_output"].split()[0].replace(",", ""))
    ran = [d for d in m["decode"] if d["status"] != OVER_CAPACITY]
    refused = [d for d in m["decode"] if d["status"] == OVER_CAPACITY]
    assert refused and all(d["status"] in (VALID, QUEUED, LOOPED) for d in ran)
    pool = max(d["concurrency"] * (tokens(d["context"]) + max_output) for d in ran)
    capacity = Capacity(num_blocks=pool, block_size=1, kv_tokens=pool,
                        groups=(KVCacheGroup("full_attention", 1, 1),), max_num_seqs=256,
                        max_num_batched_tokens=None, max_model_len=tokens("1019K") + max_output)
    for d in m["decode"]:
        check = check_cell(capacity, tokens(d["context"]), d["concurrency"], max_output, "shared", 0)
        assert check.reference_fits is (d["status"] != OVER_CAPACITY), d

"""``--prompts FILE`` on a real vLLM cell: the engine prefilled exactly the context cut from the text, and the
header records where the ids came from (a tokenizer trained at test time, beside a copy of the tiny model).

Wrong code this catches: a prompt a token off the context (the engine's scheduled prefill tokens differ), the
header without the file's digest, format, tokenizer or the texts drawn, a reproduce command without --prompts.
"""
from __future__ import annotations

import hashlib

import numpy as np
import pytest

from inproc.record.io import load_results
from inproc.render.markdown import render_markdown
from tests.conftest import DEFAULT_PROFILE, needs_vllm
from tests.spawn import run_inproc
from tests.text_fixtures import PARAGRAPHS, model_with_tokenizer, write_prompt_files

pytestmark = pytest.mark.engine


@needs_vllm
def test_a_cell_with_text_prompts_prefills_the_exact_context_and_records_its_source(tmp_path):
    model = model_with_tokenizer(tmp_path)
    files = write_prompt_files(tmp_path)
    profile = tmp_path / "text.toml"
    profile.write_text(DEFAULT_PROFILE.read_text().replace('model = "models/tiny-llama"', f'model = "{model}"'))
    out = tmp_path / "cell.json"
    p = run_inproc("cell", profile, "--context", "256", "--concurrency", "2", "--prefill", "--duration", "0.5",
                   "--max-output", "16", "--seed", "5", "--kernels", "off", "--prompts", files["sharegpt"], "--out", out)
    assert p.returncode == 0, p.stderr[-3000:]
    rec = load_results(out)
    src = rec.plan.prompts
    assert src.sha256 == hashlib.sha256(files["sharegpt"].read_bytes()).hexdigest() and src.format == "sharegpt"
    assert src.tokenizer == str(model / "tokenizer.json") and src.texts == len(PARAGRAPHS)
    assert src.used and set(src.used) <= set(range(len(PARAGRAPHS))) and not src.eos_stops
    (prefill,) = rec.prefill
    for sample in prefill.samples:  # the engine's own count of the prompt tokens it prefilled, none cached
        assert int(np.sum(sample.steps.num_scheduled_tokens)) == 256
    (cell,) = rec.decode
    assert cell.figures.output_tokens > 0 and all(r.prompt_tokens == 256 for r in cell.trace.requests)
    assert f"--prompts {files['sharegpt']}" in cell.reproduce and "--seed 5" in cell.reproduce
    report = render_markdown(rec)
    assert "Prompt text" in report and src.sha256[:16] in report and "Stops at EOS" in report

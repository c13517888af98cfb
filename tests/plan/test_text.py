"""Prompts cut from real text: formats, exact lengths, the seed, ids equal to the tokenizer's, bad input.

A tokenizer is trained at test time on text the test writes (tests/text_fixtures.py). Wrong code each
test catches: ids with the tokenizer's special tokens or from another text than the one recorded; a
prompt one token short or long (cut or repeat off by one); a draw that ignores the seed or the key
(every request the same text); a format read wrongly (a JSON line read as text); bad input as a traceback.
"""
from __future__ import annotations

import hashlib

import numpy as np
import pytest

from inproc.errors import UsageError
from inproc.plan.prompts import CellPrompts, prefill_prompt
from inproc.plan.text import JSONL, SHAREGPT, TEXT, open_text, parse_texts, read_texts
from tests.conftest import DEFAULT_PROFILE
from tests.spawn import run_main
from tests.text_fixtures import PARAGRAPHS, model_with_tokenizer, train_tokenizer, write_prompt_files


@pytest.fixture
def corpus(tmp_path):
    model = model_with_tokenizer(tmp_path)
    return write_prompt_files(tmp_path), model


@pytest.mark.parametrize("fmt", [TEXT, JSONL, SHAREGPT])
def test_every_format_gives_its_texts_in_file_order(fmt, corpus):
    files, _ = corpus
    got, texts, digest = read_texts(str(files[fmt]))
    assert (got, texts) == (fmt, PARAGRAPHS)
    assert digest == hashlib.sha256(files[fmt].read_bytes()).hexdigest()


def test_json_lines_read_prompt_before_text_and_skip_lines_without_either():
    fmt, texts = parse_texts('{"prompt": "a b", "text": "no"}\n{"other": 1}\n{"text": "c d"}\n')
    assert (fmt, texts) == (JSONL, ["a b", "c d"])
    assert parse_texts('{not json\n\nsecond para')[0] == TEXT


def test_ids_are_the_tokenizers_ids_of_the_recorded_text_cut_or_repeated_to_the_exact_length(corpus):
    files, model = corpus
    text = open_text(str(files["text"]), None, str(model), 0).with_seed(7)
    tok = text.tokenizer
    for n in (1, 5, 17, 64, 257):
        ids = text.tokens(n, "cell", 256, 4, n)
        index, start = text.pick("cell", 256, 4, n)
        own = tok.encode(PARAGRAPHS[index], add_special_tokens=False).ids
        assert len(ids) == n and 0 <= start < len(own)
        assert ids == (own[start:] + own * (n // len(own) + 1))[:n]
    assert text.recorded().used == tuple(sorted(text.used)) and set(text.used) <= set(range(len(PARAGRAPHS)))
    assert text.source.tokenizer == str(model / "tokenizer.json") and text.source.texts == len(PARAGRAPHS)


def test_cells_get_exact_contexts_in_both_modes_and_the_seed_reproduces_them(corpus):
    files, model = corpus
    base = open_text(str(files["jsonl"]), None, str(model), 0)
    a, b, c = base.with_seed(1), base.with_seed(1), base.with_seed(2)
    for mode in ("shared", "distinct"):
        prompts = [CellPrompts(t, 300, 4, mode, 32) for t in (a, b, c)]
        reqs = [[p.request(i) for i in range(8)] for p in prompts]
        assert all(len(r) == 300 for r in reqs[0])
        assert reqs[0] == reqs[1] and reqs[0] != reqs[2]  # same seed same ids; another seed others
        # 8 requests from 6 texts (pigeonhole: two share a text): the drawn start still sets them apart from their
        # first tokens, so no request finds another's blocks in the prefix cache
        if mode == "distinct":
            assert len({tuple(r[:8]) for r in reqs[0]}) == 8
        else:
            assert len({tuple(r) for r in reqs[0]}) >= 6
        if mode == "shared":
            prefix = prompts[0].shared_prefix()
            assert all(r[:len(prefix)] == prefix for r in reqs[0]) and len(prefix) == 300 - 32
    assert len(prefill_prompt(a, 1000, 0, "shared", 32)) == 1000
    assert a.recorded().used == b.recorded().used


def test_a_tokenizer_larger_than_the_models_vocabulary_is_refused(corpus, tmp_path):
    files, _ = corpus
    text = open_text(str(files["text"]), str(train_tokenizer(tmp_path / "big", vocab_size=400)), None, 0)
    size = text.tokenizer.get_vocab_size()
    text.check_vocab(size)
    with pytest.raises(UsageError, match=f"has {size:,} ids but the model's vocabulary {size - 1:,}"):
        text.check_vocab(size - 1)


@pytest.mark.parametrize("make,needle", [
    (lambda d: d / "absent.txt", "no such file"),
    (lambda d: (d / "empty.txt").write_text("  \n") and d / "empty.txt", "is empty"),
    (lambda d: (d / "x.jsonl").write_text('{"q": "a"}\n') and d / "x.jsonl", "no line with a non-empty 'prompt' or 'text'"),
    (lambda d: (d / "s.json").write_text('[{"conversations": [{"from": "gpt", "value": "a"}]}]') and d / "s.json",
     "no conversation with a human turn"),
])
def test_bad_prompt_files_are_one_line_exit_2(make, needle, tmp_path, capfd):
    path = make(tmp_path)
    p = run_main(capfd, "run", str(DEFAULT_PROFILE), "--prompts", str(path), "--out", str(tmp_path / "r.json"))
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2 and len(lines) == 1 and needle in lines[0], p.stderr
    assert not (tmp_path / "r.json").exists()


def test_no_tokenizer_is_one_line_exit_2(corpus, tmp_path, capfd):
    files, _ = corpus
    out = tmp_path / "r.json"
    cases = [(["--prompts", str(files["text"])], "the model (", "has no tokenizer.json"),
             (["--prompts", str(files["text"]), "--tokenizer", str(tmp_path)], "holds no tokenizer.json", "--tokenizer PATH"),
             (["--tokenizer", str(tmp_path)], "give --prompts too", "")]
    for args, needle, also in cases:
        p = run_main(capfd, "cell", str(DEFAULT_PROFILE), "--context", "256", "--concurrency", "1", *args, "--out", str(out))
        lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
        assert p.returncode == 2 and len(lines) == 1 and needle in lines[0] and also in lines[0], p.stderr
    assert not out.exists()


def test_a_sweep_hands_every_variant_the_checked_file_and_tokenizer(corpus, tmp_path):
    from inproc.cli.sweep_cmd import _passed, _run_args
    from inproc.telemetry.sampler import DEFAULT_HZ

    files, model = corpus
    text = open_text(str(files["text"]), None, str(model), 0)
    args = _run_args(None, None, None, (), True, DEFAULT_HZ, _passed({}, 0, text))
    assert args[args.index("--prompts") + 1] == str(files["text"].resolve())
    assert args[args.index("--tokenizer") + 1] == str(model / "tokenizer.json")
    assert "--prompts" not in _run_args(None, None, None, (), True, DEFAULT_HZ, _passed({}, 0, None))

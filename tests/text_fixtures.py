"""A tokenizer trained at test time on text the test writes, saved beside a copy of the tiny model (no hub)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import DEFAULT_PROFILE

MODEL = DEFAULT_PROFILE.parent / "models" / "tiny-llama"
PARAGRAPHS = [
    "The engine schedules every request in flight and verifies the drafted tokens in one step.",
    "Speculative decoding pays when the drafts are accepted often enough to cover the cost of verifying them.",
    "A cell measures sustained decode at one context length and one concurrency level over a fixed window.",
    "Short.",
    "Prefix caching keeps the shared context of a row so that the cells after the first start warm.",
    "The n-gram proposer looks up earlier tokens of the same sequence and proposes what followed them there.",
]


def train_tokenizer(folder: Path, vocab_size: int = 300) -> Path:
    """A BPE ``tokenizer.json`` trained on :data:`PARAGRAPHS`, written into ``folder``."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(PARAGRAPHS * 4, trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["[UNK]"]))
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    return folder / "tokenizer.json"


def model_with_tokenizer(tmp: Path) -> Path:
    """A copy of the tiny model's folder with a trained tokenizer beside its config."""
    folder = tmp / "tiny-llama-text"
    shutil.copytree(MODEL, folder)
    train_tokenizer(folder)
    return folder


def write_prompt_files(tmp: Path) -> dict[str, Path]:
    """The same paragraphs as plain text, JSON lines (prompt and text fields) and ShareGPT JSON."""
    files = {"text": tmp / "prompts.txt", "jsonl": tmp / "prompts.jsonl", "sharegpt": tmp / "sharegpt.json"}
    files["text"].write_text("\n\n".join(PARAGRAPHS) + "\n")
    files["jsonl"].write_text("\n".join(json.dumps({"prompt" if i % 2 else "text": p, "id": i})
                                        for i, p in enumerate(PARAGRAPHS)) + "\n")
    files["sharegpt"].write_text(json.dumps([{"id": str(i), "conversations": [{"from": "human", "value": p},
                                                                             {"from": "gpt", "value": "ok"}]}
                                             for i, p in enumerate(PARAGRAPHS)]))
    return files

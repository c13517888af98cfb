"""Prompts cut from real text (``--prompts FILE``): the file read, its texts tokenized, ids drawn by seed.

A file is plain text (texts are its paragraphs, split at blank lines), JSON lines with a ``prompt``
or ``text`` string on each line, or ShareGPT JSON (a list of ``{"conversations": [{"from", "value"}]}``:
each conversation's first human turn). The format is read from the content: a JSON array is ShareGPT,
lines that are all JSON objects are JSON lines, anything else plain text.

Texts are tokenized by a Hugging Face ``tokenizer.json`` (the ``tokenizers`` package, which every
engine installs) without special tokens, so a prompt's ids are exactly the text's ids. The draw
mirrors the synthetic prompts (``inproc.plan.prompts``): each key (prefill sample, cell context,
request) mixed with the run's seed picks one text and a start in it; its ids from there are cut, or
the text repeated end to end, to the length asked; the same file, tokenizer and seed give the same ids.
"""
from __future__ import annotations

import hashlib
import json
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from inproc.errors import UsageError

TEXT, JSONL, SHAREGPT = "text", "jsonl", "sharegpt"
FIELDS = ("prompt", "text")  # the JSON-lines fields read, in this order
HUMAN = ("human", "user")  # ShareGPT's speaker names for the prompt side
TOKENIZER_FILE = "tokenizer.json"


@dataclass(frozen=True)
class TextSource:
    """What a run's text prompts came from, as recorded in its header (``plan.prompts``)."""

    file: str
    sha256: str
    format: str
    tokenizer: str  # the tokenizer.json read
    texts: int  # usable texts in the file
    used: tuple[int, ...] = ()  # the texts prompts were cut from: their numbers in the file's order, from 0
    eos_stops: bool = False  # requests may end at the model's end-of-sequence token (never: EOS is ignored)


def _sharegpt(data: object) -> list[str]:
    texts = []
    for item in data if isinstance(data, list) else []:
        turns = item.get("conversations") if isinstance(item, dict) else None
        first = next((t.get("value") for t in turns or () if isinstance(t, dict) and t.get("from") in HUMAN), None)
        if isinstance(first, str) and first.strip():
            texts.append(first)
    return texts


def _json_lines(lines: list[str]) -> list[str] | None:
    """The texts of JSON lines, or None when the lines are not all JSON objects."""
    rows = []
    for line in lines:
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            return None
        if not isinstance(row, dict):
            return None
        rows.append(row)
    return [v for row in rows for v in [next((row[f] for f in FIELDS if isinstance(row.get(f), str)), "")] if v.strip()]


def parse_texts(content: str) -> tuple[str, list[str]]:
    """(the format, its texts in file order) of a prompts file's content; texts of whitespace are dropped."""
    stripped = content.strip()
    if stripped.startswith("["):
        try:
            return SHAREGPT, _sharegpt(json.loads(stripped))
        except json.JSONDecodeError:
            pass
    lines = [ln for ln in stripped.splitlines() if ln.strip()]
    if lines and lines[0].lstrip().startswith("{"):
        texts = _json_lines(lines)
        if texts is not None:
            return JSONL, texts
    return TEXT, [p.strip() for p in stripped.replace("\r\n", "\n").split("\n\n") if p.strip()]


def read_texts(path: str) -> tuple[str, list[str], str]:
    """(format, texts, sha256) of ``--prompts FILE``; a missing, empty or unusable file is one line."""
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"--prompts {path!r}: no such file. Give a plain text file, JSON lines with a 'prompt' or "
                         "'text' field, or ShareGPT JSON.")
    raw = p.read_bytes()
    try:
        content = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UsageError(f"--prompts {path!r} is not UTF-8 text (byte {e.start}). Give a plain text, JSON lines or "
                         "ShareGPT JSON file.") from None
    if not content.strip():
        raise UsageError(f"--prompts {path!r} is empty. Give a file with text in it.")
    fmt, texts = parse_texts(content)
    if not texts:
        what = {SHAREGPT: "no conversation with a human turn ({'from': 'human', 'value': ...})",
                JSONL: f"no line with a non-empty {' or '.join(repr(f) for f in FIELDS)} field"}.get(fmt, "no text")
        raise UsageError(f"--prompts {path!r} ({fmt}): {what}. Give prompts as plain text, JSON lines with a "
                         "'prompt' or 'text' field, or ShareGPT JSON.")
    return fmt, texts, hashlib.sha256(raw).hexdigest()


def tokenizer_file(where: str) -> Path | None:
    """The ``tokenizer.json`` at ``where`` (the file, or a folder holding one), or None."""
    p = Path(where)
    f = p / TOKENIZER_FILE if p.is_dir() else p
    return f if f.is_file() else None


def load_tokenizer(path: Path):
    """A ``tokenizers.Tokenizer`` from ``path``; one line when the package or the file cannot serve."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise UsageError("--prompts needs the 'tokenizers' package (every engine installs it; or "
                         "pip install 'inproc[prompts]').") from None
    try:
        return Tokenizer.from_file(str(path))
    except Exception as e:  # noqa: BLE001 - the library raises its own Exception for a bad file
        raise UsageError(f"--tokenizer {str(path)!r} is not a tokenizer.json the tokenizers package can read "
                         f"({str(e).splitlines()[0][:120]}).") from None


@dataclass
class TextPrompts:
    """Draws prompts from the texts of one file for one run; keeps which texts it drew (``used``)."""

    source: TextSource
    texts: list[str]
    tokenizer: object
    seed: int
    used: set[int] = field(default_factory=set)
    _ids: dict[int, np.ndarray] = field(default_factory=dict)

    def ids_of(self, index: int) -> np.ndarray:
        """Text ``index``'s ids, as the tokenizer gives them without special tokens (encoded once)."""
        if index not in self._ids:
            self._ids[index] = np.asarray(self.tokenizer.encode(self.texts[index], add_special_tokens=False).ids,
                                          dtype=np.int64)
        return self._ids[index]

    def pick(self, *key: object) -> tuple[int, int]:
        """(the text drawn for ``key``, the id its cut starts at): the same key and seed always draw the same.

        The start is drawn too, so two requests that draw one text (few texts, many requests) still
        differ from their first token: a distinct-mode request never finds another's blocks in the
        prefix cache, as with synthetic ids.
        """
        words = [self.seed & 0xFFFFFFFF] + [zlib.crc32(repr(k).encode()) for k in key]
        rng = np.random.default_rng(np.random.SeedSequence(words))
        for _ in range(64):  # a text that tokenizes to nothing is drawn past
            index = int(rng.integers(len(self.texts)))
            size = self.ids_of(index).size
            if size:
                return index, int(rng.integers(size))
        raise UsageError(f"--prompts {self.source.file!r}: the texts drawn tokenize to no ids with {self.source.tokenizer}.")

    def tokens(self, n: int, *key: object) -> list[int]:
        """``n`` ids of the text drawn for ``key``, from its drawn start to its end and on from its beginning
        again (the text repeated end to end) until there are ``n``."""
        index, start = self.pick(*key)
        self.used.add(index)
        return np.resize(np.roll(self.ids_of(index), -start), n).tolist()

    def with_seed(self, seed: int) -> "TextPrompts":
        """The same texts and tokenizer drawn by ``seed`` (the run's), nothing drawn yet."""
        return TextPrompts(self.source, self.texts, self.tokenizer, seed)

    def check_vocab(self, vocab_size: int) -> None:
        """The tokenizer's ids fit the model's vocabulary (else the engine would reject every prompt): one line."""
        size = int(self.tokenizer.get_vocab_size(with_added_tokens=True))
        if size > vocab_size:
            raise UsageError(f"--prompts: the tokenizer {self.source.tokenizer} has {size:,} ids but the model's vocabulary "
                             f"{vocab_size:,}. Give the model's own tokenizer with --tokenizer PATH.")

    def recorded(self) -> TextSource:
        """The source with the texts drawn so far."""
        return TextSource(**{**self.source.__dict__, "used": tuple(sorted(self.used))})

    def max_id(self) -> int:
        """The largest id of the texts tokenized so far (checked against the model's vocabulary)."""
        return max((int(a.max()) for a in self._ids.values() if a.size), default=-1)


def open_text(prompts: str, tokenizer: str | None, model_tokenizer: str | None, seed: int) -> TextPrompts:
    """The file read and the tokenizer found: ``--tokenizer`` when given, else the model's own (``model_tokenizer``:
    its tokenizer argument or model folder); no tokenizer is one line, before any engine is built."""
    fmt, texts, digest = read_texts(prompts)
    where = tokenizer or model_tokenizer
    found = tokenizer_file(where) if where else None
    if found is None:
        said = f"--tokenizer {tokenizer!r} holds no {TOKENIZER_FILE}" if tokenizer else (
            f"the model ({model_tokenizer}) has no {TOKENIZER_FILE}" if model_tokenizer else "the model names no tokenizer")
        raise UsageError(f"--prompts needs a tokenizer: {said}. Give --tokenizer PATH (a {TOKENIZER_FILE}, or a folder "
                         "with one), e.g. the model's own from its Hugging Face folder.")
    source = TextSource(str(Path(prompts).resolve()), digest, fmt, str(found.resolve()), len(texts))
    return TextPrompts(source, texts, load_tokenizer(found), seed)

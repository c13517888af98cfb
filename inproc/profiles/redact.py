"""Credentials are never written into a profile: what looks like one, and how to blank it."""
from __future__ import annotations

import re

REDACTED = "<redacted>"

# Flag or field names that carry a credential: api-key, admin-api-key, hf-token, ...-password.
# Whole words only, so max-num-batched-tokens and skip-tokenizer-init are not caught.
_SECRET_NAME = re.compile(r"(^|[-_])(api[-_]?key|token|secret|password|passwd|credentials?|auth)($|[-_])", re.I)
# Environment variable names: HF_TOKEN, OPENAI_API_KEY, AWS_SECRET_ACCESS_KEY, AWS_ACCESS_KEY_ID ...
_SECRET_ENV = re.compile(
    r"(^|_)(TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|AUTH|API_?KEY|ACCESS_KEY|PRIVATE_KEY)(_|$)", re.I
)
# Values shaped like well-known tokens (Hugging Face, OpenAI, GitHub, Slack, AWS, JWT).
_SECRET_VALUE = re.compile(
    r"\b(hf_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9_-]{20,}|gh[opsu]_[A-Za-z0-9]{20,}|xox[abp]-[A-Za-z0-9-]{10,}"
    r"|AKIA[0-9A-Z]{16}|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,})"
)
# user:password@ in a URL, and token-like query parameters.
_URL_USERINFO = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<info>[^/@\s]+)@", re.I)
_URL_QUERY = re.compile(r"(?P<key>[?&](?:token|access_token|api_key|apikey|key|sig|signature|password)=)[^&#\s\"'}\]]+", re.I)


def is_secret_name(name: str) -> bool:
    """True for flag/field names that hold a credential (``api-key``, ``hf_token``)."""
    return bool(_SECRET_NAME.search(name))


def is_secret_env(name: str, value: str = "") -> bool:
    """True for environment variables that look like credentials, by name or by value."""
    return bool(_SECRET_ENV.search(name) or _SECRET_VALUE.search(value))


def scrub_text(text: str) -> str:
    """Blank tokens inside a string: URL user info, token query parameters, known token shapes."""
    text = _URL_USERINFO.sub(lambda m: m.group("scheme") + REDACTED + "@", text)
    text = _URL_QUERY.sub(lambda m: m.group("key") + REDACTED, text)
    return _SECRET_VALUE.sub(REDACTED, text)


def scrub_value(value: object) -> tuple[object, bool]:
    """(value with credentials blanked, whether anything was blanked); recurses into tables/lists.

    Table keys that name a credential lose their value entirely.
    """
    if isinstance(value, str):
        clean = scrub_text(value)
        return clean, clean != value
    if isinstance(value, dict):
        out, changed = {}, False
        for k, v in value.items():
            if isinstance(k, str) and is_secret_name(k) and isinstance(v, str):
                changed = True
                continue
            out[k], c = scrub_value(v)
            changed |= c
        return out, changed
    if isinstance(value, list):
        pairs = [scrub_value(v) for v in value]
        return [p[0] for p in pairs], any(p[1] for p in pairs)
    return value, False

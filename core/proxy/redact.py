"""Secrets out of everything `ctxtui proxy` shows or writes: recordings, `--headless` lines, the live view, errors.

A request's credentials (its x-api-key, authorization and cookie values, core/proxy/http.py) can come
back anywhere: a prompt that quotes the key, an upstream error that echoes the bearer token. So every
text that enters the watch's model from a body or an upstream passes through a `Redactor` first, and
the recorder passes each line through it again. Besides the request's own values, anything shaped
like a key (`sk-ant-...`, `sk-...`, a bearer token) is replaced too: a key of another client, or one
an upstream made up, is no less a secret.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

REDACTED = "[redacted]"
# Anthropic keys and OAuth tokens (sk-ant-api03-..., sk-ant-oat01-...), other sk- keys, and bearer tokens.
_KEY_SHAPED = re.compile(
    r"(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{8,}"
    r"|(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{20,}"
    r"|(?i:(?<=\bbearer )[A-Za-z0-9._~+/=-]{8,})"
)


class Redactor:
    """Replaces the given secret values, as they are and as JSON escapes them, and key-shaped text."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        variants: set[str] = set()
        for secret in secrets:
            if secret:
                variants.add(secret)
                variants.add(json.dumps(secret, ensure_ascii=False)[1:-1])
                variants.add(json.dumps(secret)[1:-1])
        self._secrets = sorted(variants, key=len, reverse=True)  # longest first: no part of one survives

    def text(self, text: str) -> str:
        """`text` with every secret and key-shaped word replaced by "[redacted]"."""
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        if "sk-" in text or "earer " in text or "EARER " in text:  # the pattern's cheap pre-check
            text = _KEY_SHAPED.sub(REDACTED, text)
        return text

    def value(self, value: Any) -> Any:
        """A parsed JSON value with every string (keys too) redacted; parts without a secret are the same
        objects, so a clean request costs a walk and no copy."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            items = [self.value(item) for item in value]
            return value if all(new is old for new, old in zip(items, value, strict=True)) else items
        if isinstance(value, dict):
            pairs = [
                (self.text(key) if isinstance(key, str) else key, self.value(item))
                for key, item in value.items()
            ]
            if all(
                new_key is key and new is item
                for (new_key, new), (key, item) in zip(pairs, value.items(), strict=True)
            ):
                return value
            return dict(pairs)
        return value


NO_SECRETS = Redactor()  # key-shaped text only: for what belongs to no request (the proxy's own notices)

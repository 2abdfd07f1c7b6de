"""Secret values out of what an HTTP request brings back: a response an API built from what it was sent (an echo, an
error page quoting the URL) may hold a credential raw, percent-encoded (``%2B`` or ``%2b``, a space as ``+``),
JSON-escaped (``\\"``, ``\\/``, ``\\u00e9``) or in any mix of these. ``SecretRedactor`` finds each of those spellings.

Cutting happens on the original text, and a secret that crosses the cut goes whole: a reflected argument that
moves the cut must not leave the first characters of a key behind.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

SECRET = "[secret]"
# Values shorter than this are not searched for: "abc" would blank out ordinary words.
MIN_SECRET_CHARS = 4
# The longest spelling of one character: four UTF-8 bytes percent-encoded, or a JSON surrogate pair (12 chars).
MAX_CHAR_SPELLING = 12
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_JSON_SHORT = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _hex_insensitive(spelling: str) -> str:
    # Only hex digits differ in case between encoders (%2B and %2b, \u00E9 and \u00e9); letters of the secret do not.
    return "".join(f"[{c.lower()}{c.upper()}]" if c in "abcdefABCDEF" else re.escape(c) for c in spelling)


@functools.lru_cache(maxsize=1024)
def _character(c: str) -> str:
    """A pattern of every spelling of ``c`` the platform's own encoders, or an API reflecting them, produce."""
    if c in _UNRESERVED:
        # No URL or JSON encoder rewrites these (RFC 3986 §2.3; JSON escapes only quotes, backslashes, controls and,
        # optionally, "/" and non-ASCII): a run of them stays a literal, which keeps the pattern quick to compile.
        return re.escape(c)
    spellings = {re.escape(c)}
    encoded = c.encode("utf-8", "surrogatepass")
    spellings.add(_hex_insensitive("".join(f"%{b:02X}" for b in encoded)))
    if c in (" ", "+"):
        # A space is "+" in a form-encoded query, and a "+" sent raw is read back as a space.
        spellings |= {re.escape("+"), re.escape(" ")}
    if c in _JSON_SHORT:
        spellings.add(re.escape(_JSON_SHORT[c]))
    units = c.encode("utf-16-be", "surrogatepass")
    spellings.add(_hex_insensitive("".join(f"\\u{units[i]:02X}{units[i + 1]:02X}" for i in range(0, len(units), 2))))
    return "(?:" + "|".join(sorted(spellings, key=len, reverse=True)) + ")"


class SecretRedactor:
    """Replaces every spelling of the given secret values by ``[secret]``. Made per call; its compiled pattern is
    also kept by the ``re`` module's own bounded cache of this process (as the values are by the process that
    decrypted them), so a secret's pattern is compiled once per process (about 1 ms), not once per call."""

    def __init__(self, values: list[str]) -> None:
        kept = sorted({v for v in values if len(v) >= MIN_SECRET_CHARS}, key=len, reverse=True)
        self._pattern = re.compile("|".join("".join(map(_character, v)) for v in kept)) if kept else None
        # How far past a cut a secret that starts before it can reach, in any spelling.
        self.reach = MAX_CHAR_SPELLING * max((len(v) for v in kept), default=0)

    def text(self, text: str) -> str:
        """``text`` with every spelling of every secret replaced."""
        return text if self._pattern is None else self._pattern.sub(SECRET, text)

    def prefix(self, text: str, chars: int) -> str:
        """The first ``chars`` characters of ``text`` (counted in ``text`` itself), redacted; a secret that starts
        before the cut is replaced whole. ``text`` must run at least ``reach`` characters past the cut (or be the
        whole of what there is) for a secret crossing it to be recognised."""
        if self._pattern is None:
            return text[:chars]
        kept: list[str] = []
        last = 0
        for found in self._pattern.finditer(text):
            if found.start() >= chars:
                break
            kept += [text[last : found.start()], SECRET]
            last = found.end()
        if last < chars:
            kept.append(text[last:chars])
        return "".join(kept)

    def value(self, value: Any) -> Any:
        """A parsed JSON value with every string (keys too) redacted; a number that spells a secret becomes
        ``[secret]``."""
        if self._pattern is None:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(str(k)): self.value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, int | float) and not isinstance(value, bool):
            return SECRET if self._pattern.search(json.dumps(value)) else value
        return value

"""What of a call's arguments may be kept (the activity log, the console's run history): fields a tool's input
schema marks ``writeOnly`` and fields named like secrets are replaced, and an oversized whole by its size."""

from __future__ import annotations

import json
import re
from typing import Any

REDACTED = "[redacted]"
# Stored arguments beyond this (as JSON) are replaced by a note with their size: the log is not a data store.
MAX_ARGUMENT_BYTES = 16 * 1024
# Names compared with case, "-" and "_" removed; a name ending in one of these is a secret ("access_token",
# "x-api-key", "client_secret"), as is one starting with password or secret.
_SECRET_ENDINGS = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "apikey",
    "authorization",
    "credential",
    "credentials",
    "privatekey",
    "accesskey",
    "cookie",
)
_SECRET_STARTS = ("password", "secret")
_SEPARATORS = re.compile(r"[-_\s]")


def is_secret_name(name: str) -> bool:
    key = _SEPARATORS.sub("", name).lower()
    return key.endswith(_SECRET_ENDINGS) or key.startswith(_SECRET_STARTS)


def redact(value: Any, schema: Any = None) -> Any:
    """``value`` with what ``schema`` (a JSON Schema, or None) marks ``writeOnly`` and secret-named fields
    replaced by ``REDACTED``, at any depth."""
    schema = schema if isinstance(schema, dict) else {}
    if schema.get("writeOnly") is True:
        return REDACTED
    if isinstance(value, dict):
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        extra = schema.get("additionalProperties")
        return {
            key: REDACTED if is_secret_name(str(key)) else redact(item, properties.get(key, extra))
            for key, item in value.items()
        }
    if isinstance(value, list):
        items = schema.get("items")
        return [redact(item, items) for item in value]
    return value


def arguments_to_keep(arguments: dict[str, Any] | None, schema: Any) -> dict[str, Any] | None:
    """The redacted ``arguments`` as stored, or a note of their size when they are too large."""
    if arguments is None:
        return None
    kept = redact(arguments, schema)
    size = len(json.dumps(kept, default=str))
    if size > MAX_ARGUMENT_BYTES:
        return {"_omitted": f"{size} bytes of arguments (over {MAX_ARGUMENT_BYTES})"}
    return kept

"""Which strings a server could ever have issued as a name, URI, id or cursor key: none holds U+0000 or a lone
surrogate, which no database text column (and no UTF-8) can hold. Such a string is looked up nowhere: the thing
it names does not exist."""

from __future__ import annotations


def storable(text: str) -> bool:
    """Whether ``text`` could be stored and so could name something that exists."""
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def json_storable(value: object) -> bool:
    """Whether every string (keys included) in the JSON ``value`` is ``storable``: a JSON column refuses U+0000."""
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, dict):
        return all(storable(key) and json_storable(item) for key, item in value.items())
    if isinstance(value, list):
        return all(json_storable(item) for item in value)
    return True

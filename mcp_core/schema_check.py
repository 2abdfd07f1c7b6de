"""Checking values against JSON Schemas (tool arguments and outputs): jsonschema-rs decides, the Python
``jsonschema`` library explains, and neither ever fetches a ``$ref`` over the network.

A schema comes from a tenant's admin, an imported OpenAPI document or an upstream MCP server: a remote ``$ref`` in
it must not make the platform send a request (the Python library's default still fetches one with ``urllib``,
past the platform's outbound policy). Both validators resolve only what the schema holds and the JSON Schema
meta-schemas they bundle; any other reference makes the schema unusable, reported as the tool's error.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import jsonschema_rs
import orjson
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from jsonschema_specifications import REGISTRY as META_SCHEMAS
from referencing.exceptions import Unresolvable

TOO_DEEP = "(root): the value is nested too deeply to check"


def offline_validator(schema: Any) -> Draft202012Validator:
    """The Python library's validator for ``schema`` that resolves no reference outside it (and the bundled
    meta-schemas): iterating its errors raises ``referencing.exceptions.Unresolvable`` instead of fetching."""
    return Draft202012Validator(schema, registry=META_SCHEMAS)


@dataclass(frozen=True)
class SchemaCheck:
    """A schema compiled for both jobs: jsonschema-rs decides whether a value conforms (well under a microsecond
    for a typical tool's arguments, against about ten for the Python library), and the Python library explains a
    rejection in the words clients have always seen.

    jsonschema-rs reads ``pattern`` as ECMA-262, as JSON Schema asks, where the Python library uses ``re``: ``$``
    does not match before a final newline and ``\\d`` is ASCII only. Where the Python library finds nothing to
    explain, jsonschema-rs's own messages are used. ``fast`` is None when jsonschema-rs cannot compile the schema;
    then the Python library alone decides, as it does for values that are not JSON data (a tool's structured
    output holding a date, say). ``explain`` is None when the schema itself is unusable, and ``problem`` says why.
    """

    explain: Draft202012Validator | None
    fast: Any = None
    problem: str = ""

    def errors(self, instance: Any) -> list[str]:
        """Why ``instance`` does not conform, as ``<path>: <message>`` lines in path order; empty when it does."""
        if self.explain is None:
            return [f"the tool's schema is invalid: {self.problem}"]
        verdict = self._fast_verdict(instance)
        if verdict:
            return []
        try:
            messages = _messages((error.absolute_path, error.message) for error in self.explain.iter_errors(instance))
        except Unresolvable as exc:
            return [f"the tool's schema is invalid: {_unresolvable(exc)}"]
        except RecursionError:
            # A recursive schema walks a value as deep as it goes; JSON decoding allows about a thousand levels.
            return [TOO_DEEP]
        if messages or verdict is None:
            return messages
        return _messages((error.instance_path, error.message) for error in self.fast.iter_errors(instance))

    def _fast_verdict(self, instance: Any) -> bool | None:
        if self.fast is None:
            return None
        try:
            return bool(self.fast.is_valid(instance))
        except ValueError:  # not JSON data: jsonschema-rs takes only what JSON decodes to
            return None


def _messages(errors: Iterable[tuple[Iterable[str | int], str]]) -> list[str]:
    located = sorted(((list(path), message) for path, message in errors), key=lambda item: item[0])
    return [f"{'/'.join(str(p) for p in path) or '(root)'}: {message}" for path, message in located]


def _unresolvable(exc: Unresolvable) -> str:
    return f"it refers to {exc.ref!r}, which is not part of it (references are never fetched)"


def compiled_schema(schema: Any) -> SchemaCheck:
    """The check for ``schema``, shared by every definition with the same schema (keyed by its sorted JSON)."""
    try:
        key = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
    except TypeError as exc:  # orjson encodes at most 255 levels (or the schema is not JSON data)
        return SchemaCheck(explain=None, problem=f"it cannot be read as JSON ({exc})")
    return _compiled(key)


@lru_cache(maxsize=1024)
def _compiled(schema_json: bytes) -> SchemaCheck:
    schema = orjson.loads(schema_json)
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return SchemaCheck(explain=None, problem=exc.message)
    except RecursionError:
        return SchemaCheck(explain=None, problem="it is nested too deeply to check")
    try:
        fast = jsonschema_rs.Draft202012Validator(schema, offline=True)
    except ValueError:  # jsonschema_rs.ValidationError: a reference it cannot resolve offline, or a bad pattern
        fast = None
    return SchemaCheck(explain=offline_validator(schema), fast=fast)

"""Reading an OpenAPI document: bytes (JSON or YAML) to a checked OpenAPI 3.0 or 3.1 mapping.

Structure is checked against the official OpenAPI JSON Schemas that ``openapi-spec-validator`` ships (run by
``jsonschema-rs``: GitHub's 1,200-operation document takes milliseconds). Errors say where: a line and column
for syntax, a path (and the line, when it can be found) for structure.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml
from openapi_spec_validator.schemas import openapi_v30_schema_validator, openapi_v31_schema_validator

JSONObject = dict[str, Any]

MAX_DOCUMENT_BYTES = 16 * 1024 * 1024
MAX_REPORTED_ERRORS = 5
# How many times over its distinct values a YAML document's aliases may repeat them.
MAX_EXPANSION = 10
_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class OpenApiError(ValueError):
    """A document that cannot be imported; the message says why and where."""


@dataclass(frozen=True)
class OpenApiDocument:
    data: JSONObject
    version: str  # "3.0" or "3.1"
    location: str
    sha256: str

    @property
    def openapi_30(self) -> bool:
        return self.version == "3.0"

    @property
    def title(self) -> str:
        info = self.data.get("info")
        return str(info.get("title", "")) if isinstance(info, dict) else ""


def document_parse(content: bytes, *, location: str, max_bytes: int = MAX_DOCUMENT_BYTES) -> OpenApiDocument:
    """Parse and check ``content`` read from ``location``. Raises ``OpenApiError``."""
    if len(content) > max_bytes:
        raise OpenApiError(f"{location}: the document is {len(content)} bytes; the limit is {max_bytes}")
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise OpenApiError(f"{location}: the document is not UTF-8 (byte {exc.start})") from None
    data = _load(text, location)
    version = _version(data, location)
    problems = list(_structure_problems(data, text, version))
    if problems:
        raise OpenApiError(f"{location} is not a valid OpenAPI {version} document:\n" + "\n".join(problems))
    return OpenApiDocument(data, version, location, hashlib.sha256(content).hexdigest())


def _load(text: str, location: str) -> JSONObject:
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            data = json.loads(text)
        except RecursionError:
            raise OpenApiError(f"{location}: the document is nested too deeply") from None
        except json.JSONDecodeError as exc:
            raise OpenApiError(
                f"{location}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            ) from None
    else:
        try:
            loaded = yaml.load(text, Loader=_YAML_LOADER)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
            problem = getattr(exc, "problem", None) or str(exc)
            raise OpenApiError(f"{location}: not valid YAML{at}: {problem}") from None
        _check_expansion(loaded, location)
        # YAML gives integer keys (response codes) and dates; the OpenAPI schemas speak JSON.
        data = json.loads(json.dumps(loaded, default=str))
    if not isinstance(data, dict):
        raise OpenApiError(f"{location}: an OpenAPI document is a JSON or YAML object")
    return data


def _check_expansion(loaded: Any, location: str) -> None:
    """Refuse YAML whose aliases make it a cycle or expand it far beyond its size ("billion laughs"): the JSON
    round trip below would copy every alias."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()

    def size(node: Any) -> int:
        if not isinstance(node, dict | list):
            return 1
        key = id(node)
        if key in on_path:
            raise OpenApiError(f"{location}: the YAML refers to itself through an alias")
        if key not in sizes:
            on_path.add(key)
            children = node.values() if isinstance(node, dict) else node
            sizes[key] = 1 + sum(size(child) for child in children)
            on_path.discard(key)
        return sizes[key]

    try:
        expanded = size(loaded)
    except RecursionError:
        raise OpenApiError(f"{location}: the document is nested too deeply") from None
    if expanded > MAX_EXPANSION * (len(sizes) + 1) + 100_000:
        raise OpenApiError(f"{location}: the YAML's aliases expand it to {expanded} values; refused")


def _version(data: JSONObject, location: str) -> str:
    if "swagger" in data:
        raise OpenApiError(f"{location}: Swagger {data['swagger']} documents are not supported; convert to OpenAPI 3")
    declared = data.get("openapi")
    if not isinstance(declared, str):
        raise OpenApiError(f'{location}: the document has no "openapi" version field')
    for version in ("3.0", "3.1"):
        if declared == version or declared.startswith(version + "."):
            return version
    raise OpenApiError(f"{location}: OpenAPI {declared} is not supported (3.0 and 3.1 are)")


def _structure_problems(data: JSONObject, text: str, version: str) -> Iterator[str]:
    validator = openapi_v30_schema_validator if version == "3.0" else openapi_v31_schema_validator
    lines: dict[tuple[str, ...], int] | None = None
    for count, error in enumerate(validator.iter_errors(data)):
        if count == MAX_REPORTED_ERRORS:
            yield "(more problems not shown)"
            return
        path = tuple(str(part) for part in error.absolute_path)
        if lines is None:
            lines = _line_index(text)
        line = _nearest_line(lines, path)
        where = ".".join(path) or "the document root"
        at = f" (line {line})" if line is not None else ""
        yield f"- at {where}{at}: {str(error.message).splitlines()[0]}"


def _line_index(text: str) -> dict[tuple[str, ...], int]:
    """Line of each mapping key, by path; only built when a document has errors (YAML composes JSON too)."""
    index: dict[tuple[str, ...], int] = {}
    try:
        root = yaml.compose(text, Loader=_YAML_LOADER)
    except yaml.YAMLError:
        return index
    stack: list[tuple[Any, tuple[str, ...]]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                child = (*path, str(key.value))
                index[child] = key.start_mark.line + 1
                stack.append((value, child))
        elif isinstance(node, yaml.SequenceNode):
            for position, value in enumerate(node.value):
                child = (*path, str(position))
                index[child] = value.start_mark.line + 1
                stack.append((value, child))
    return index


def _nearest_line(lines: dict[tuple[str, ...], int], path: tuple[str, ...]) -> int | None:
    while path:
        if path in lines:
            return lines[path]
        path = path[:-1]
    return None

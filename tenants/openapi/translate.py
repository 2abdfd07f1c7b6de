"""One OpenAPI operation, one HTTP tool: names, arguments, body, output schema, hints and authentication.

The result is data (``ToolPlan``s in the shape the tool services take, config as in the HTTP backend's contract);
nothing here touches the database or the network. Operations that cannot become a tool are listed with the
reason instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tenants.openapi.document import OpenApiDocument, OpenApiError
from tenants.openapi.schemas import SchemaError, SchemaTranslator
from tenants.openapi.security import auth_for, personal_auth
from tenants.openapi.servers import base_url_for

JSONObject = dict[str, Any]

METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
MAX_OPERATIONS = 2000
NAME_LIMIT = 128
TITLE_LIMIT = 200
# Headers the HTTP tool sets itself (OpenAPI says parameters with these names are ignored).
IGNORED_HEADERS = frozenset({"accept", "content-type", "authorization"})
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]+")
_VARIABLE_UNSAFE = re.compile(r"[^A-Za-z0-9_]+")


@dataclass(frozen=True)
class ImportOptions:
    prefix: str = ""
    base_url: str | None = None
    # The tenant's shared credentials (every tool's, or machine clients' where the tools act as each person).
    secret_name: str | None = None
    client_id: str | None = None
    # A personal auth config (``tenants.outbound_auth``, without "machine") every tool acts as each person with; and
    # whether machine clients then use the shared credentials above (else they are refused).
    personal: Mapping[str, Any] | None = None
    machine_shared: bool = False


@dataclass
class ToolPlan:
    """What one operation becomes: the keyword arguments of ``tool_create`` (less the tenant)."""

    key: str  # "GET /pets/{id}": how the preview and the selection name an operation
    name: str
    fields: JSONObject = field(default_factory=dict)


@dataclass
class Translation:
    tools: list[ToolPlan]
    skipped: list[tuple[str, str]]  # (operation key, reason)
    warnings: list[str]


def operation_key(method: str, path: str) -> str:
    return f"{method.upper()} {path}"


def tool_name(prefix: str, operation_id: str | None, method: str, path: str) -> str:
    """``<prefix><operationId>`` (or one made from method and path), kept to the tool-name rule."""
    raw = operation_id or f"{method}_{path}"
    cleaned = re.sub("_{2,}", "_", _NAME_UNSAFE.sub("_", raw)).strip("_") or method
    return (prefix + cleaned)[:NAME_LIMIT]


def _dedupe(name: str, taken: set[str]) -> str:
    candidate, number = name, 2
    while candidate in taken:
        suffix = f"_{number}"
        candidate, number = name[: NAME_LIMIT - len(suffix)] + suffix, number + 1
    taken.add(candidate)
    return candidate


def document_translate(
    document: OpenApiDocument, options: ImportOptions, *, max_operations: int = MAX_OPERATIONS
) -> Translation:
    """Every operation of ``document`` as a tool plan (or a reason it is skipped). Raises ``OpenApiError``."""
    paths = document.data.get("paths") or {}
    count = sum(1 for item in paths.values() if isinstance(item, dict) for method in METHODS if method in item)
    if count > max_operations:
        raise OpenApiError(f"{document.location}: {count} operations; the limit is {max_operations}")
    schemas = SchemaTranslator(document.data, openapi_30=document.openapi_30)
    tools: list[ToolPlan] = []
    skipped: list[tuple[str, str]] = []
    warnings: list[str] = []
    taken: set[str] = set()
    for path, item in paths.items():
        try:
            item = schemas.deref(item, where=f"paths.{path}")
        except SchemaError as exc:
            skipped.append((f"* {path}", str(exc)))
            continue
        if not isinstance(item, dict):
            continue
        for method in METHODS:
            operation = item.get(method)
            if not isinstance(operation, dict):
                continue
            key = operation_key(method, path)
            try:
                plan = _operation(document, schemas, options, path, item, method, operation, warnings)
            except (SchemaError, _Skip) as exc:
                skipped.append((key, str(exc)))
                continue
            plan.name = _dedupe(plan.name, taken)
            tools.append(plan)
    return Translation(tools, skipped, warnings)


class _Skip(Exception):
    """An operation that cannot become a tool; the message is the reason shown to the admin."""


def _operation(
    document: OpenApiDocument,
    schemas: SchemaTranslator,
    options: ImportOptions,
    path: str,
    item: JSONObject,
    method: str,
    operation: JSONObject,
    warnings: list[str],
) -> ToolPlan:
    where = f"paths.{path}.{method}"
    key = operation_key(method, path)
    try:
        base = base_url_for(document, item, operation, override=options.base_url)
    except OpenApiError as exc:
        raise _Skip(str(exc)) from None
    arguments = _Arguments(schemas, where)
    url_path = _parameters(arguments, schemas, path, item, operation, where)
    body = None
    if method in ("get", "head"):
        # HTTP gives a GET or HEAD body no meaning, and the HTTP backend sends none.
        body_object = schemas.deref(operation.get("requestBody"), where=f"{where}.requestBody")
        if isinstance(body_object, dict) and body_object.get("required"):
            raise _Skip(f"it needs a request body, which a {method.upper()} request does not carry")
    else:
        body = _request_body(arguments, schemas, operation, where)
    input_schema: JSONObject = {"type": "object", "properties": arguments.properties}
    if arguments.required:
        input_schema["required"] = arguments.required
    defs = schemas.defs(arguments.used, where=where)
    if defs:
        input_schema["$defs"] = defs
    operation_id = operation.get("operationId") if isinstance(operation.get("operationId"), str) else None
    auth = auth_for(document, operation, options, warnings=warnings, key=key)
    if options.personal is not None:
        auth = personal_auth(document, operation, options.personal, auth if options.machine_shared else None)
    config: JSONObject = {
        "method": method.upper(),
        "url": base.rstrip("/") + url_path,
        "query": arguments.query,
        "headers": arguments.headers,
        "body": body,
        "static_headers": {},
        "auth": auth,
    }
    summary = str(operation.get("summary") or "").strip()
    details = str(operation.get("description") or "").strip()
    description = "\n\n".join(part for part in (summary, details) if part) or key
    if operation.get("deprecated") is True:
        description = "Deprecated. " + description
    fields: JSONObject = {
        "title": summary.splitlines()[0][:TITLE_LIMIT] if summary else "",
        "description": description,
        "input_schema": input_schema,
        "output_schema": _output_schema(schemas, operation, where),
        "annotations": _annotations(method),
        "backend": "http",
        "config": config,
    }
    return ToolPlan(key, tool_name(options.prefix, operation_id, method, path), fields)


class _Arguments:
    """The tool's arguments as they are collected: schema properties plus where each one goes."""

    def __init__(self, schemas: SchemaTranslator, where: str) -> None:
        self.schemas = schemas
        self.where = where
        self.properties: JSONObject = {}
        self.required: list[str] = []
        self.query: dict[str, str] = {}
        self.headers: dict[str, str] = {}
        self.used: set[str] = set()

    def add(self, name: str, schema: Any, *, required: bool, description: str = "") -> None:
        translated, used = self.schemas.tool_schema(schema, where=f"{self.where}.{name}")
        self.used |= used
        if description and isinstance(translated, dict) and "description" not in translated:
            translated = {**translated, "description": description}
        self.properties[name] = translated
        if required:
            self.required.append(name)

    def free(self, name: str) -> str:
        candidate, number = name, 2
        while candidate in self.properties:
            candidate, number = f"{name}_{number}", number + 1
        return candidate


def _parameter_schema(parameter: JSONObject) -> Any:
    if "schema" in parameter:
        return parameter["schema"]
    content = parameter.get("content")
    if isinstance(content, dict) and content:
        first = next(iter(content.values()))
        if isinstance(first, dict) and "schema" in first:
            return first["schema"]
    return {}


def _parameters(
    arguments: _Arguments,
    schemas: SchemaTranslator,
    path: str,
    item: JSONObject,
    operation: JSONObject,
    where: str,
) -> str:
    """Add path, query and header parameters as arguments; the URL path as an RFC 6570 template."""
    declared: dict[tuple[str, str], JSONObject] = {}
    for level in (item.get("parameters") or [], operation.get("parameters") or []):
        for index, raw in enumerate(level):
            parameter = schemas.deref(raw, where=f"{where}.parameters[{index}]")
            if isinstance(parameter, dict) and isinstance(parameter.get("name"), str):
                declared[(parameter["name"], str(parameter.get("in")))] = parameter
    url_path = path
    for (name, location), parameter in declared.items():
        schema = _parameter_schema(parameter)
        description = str(parameter.get("description") or "")
        required = bool(parameter.get("required")) or location == "path"
        if location == "path":
            argument = arguments.free(_VARIABLE_UNSAFE.sub("_", name).strip("_") or "value")
            if "{" + name + "}" not in url_path:
                raise _Skip(f"path parameter {name!r} does not appear in the path")
            url_path = url_path.replace("{" + name + "}", "{" + argument + "}")
        elif location == "query":
            argument = arguments.free(name)
            arguments.query[name] = argument
        elif location == "header":
            if name.lower() in IGNORED_HEADERS:
                continue
            argument = arguments.free(name)
            arguments.headers[name] = argument
        else:
            if required:
                raise _Skip(f"it needs the {location} parameter {name!r}, which HTTP tools cannot send")
            continue
        arguments.add(argument, schema, required=required, description=description)
    leftover = re.findall(r"\{([^{}]+)\}", url_path)
    unknown = [name for name in leftover if name not in arguments.properties]
    if unknown:
        raise _Skip(f"the path uses {{{unknown[0]}}} but declares no such path parameter")
    return url_path


def _json_media(content: Any) -> Any:
    if not isinstance(content, dict):
        return None
    for media_type, media in content.items():
        base = media_type.split(";")[0].strip().lower()
        if base == "application/json" or base.endswith("+json") or base == "*/*":
            return media
    return None


def _request_body(
    arguments: _Arguments, schemas: SchemaTranslator, operation: JSONObject, where: str
) -> JSONObject | None:
    if "requestBody" not in operation:
        return None
    body = schemas.deref(operation["requestBody"], where=f"{where}.requestBody")
    if not isinstance(body, dict):
        return None
    media = _json_media(body.get("content"))
    required = bool(body.get("required"))
    if media is None:
        kinds = ", ".join(sorted(body.get("content") or {})) or "no media type"
        if required:
            raise _Skip(f"its request body is {kinds}; HTTP tools send JSON bodies only")
        return None
    schema = media.get("schema", {}) if isinstance(media, dict) else {}
    resolved = schemas.root(schema, where=f"{where}.requestBody")
    properties = resolved.get("properties") if isinstance(resolved, dict) else None
    composite = isinstance(resolved, dict) and any(k in resolved for k in ("allOf", "anyOf", "oneOf", "$ref"))
    if (
        isinstance(properties, dict)
        and properties
        and not composite
        and not (set(properties) & set(arguments.properties))
    ):
        inner_required = resolved.get("required") or []
        for name, property_schema in properties.items():
            arguments.add(name, property_schema, required=required and name in inner_required)
        return {"arguments": list(properties)}
    argument = arguments.free("body")
    arguments.add(argument, schema, required=required, description=str(body.get("description") or ""))
    return {"argument": argument}


def _output_schema(schemas: SchemaTranslator, operation: JSONObject, where: str) -> JSONObject | None:
    responses = operation.get("responses") or {}
    codes = sorted(code for code in responses if str(code).startswith("2"))
    for code in codes:
        response = schemas.deref(responses[code], where=f"{where}.responses.{code}")
        media = _json_media(response.get("content")) if isinstance(response, dict) else None
        if not isinstance(media, dict) or "schema" not in media:
            continue
        root = schemas.root(media["schema"], where=f"{where}.responses.{code}")
        if not isinstance(root, dict) or root.get("type") != "object":
            return None
        translated, used = schemas.tool_schema(root, where=f"{where}.responses.{code}")
        if not isinstance(translated, dict):
            return None
        if translated.get("type") == ["object", "null"]:
            # A nullable object: structured content only ever comes from an object body.
            translated["type"] = "object"
        defs = schemas.defs(used, where=where)
        if defs:
            translated = {**translated, "$defs": {**translated.get("$defs", {}), **defs}}
        return translated
    return None


def _annotations(method: str) -> JSONObject | None:
    if method in ("get", "head"):
        return {"readOnlyHint": True}
    if method == "delete":
        return {"destructiveHint": True}
    return None

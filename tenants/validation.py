"""Full validation of catalog entries before they are stored: model rules plus the MCP shapes of their JSON.

Each ``*_validate`` raises one ``django.core.exceptions.ValidationError`` keyed by field, so the services
and the admin forms report the same messages.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import SplitResult, urlsplit

import jsonschema_rs
from django.core.exceptions import ValidationError
from django.db import models
from jsonschema import Draft202012Validator, SchemaError
from referencing.exceptions import Unresolvable

from mcp_core.content import ROLES, prompt_message_problem, validate_content_item
from mcp_core.schema_check import offline_validator
from mcp_core.uritemplate import UriTemplate
from tenants.backends import http as http_backend
from tenants.backends.http_auth import header_value_problem
from tenants.backends.registry import PythonRegistry, UnknownPythonFunction, default_registry
from tenants.models import SECRET_NAME_PATTERN, Backend, Prompt, Resource, ResourceTemplate, Tenant, Tool
from tenants.python_grants import python_function_binding_problem
from tenants.rendering import prompt_placeholders

Errors = dict[str, list[str]]

TOOL_ANNOTATION_HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
STATIC_TOOL_KEYS = frozenset({"content", "isError", "structuredContent"})
PROMPT_ARGUMENT_KEYS = frozenset({"name", "title", "description", "required"})
KNOWN_DIALECTS = (
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2020-12/schema#",
    "https://json-schema.org/draft/2019-09/schema",
    "http://json-schema.org/draft-07/schema#",
    "http://json-schema.org/draft-07/schema",
)
ONLY_STATIC_OR_PYTHON = "Templates and prompts are static or Python; the HTTP backend is for tools."
TOO_DEEP = "It is nested too deeply to check."


def split_uri(uri: str) -> SplitResult | None:
    """``urlsplit(uri)``, or None where it raises (``x://[x]``: brackets that hold no IPv6 address; a bad port is
    only found when ``.port`` is read)."""
    try:
        return urlsplit(uri)
    except ValueError:
        return None


def uri_scheme(uri: str) -> str:
    """The scheme of ``uri`` in lower case; empty when it has none or does not parse."""
    parts = split_uri(uri)
    return parts.scheme.lower() if parts else ""


def _collect(instance: models.Model, checks: Callable[[Errors], None], *, keys_checked: bool = False) -> None:
    """Run the model's own validation and ``checks``; raise everything found at once.

    ``keys_checked``: the caller vouches for the foreign keys and uniqueness (a batch writer that checked them once
    for all its rows in its own transaction), so the per-row queries for them are skipped.
    """
    errors: Errors = {}
    foreign_keys = [f.name for f in instance._meta.fields if f.is_relation] if keys_checked else None
    try:
        instance.full_clean(exclude=foreign_keys, validate_unique=not keys_checked)
    except ValidationError as exc:
        for field, messages in exc.message_dict.items():
            errors.setdefault(field, []).extend(messages)
    try:
        checks(errors)
    except RecursionError:
        # Values reach the checks from services, imports and upstreams too, not only the admin's bounded boxes.
        _add(errors, "__all__", TOO_DEEP)
    if errors:
        raise ValidationError(errors)


def _add(errors: Errors, field: str, message: str) -> None:
    errors.setdefault(field, []).append(message)


def tenant_validate(tenant: Tenant) -> None:
    """Raise ``ValidationError`` unless ``tenant`` may be stored."""

    def checks(errors: Errors) -> None:
        origins = tenant.allowed_origins
        if not isinstance(origins, list) or not all(isinstance(o, str) for o in origins):
            _add(errors, "allowed_origins", 'Allowed origins must be a list such as ["https://app.example"].')
            return
        for origin in origins:
            parts = split_uri(origin)
            if not parts or parts.scheme not in ("http", "https") or not parts.netloc or parts.path or parts.query:
                _add(errors, "allowed_origins", f"{origin!r} is not an origin (scheme://host[:port]).")
        for message in _network_list_errors(tenant.outbound_allowed_networks):
            _add(errors, "outbound_allowed_networks", message)

    _collect(tenant, checks)


def _network_list_errors(networks: Any) -> list[str]:
    if not isinstance(networks, list) or not all(isinstance(n, str) for n in networks):
        return ['Networks must be a list of CIDRs such as ["10.20.0.0/16"].']
    problems = []
    for network in networks:
        try:
            ipaddress.ip_network(network, strict=False)
        except ValueError:
            problems.append(f"{network!r} is not an address or network (CIDR).")
    return problems


def _patterns_compile(node: Any) -> bool:
    if isinstance(node, list):
        return all(_patterns_compile(item) for item in node)
    if not isinstance(node, dict):
        return True
    patterns = [node["pattern"]] if isinstance(node.get("pattern"), str) else []
    if isinstance(node.get("patternProperties"), dict):
        patterns += list(node["patternProperties"])
    try:
        for pattern in patterns:
            re.compile(pattern)
    except re.error:
        return False
    return all(_patterns_compile(value) for value in node.values())


def json_schema_errors(schema: Any, *, what: str) -> list[str]:
    """Why ``schema`` is not a usable tool schema (a JSON Schema 2020-12 object schema), or nothing."""
    if not isinstance(schema, dict):
        return [f"{what} must be a JSON object."]
    problems = []
    if schema.get("type") != "object":
        problems.append(f'{what} must have "type": "object" at its root.')
    # The Rust meta-schema check answers "valid" in microseconds (an OpenAPI import stores a thousand schemas);
    # only an invalid schema pays for the pure-Python check, which words the error the way the admin shows it.
    # Only for dialects it bundles: given another "$schema" URI, jsonschema-rs would fetch it over the network.
    # It does not check the "regex" format, which jsonschema does: patterns are compiled here.
    try:
        if (
            schema.get("$schema", KNOWN_DIALECTS[0]) in KNOWN_DIALECTS
            and jsonschema_rs.meta.is_valid(schema)
            and _patterns_compile(schema)
        ):
            return problems
        Draft202012Validator.check_schema(schema)
    except RecursionError:
        problems.append(f"{what}: {TOO_DEEP}")
    except SchemaError as exc:
        location = "/".join(str(p) for p in exc.path) or "root"
        problems.append(f"{what} is not a valid JSON Schema (at {location}): {exc.message}")
    return problems


def _python_function_errors(
    config: Any, lookup: Callable[[str], object], *, tenant_id: int | None, registry: PythonRegistry
) -> list[str]:
    if not isinstance(config, dict) or set(config) != {"function"} or not isinstance(config["function"], str):
        return ['A Python backend needs config {"function": "<registered name>"} and nothing else.']
    try:
        lookup(config["function"])
    except UnknownPythonFunction as exc:
        return [str(exc)]
    problem = python_function_binding_problem(tenant_id=tenant_id, function=config["function"], registry=registry)
    return [problem] if problem else []


def _static_tool_errors(config: Any, output_schema: Any) -> list[str]:
    if not isinstance(config, dict):
        return ["A static tool's config must be an object."]
    problems = [f"Unknown key {key!r} in a static tool's config." for key in sorted(set(config) - STATIC_TOOL_KEYS)]
    content = config.get("content")
    if not isinstance(content, list):
        problems.append('A static tool\'s config needs "content": a list of content items.')
    else:
        for index, item in enumerate(content):
            reason = validate_content_item(item)
            if reason is not None:
                problems.append(f"content[{index}]: {reason}.")
    is_error = config.get("isError", False)
    if not isinstance(is_error, bool):
        problems.append('"isError" must be true or false.')
    structured = config.get("structuredContent")
    if structured is not None and not isinstance(structured, dict):
        problems.append('"structuredContent" must be an object.')
    if isinstance(output_schema, dict) and not is_error and not problems:
        if structured is None:
            problems.append('A tool with an output schema must return "structuredContent".')
        else:
            try:
                for error in offline_validator(output_schema).iter_errors(structured):
                    problems.append(f"structuredContent does not match the output schema: {error.message}")
            except Unresolvable as exc:
                problems.append(f"The output schema refers to {exc.ref!r}, which is not part of it.")
    return problems


HTTP_TOOL_KEYS = frozenset({"method", "url", "query", "headers", "body", "static_headers", "auth", "timeout"})
HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
# Headers the request itself owns: a tool config setting them would confuse the connection, not the API.
RESERVED_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection", "upgrade", "te"})
AUTH_KEYS = {
    "bearer": {"secret", "type"},
    "basic": {"secret", "type"},
    "header": {"secret", "type", "name"},
    "query": {"secret", "type", "name"},
    "client_credentials": {"secret", "type", "client_id", "token_url", "scope"},
}
MAX_HTTP_TIMEOUT = 300


def _string_map_errors(value: Any, what: str, *, headers: bool, literal_values: bool = False) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        return [f'"{what}" must be an object of strings.']
    problems = []
    for name, item in value.items():
        if headers and (not HEADER_NAME.match(name) or name.lower() in RESERVED_HEADERS):
            problems.append(f'"{what}": {name!r} is not a header a tool may set.')
        if literal_values and ("\r" in item or "\n" in item):
            problems.append(f'"{what}": the value of {name!r} has a line break.')
        elif literal_values and (problem := header_value_problem(item)) is not None:
            problems.append(f'"{what}": the value of {name!r} cannot be sent as a header: {problem}.')
        if not headers and not name:
            problems.append(f'"{what}" has an empty parameter name.')
    return problems


def auth_errors(auth: Any) -> list[str]:
    """Why ``auth`` is not a secret reference (HTTP tools' and upstreams' auth shape), or nothing."""
    if auth is None:
        return []
    if not isinstance(auth, dict) or auth.get("type") not in AUTH_KEYS:
        return [f'"auth" must be null or an object whose "type" is one of {", ".join(AUTH_KEYS)}.']
    kind = auth["type"]
    problems = [f'"auth" ({kind}) has unknown key {key!r}.' for key in sorted(set(auth) - AUTH_KEYS[kind])]
    secret = auth.get("secret")
    if not isinstance(secret, str) or not re.match(SECRET_NAME_PATTERN, secret):
        problems.append('"auth" needs "secret": the name of one of the tenant\'s secrets.')
    if kind in ("header", "query"):
        name = auth.get("name")
        if not isinstance(name, str) or not name or (kind == "header" and not HEADER_NAME.match(name)):
            problems.append(f'"auth" ({kind}) needs "name": the {kind} parameter that carries the key.')
    if kind == "client_credentials":
        if not isinstance(auth.get("client_id"), str) or not auth["client_id"]:
            problems.append('"auth" (client_credentials) needs "client_id".')
        token_url = auth.get("token_url")
        if not isinstance(token_url, str) or uri_scheme(token_url) not in ("http", "https"):
            problems.append('"auth" (client_credentials) needs "token_url": an http(s) URL.')
        if "scope" in auth and not isinstance(auth["scope"], str):
            problems.append('"auth" (client_credentials): "scope" must be a string of space-separated scopes.')
    return problems


def _http_tool_errors(config: Any, input_schema: Any) -> list[str]:
    """Why ``config`` is not an HTTP tool's config (the shape in docs: method, url, query, headers, body, auth)."""
    if not isinstance(config, dict):
        return ["An HTTP tool's config must be an object."]
    problems = [f"Unknown key {key!r} in an HTTP tool's config." for key in sorted(set(config) - HTTP_TOOL_KEYS)]
    method = config.get("method", "GET")
    if method not in http_backend.METHODS:
        problems.append(f'"method" must be one of {", ".join(http_backend.METHODS)}.')
    url = config.get("url")
    used: list[str] = []
    if not isinstance(url, str) or not url:
        problems.append('An HTTP tool needs "url": an RFC 6570 template such as "https://api.example/pets/{id}".')
    elif (problem := http_backend.url_template_problem(url)) is not None:
        problems.append(f'"url": {problem}.')
    else:
        used += http_backend.url_template_variables(url)
    for key in ("query", "headers"):
        problems += _string_map_errors(config.get(key), key, headers=key == "headers")
        if isinstance(config.get(key), dict):
            used += [v for v in config[key].values() if isinstance(v, str)]
    problems += _string_map_errors(config.get("static_headers"), "static_headers", headers=True, literal_values=True)
    body = config.get("body")
    if body is not None:
        if isinstance(body, dict) and set(body) == {"argument"} and isinstance(body["argument"], str):
            used.append(body["argument"])
        elif (
            isinstance(body, dict)
            and set(body) == {"arguments"}
            and isinstance(body["arguments"], list)
            and all(isinstance(n, str) for n in body["arguments"])
        ):
            used += body["arguments"]
        else:
            problems.append('"body" must be null, {"argument": "<name>"} or {"arguments": ["<name>", ...]}.')
        if method in ("GET", "HEAD"):
            problems.append(f'A {method} request has no body: remove "body" or change the method.')
    problems += auth_errors(config.get("auth"))
    timeout = config.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= MAX_HTTP_TIMEOUT
    ):
        problems.append(f'"timeout" must be a number of seconds above 0 and at most {MAX_HTTP_TIMEOUT}.')
    declared = input_schema.get("properties") if isinstance(input_schema, dict) else None
    if isinstance(declared, dict):
        problems += [
            f"{name!r} is used by the request but is not a property of the input schema."
            for name in dict.fromkeys(used)
            if name not in declared
        ]
    return problems


def _tool_annotation_errors(annotations: Any) -> list[str]:
    if annotations is None:
        return []
    if not isinstance(annotations, dict):
        return ["Annotations must be an object."]
    problems = [
        f'"{hint}" must be true or false.'
        for hint in TOOL_ANNOTATION_HINTS
        if hint in annotations and not isinstance(annotations[hint], bool)
    ]
    if "title" in annotations and not isinstance(annotations["title"], str):
        problems.append('"title" must be a string.')
    return problems


def _icon_errors(icons: Any) -> list[str]:
    if icons is None:
        return []
    if not isinstance(icons, list):
        return ["Icons must be a list of {src, mimeType?, sizes?, theme?} objects."]
    problems = []
    for index, icon in enumerate(icons):
        if not isinstance(icon, dict) or not isinstance(icon.get("src"), str) or not icon["src"]:
            problems.append(f"icons[{index}] needs a non-empty string 'src'.")
            continue
        if "mimeType" in icon and not isinstance(icon["mimeType"], str):
            problems.append(f"icons[{index}].mimeType must be a string.")
        sizes = icon.get("sizes")
        if sizes is not None and (not isinstance(sizes, list) or not all(isinstance(s, str) for s in sizes)):
            problems.append(f'icons[{index}].sizes must be a list of strings such as "48x48".')
        if icon.get("theme", "light") not in ("light", "dark"):
            problems.append(f'icons[{index}].theme must be "light" or "dark".')
    return problems


def _upstream_item_errors(item: Tool | ResourceTemplate | Prompt) -> list[str]:
    """An item mirrored from an upstream: it names its upstream and the upstream's own definition."""
    config = item.config
    if item.upstream_id is None:
        return ["Only items mirrored from an upstream MCP server use the upstream backend."]
    if not isinstance(config, dict) or not isinstance(config.get("remote"), dict):
        return ['An upstream item needs config {"remote": {...the upstream\'s definition...}, "mirrored": {...}}.']
    if not isinstance(config["remote"].get("name"), str):
        return ["The upstream definition in config.remote has no name."]
    return []


# A tool's JSON Schema fields and how their messages name them. The admin's schema editor checks a draft through
# ``tool_schema_errors`` as it is typed, so it reports what saving would.
TOOL_SCHEMA_FIELDS = {"input_schema": "The input schema", "output_schema": "The output schema"}


def tool_schema_errors(*, field: str, schema: Any) -> list[str]:
    """Why ``schema`` cannot be the tool's ``field`` (a key of ``TOOL_SCHEMA_FIELDS``), or nothing; an output
    schema may be absent (None)."""
    if field == "output_schema" and schema is None:
        return []
    return json_schema_errors(schema, what=TOOL_SCHEMA_FIELDS[field])


def tool_validate(tool: Tool, *, registry: PythonRegistry = default_registry, keys_checked: bool = False) -> None:
    """Raise ``ValidationError`` unless ``tool`` may be stored and served (``keys_checked``: see ``_collect``)."""

    def checks(errors: Errors) -> None:
        for field in TOOL_SCHEMA_FIELDS:
            for message in tool_schema_errors(field=field, schema=getattr(tool, field)):
                _add(errors, field, message)
        for message in _tool_annotation_errors(tool.annotations):
            _add(errors, "annotations", message)
        for message in _icon_errors(tool.icons):
            _add(errors, "icons", message)
        if tool.backend == Backend.PYTHON:
            problems = _python_function_errors(
                tool.config, registry.get_tool, tenant_id=tool.tenant_id, registry=registry
            )
        elif tool.backend == Backend.UPSTREAM:
            problems = _upstream_item_errors(tool)
        elif tool.backend == Backend.HTTP:
            problems = _http_tool_errors(tool.config, tool.input_schema)
        else:
            output_schema = tool.output_schema if "output_schema" not in errors else None
            problems = _static_tool_errors(tool.config, output_schema)
        for message in problems:
            _add(errors, "config", message)

    _collect(tool, checks, keys_checked=keys_checked)


def _resource_annotation_errors(annotations: Any) -> list[str]:
    if annotations is None:
        return []
    if not isinstance(annotations, dict):
        return ["Annotations must be an object."]
    problems = []
    audience = annotations.get("audience")
    if audience is not None and (not isinstance(audience, list) or not all(a in ROLES for a in audience)):
        problems.append('"audience" must be a list of "user" and/or "assistant".')
    priority = annotations.get("priority")
    if priority is not None and (
        isinstance(priority, bool) or not isinstance(priority, int | float) or not 0 <= priority <= 1
    ):
        problems.append('"priority" must be a number from 0 to 1.')
    if "lastModified" in annotations and not isinstance(annotations["lastModified"], str):
        problems.append('"lastModified" must be an ISO 8601 string.')
    return problems


def resource_validate(resource: Resource) -> None:
    """Raise ``ValidationError`` unless ``resource`` may be stored and served."""

    def checks(errors: Errors) -> None:
        parts = split_uri(resource.uri or "")
        if parts is None:
            _add(errors, "uri", f"{resource.uri!r} is not a URI: brackets in its host must hold an IPv6 address.")
        elif resource.uri and not parts.scheme:
            _add(errors, "uri", "The URI needs a scheme, such as file:// or docs://.")
        if resource.blob is not None:
            try:
                base64.b64decode(resource.blob, validate=True)
            except (binascii.Error, ValueError):
                _add(errors, "blob", "The blob must be base64-encoded.")
        for message in _resource_annotation_errors(resource.annotations):
            _add(errors, "annotations", message)

    _collect(resource, checks)


def _completion_errors(completions: Any, allowed: set[str], what: str) -> list[str]:
    if not isinstance(completions, dict):
        return ['Completions must be an object such as {"name": ["value", ...]}.']
    problems = []
    for key, values in completions.items():
        if key not in allowed:
            problems.append(f"Completions name {key!r}, which is not {what} here.")
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            problems.append(f"Completions for {key!r} must be a list of strings.")
    return problems


def resource_template_validate(template: ResourceTemplate, *, registry: PythonRegistry = default_registry) -> None:
    """Raise ``ValidationError`` unless ``template`` may be stored and served."""

    def checks(errors: Errors) -> None:
        variables: set[str] = set()
        try:
            variables = set(UriTemplate.parse(template.uri_template).variables)
        except ValueError as exc:
            _add(errors, "uri_template", f"Not a valid URI template: {exc}")
        if template.backend == Backend.PYTHON:
            problems = _python_function_errors(
                template.config, registry.get_resource_template, tenant_id=template.tenant_id, registry=registry
            )
        elif template.backend == Backend.UPSTREAM:
            problems = _upstream_item_errors(template)
        elif template.backend == Backend.HTTP:
            _add(errors, "backend", ONLY_STATIC_OR_PYTHON)
            problems = []
        elif (
            not isinstance(template.config, dict)
            or set(template.config) != {"text"}
            or not isinstance(template.config["text"], str)
        ):
            problems = ['A static template needs config {"text": "... {variable} ..."} and nothing else.']
        else:
            problems = []
        for message in problems:
            _add(errors, "config", message)
        if "uri_template" not in errors:
            for message in _completion_errors(template.completions, variables, "a template variable"):
                _add(errors, "completions", message)

    _collect(template, checks)


def _argument_errors(arguments: Any) -> tuple[list[str], set[str]]:
    if not isinstance(arguments, list):
        return ["Arguments must be a list of {name, description?, required?} objects."], set()
    problems: list[str] = []
    names: set[str] = set()
    for index, argument in enumerate(arguments):
        if not isinstance(argument, dict) or not isinstance(argument.get("name"), str) or not argument["name"]:
            problems.append(f"arguments[{index}] needs a non-empty string 'name'.")
            continue
        name = argument["name"]
        if name in names:
            problems.append(f"Argument {name!r} is declared twice.")
        names.add(name)
        problems.extend(
            f"arguments[{index}] has unknown key {key!r}." for key in sorted(set(argument) - PROMPT_ARGUMENT_KEYS)
        )
        for key in ("title", "description"):
            if key in argument and not isinstance(argument[key], str):
                problems.append(f"arguments[{index}].{key} must be a string.")
        if "required" in argument and not isinstance(argument["required"], bool):
            problems.append(f"arguments[{index}].required must be true or false.")
    return problems, names


def _message_errors(messages: Any, argument_names: set[str]) -> list[str]:
    if not isinstance(messages, list) or not messages:
        return ["Messages must be a non-empty list of {role, content} objects."]
    problems = []
    for index, message in enumerate(messages):
        problem = prompt_message_problem(message, f"messages[{index}]")
        if problem is not None:
            problems.append(f"{problem}.")
            if not isinstance(message, dict) or "content" not in message:
                continue
        for name in sorted(prompt_placeholders(message["content"]) - argument_names):
            problems.append(f"messages[{index}] uses {{{{{name}}}}} but the prompt declares no argument {name!r}.")
    return problems


def prompt_validate(prompt: Prompt, *, registry: PythonRegistry = default_registry) -> None:
    """Raise ``ValidationError`` unless ``prompt`` may be stored and served."""

    def checks(errors: Errors) -> None:
        problems, names = _argument_errors(prompt.arguments)
        for message in problems:
            _add(errors, "arguments", message)
        for message in _completion_errors(prompt.completions, names, "an argument"):
            _add(errors, "completions", message)
        if prompt.backend == Backend.UPSTREAM:
            for message in _upstream_item_errors(prompt):
                _add(errors, "config", message)
            if prompt.messages:
                _add(errors, "messages", "An upstream prompt's messages come from the upstream: leave them empty.")
            return
        if prompt.backend == Backend.HTTP:
            _add(errors, "backend", ONLY_STATIC_OR_PYTHON)
            return
        if prompt.backend == Backend.PYTHON:
            for message in _python_function_errors(
                prompt.config, registry.get_prompt, tenant_id=prompt.tenant_id, registry=registry
            ):
                _add(errors, "config", message)
            if prompt.messages:
                _add(errors, "messages", "A Python prompt's messages come from its function: leave them empty.")
            return
        if prompt.config:
            _add(errors, "config", "A static prompt takes no config: its messages are the prompt.")
        for message in _message_errors(prompt.messages, names):
            _add(errors, "messages", message)

    _collect(prompt, checks)

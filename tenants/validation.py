"""Full validation of catalog entries before they are stored: model rules plus the MCP shapes of their JSON.

Each ``*_validate`` raises one ``django.core.exceptions.ValidationError`` keyed by field, so the services
and the admin forms report the same messages. What every entry shares (schemas, annotations, icons, URIs,
arguments, completions) is checked here; each backend checks its own configuration (``CatalogBackend``'s
``*_config_errors``), found through the registry in ``tenants.backends.plugs``.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from collections.abc import Callable
from typing import Any

import jsonschema_rs
from django.core.exceptions import ValidationError
from django.db import models
from jsonschema import Draft202012Validator, SchemaError

from mcp_core.content import ROLES
from mcp_core.uris import split_uri
from mcp_core.uritemplate import UriTemplate
from tenants.backends.base import Errors
from tenants.backends.plugs import BACKENDS
from tenants.models import Prompt, Resource, ResourceTemplate, Tenant, Tool
from tenants.selection import tag_errors

TOOL_ANNOTATION_HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
PROMPT_ARGUMENT_KEYS = frozenset({"name", "title", "description", "required"})
KNOWN_DIALECTS = (
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2020-12/schema#",
    "https://json-schema.org/draft/2019-09/schema",
    "http://json-schema.org/draft-07/schema#",
    "http://json-schema.org/draft-07/schema",
)
TOO_DEEP = "It is nested too deeply to check."


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


def _tags(errors: Errors, tags: Any) -> None:
    for message in tag_errors(tags):
        _add(errors, "tags", message)


def _add(errors: Errors, field: str, message: str) -> None:
    errors.setdefault(field, []).append(message)


def _merge(errors: Errors, found: Errors) -> None:
    for field, messages in found.items():
        for message in messages:
            _add(errors, field, message)


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


# A tool's JSON Schema fields and how their messages name them. The admin's schema editor checks a draft through
# ``tool_schema_errors`` as it is typed, so it reports what saving would.
TOOL_SCHEMA_FIELDS = {"input_schema": "The input schema", "output_schema": "The output schema"}


def tool_schema_errors(*, field: str, schema: Any) -> list[str]:
    """Why ``schema`` cannot be the tool's ``field`` (a key of ``TOOL_SCHEMA_FIELDS``), or nothing; an output
    schema may be absent (None)."""
    if field == "output_schema" and schema is None:
        return []
    return json_schema_errors(schema, what=TOOL_SCHEMA_FIELDS[field])


def tool_validate(tool: Tool, *, keys_checked: bool = False) -> None:
    """Raise ``ValidationError`` unless ``tool`` may be stored and served (``keys_checked``: see ``_collect``)."""

    def checks(errors: Errors) -> None:
        for field in TOOL_SCHEMA_FIELDS:
            for message in tool_schema_errors(field=field, schema=getattr(tool, field)):
                _add(errors, field, message)
        for message in _tool_annotation_errors(tool.annotations):
            _add(errors, "annotations", message)
        for message in _icon_errors(tool.icons):
            _add(errors, "icons", message)
        _tags(errors, tool.tags)
        backend = BACKENDS.get(tool.backend)  # an unknown one is the model's own error, on "backend"
        if backend is not None:
            _merge(errors, backend.tool_config_errors(tool, found=errors))

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
        _tags(errors, resource.tags)

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


def resource_template_validate(template: ResourceTemplate) -> None:
    """Raise ``ValidationError`` unless ``template`` may be stored and served."""

    def checks(errors: Errors) -> None:
        variables: set[str] = set()
        try:
            variables = set(UriTemplate.parse(template.uri_template).variables)
        except ValueError as exc:
            _add(errors, "uri_template", f"Not a valid URI template: {exc}")
        backend = BACKENDS.get(template.backend)
        if backend is not None:
            _merge(errors, backend.template_config_errors(template))
        if "uri_template" not in errors:
            for message in _completion_errors(template.completions, variables, "a template variable"):
                _add(errors, "completions", message)
        _tags(errors, template.tags)

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


def prompt_validate(prompt: Prompt) -> None:
    """Raise ``ValidationError`` unless ``prompt`` may be stored and served."""

    def checks(errors: Errors) -> None:
        problems, names = _argument_errors(prompt.arguments)
        for message in problems:
            _add(errors, "arguments", message)
        for message in _completion_errors(prompt.completions, names, "an argument"):
            _add(errors, "completions", message)
        backend = BACKENDS.get(prompt.backend)
        if backend is not None:
            _merge(errors, backend.prompt_config_errors(prompt, argument_names=names))
        _tags(errors, prompt.tags)

    _collect(prompt, checks)

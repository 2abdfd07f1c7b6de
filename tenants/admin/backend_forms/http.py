"""The HTTP backend's section: method, URL template, the query, header and body mappings, fixed headers, timeout,
whom the tool acts as (the tenant, or each person: ``tenants.admin.acting_auth``) and the shared authentication with
a picker of the tenant's secrets (names only, never values). Each key of the config maps to one field and back; a
value the fields cannot hold as written stays in the Advanced (JSON) box."""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from tenants.admin.acting_auth import (
    acting_field_names,
    acting_fields,
    acting_fits,
    acting_join,
    acting_split,
    personal_secret_field,
)
from tenants.admin.backend_forms.base import BackendSectionForm, JSONObject, section_marker
from tenants.admin.fields import TypedTextField
from tenants.admin.secret_picker import secret_name_field, secret_names_offer
from tenants.backends.http import METHODS
from tenants.models import Backend, Tool
from tenants.outbound_auth import AUTH_KEYS, PERSONAL_AUTH_TYPES

AUTH_CHOICES = [
    ("", "None"),
    ("bearer", "Bearer token"),
    ("header", "API key in a header"),
    ("query", "API key in the query"),
    ("basic", "Basic (the secret is user:password)"),
    ("client_credentials", "OAuth 2.0 client credentials (the secret is the client secret)"),
]
BODY_CHOICES = [
    ("", "No body"),
    ("argument", "One argument is the whole JSON body"),
    ("arguments", "These arguments, as a JSON object"),
]
MAPS = {"query": "http_query", "headers": "http_headers", "static_headers": "http_static_headers"}
AUTH_FIELDS = {"secret": "http_auth_secret", "name": "http_auth_name", "client_id": "http_auth_client_id"}
AUTH_FIELDS |= {"token_url": "http_auth_token_url", "scope": "http_auth_scope"}
MAX_MAP_LINES = 100
ACTING_PREFIX = "http_"


def _map_text(value: Any) -> str | None:
    """``{"a": "b"}`` as lines ``a = b``, or None when a key or value would not read back as written."""
    if not isinstance(value, dict):
        return None
    lines = []
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, str) or not key or "=" in key:
            return None
        if any(c in key + item for c in "\r\n") or key != key.strip() or item != item.strip():
            return None
        lines.append(f"{key} = {item}")
    return "\n".join(lines)


def _map_value(text: str, field: str) -> dict[str, str]:
    result: dict[str, str] = {}
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) > MAX_MAP_LINES:
        raise ValidationError({field: [f"At most {MAX_MAP_LINES} lines."]})
    for number, line in enumerate(lines, 1):
        key, equals, item = line.partition("=")
        if not equals or not key.strip():
            raise ValidationError({field: [f"Line {number} is not name = value: {line.strip()[:80]!r}."]})
        result[key.strip()] = item.strip()
    return result


def _map_field(label: str, help_text: str) -> TypedTextField:
    """A box of ``name = value`` lines (one of ``MAPS``)."""
    return TypedTextField(
        required=False,
        max_length=10_000,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        label=label,
        help_text=help_text,
    )


def _names_text(value: Any) -> str | None:
    if not isinstance(value, list) or not all(isinstance(n, str) and n and n == n.strip() for n in value):
        return None
    return None if any("," in n for n in value) else ", ".join(value)


def _timeout_text(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return json.dumps(value)


def _auth_fits(auth: Any) -> bool:
    """Whether the auth fields hold ``auth`` as written: a known kind, its own keys, string values; a personal
    config that the "Acts as" fields hold, with a shared one for machine clients that these fields hold."""
    if isinstance(auth, dict) and auth.get("type") in PERSONAL_AUTH_TYPES:
        return acting_fits(auth) and (auth.get("machine") is None or _auth_fits(auth["machine"]))
    if not isinstance(auth, dict) or auth.get("type") not in AUTH_KEYS or not set(auth) <= AUTH_KEYS[auth["type"]]:
        return False
    return all(isinstance(auth.get(k), str) for k in set(auth) - {"type"})


def http_config_split(config: Any) -> tuple[JSONObject, Any]:
    """(the section's values, the rest) of an HTTP tool's config; ``http_config_join`` makes it again."""
    values: JSONObject = {"http_method": "GET", "http_body_kind": "", "http_auth_type": ""}
    if not isinstance(config, dict):
        return values, config
    rest = dict(config)
    if rest.get("method") in METHODS:
        values["http_method"] = rest.pop("method")
    if isinstance(rest.get("url"), str) and not any(c in rest["url"] for c in "\r\n"):
        values["http_url"] = rest.pop("url")
    for key, field in MAPS.items():
        if key in rest and rest[key] is None:
            rest.pop(key)
        elif key in rest and (text := _map_text(rest[key])) is not None:
            values[field] = text
            rest.pop(key)
    body = rest.get("body", "absent")
    if body is None:
        rest.pop("body")
    elif isinstance(body, dict) and set(body) == {"argument"} and isinstance(body["argument"], str):
        if body["argument"] and "," not in body["argument"] and body["argument"] == body["argument"].strip():
            values |= {"http_body_kind": "argument", "http_body_arguments": rest.pop("body")["argument"]}
    elif isinstance(body, dict) and set(body) == {"arguments"} and (names := _names_text(body["arguments"])):
        values |= {"http_body_kind": "arguments", "http_body_arguments": names}
        rest.pop("body")
    auth = rest.get("auth", "absent")
    if auth is None:
        rest.pop("auth")
    elif _auth_fits(auth):
        acting, shared = acting_split(rest.pop("auth"), ACTING_PREFIX)
        values |= acting
        if shared is not None:
            values["http_auth_type"] = shared["type"]
            values |= {field: shared[key] for key, field in AUTH_FIELDS.items() if key in shared}
    if "timeout" in rest and (text := _timeout_text(rest["timeout"])) is not None:
        values["http_timeout"] = text
        rest.pop("timeout")
    return values, rest or None


def http_config_join(values: dict[str, Any], rest: Any) -> Any:
    """The config of the section's values and the Advanced (JSON) ``rest``. Raises ``ValidationError`` by field."""
    if rest is not None and not isinstance(rest, dict):
        raise ValidationError({"config": ["Advanced (JSON) must be an object, or empty."]})
    config: JSONObject = dict(rest or {})
    errors: dict[str, list[str]] = {}

    def put(key: str, value: Any, field: str) -> None:
        if key in config:
            errors.setdefault(field, []).append(f'This is given twice: here and as "{key}" in Advanced (JSON).')
        else:
            config[key] = value

    if values.get("http_method"):
        config.setdefault("method", values["http_method"])
    if values.get("http_url"):
        put("url", values["http_url"], "http_url")
    for key, field in MAPS.items():
        if values.get(field):
            try:
                put(key, _map_value(values[field], field), field)
            except ValidationError as exc:
                errors.update(exc.message_dict)
    kind, names = values.get("http_body_kind"), (values.get("http_body_arguments") or "").strip()
    if kind and not names:
        errors["http_body_arguments"] = ["Name the argument(s) the body is made of."]
    elif kind == "argument":
        put("body", {"argument": names}, "http_body_kind")
    elif kind == "arguments":
        put("body", {"arguments": [n.strip() for n in names.split(",") if n.strip()]}, "http_body_kind")
    shared: JSONObject | None = None
    if values.get("http_auth_type"):
        shared = {"type": values["http_auth_type"]}
        for key, field in AUTH_FIELDS.items():
            if values.get(field) and key in AUTH_KEYS[shared["type"]]:
                shared[key] = values[field]
    try:
        auth = acting_join(values, shared, ACTING_PREFIX, upstream=False)
    except ValidationError as exc:
        errors.update(exc.message_dict)
    else:
        if auth is not None:
            put("auth", auth, "http_auth_type" if auth is shared else f"{ACTING_PREFIX}acts_as")
    timeout = (values.get("http_timeout") or "").strip()
    if timeout:
        try:
            number = json.loads(timeout)
            if isinstance(number, bool) or not isinstance(number, int | float):
                raise ValueError
        except ValueError:
            errors["http_timeout"] = ["A number of seconds, such as 30 or 2.5."]
        else:
            put("timeout", number, "http_timeout")
    if errors:
        raise ValidationError(errors)
    return config


class HttpSectionForm(acting_fields(ACTING_PREFIX, upstream=False), BackendSectionForm):  # type: ignore[misc]
    backend = Backend.HTTP
    models = (Tool,)
    section_title = "HTTP request"
    secret_field = "http_auth_secret"
    section_fields = (
        "http_section",
        "http_method",
        "http_url",
        "http_query",
        "http_headers",
        "http_static_headers",
        "http_body_kind",
        "http_body_arguments",
        "http_timeout",
        *acting_field_names(ACTING_PREFIX, upstream=False),
        "http_auth_type",
        "http_auth_secret",
        "http_auth_name",
        "http_auth_client_id",
        "http_auth_token_url",
        "http_auth_scope",
    )

    http_section = section_marker()
    http_method = forms.ChoiceField(choices=[(m, m) for m in METHODS], initial="GET", required=False, label="Method")
    http_url = forms.CharField(
        required=False,
        max_length=2048,
        label="URL template",
        help_text="RFC 6570, e.g. https://api.example/pets/{id}{?limit}: each {name} is an argument.",
    )
    http_query = _map_field("Query parameters", "One a line: parameter = argument.")
    http_headers = _map_field("Headers from arguments", "One a line: Header-Name = argument.")
    http_static_headers = _map_field(
        "Fixed headers", "One a line: Header-Name = value (sent as written; credentials belong in a secret)."
    )
    http_body_kind = forms.ChoiceField(choices=BODY_CHOICES, required=False, label="Body")
    http_body_arguments = forms.CharField(
        required=False, max_length=2000, label="Body arguments", help_text="Argument names, separated by commas."
    )
    http_timeout = forms.CharField(
        required=False, max_length=20, label="Timeout (seconds)", help_text="Empty: the platform's default."
    )
    http_auth_type = forms.ChoiceField(choices=AUTH_CHOICES, required=False, label="Authentication")
    http_auth_secret = secret_name_field()
    http_auth_name = forms.CharField(
        required=False, max_length=128, label="Header or parameter name", help_text="For an API key, e.g. X-API-Key."
    )
    http_auth_client_id = forms.CharField(required=False, max_length=255, label="OAuth client id")
    http_auth_token_url = forms.CharField(required=False, max_length=2048, label="OAuth token URL")
    http_auth_scope = forms.CharField(required=False, max_length=500, label="OAuth scope")

    @classmethod
    def split(cls, config: Any) -> tuple[JSONObject, Any]:
        return http_config_split(config)

    @classmethod
    def join(cls, values: dict[str, Any], rest: Any) -> Any:
        return http_config_join(values, rest)

    @classmethod
    def offer(cls, form: forms.BaseForm, tenant_ids: Collection[int] | None) -> None:
        instance = getattr(form, "instance", None)
        tenant_id = instance.tenant_id if instance is not None and instance.pk is not None else None
        secret_names_offer(form, "http_auth_secret", tenant_ids, tenant_id=tenant_id)
        secret_names_offer(form, f"{ACTING_PREFIX}person_client_secret", tenant_ids, tenant_id=tenant_id)

    @classmethod
    def secret_field_for(cls, config: Any, name: str) -> str | None:
        auth = config.get("auth") if isinstance(config, dict) else None
        return personal_secret_field(auth, name, ACTING_PREFIX) or cls.secret_field

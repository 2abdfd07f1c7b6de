"""The "Acts as" fields of the forms that configure authentication (an upstream's, an HTTP tool's section, the OpenAPI
import): the tenant's shared credentials (each form's own fields, as before), or each person's own OAuth connection,
API key or exchanged token (the personal configs of ``tenants.outbound_auth``), and what machine clients use then.

A form mixes in ``acting_fields(prefix)`` (fields ``<prefix>acts_as``, ``<prefix>person_*``, ``<prefix>machine``);
``acting_split`` reads a stored config into them and the shared config, ``acting_join`` writes them back and checks the
result with ``auth_errors`` (refusals on the field they are about).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from tenants.admin.secret_picker import secret_name_field
from tenants.outbound_auth import AUTH_KEYS, PERSONAL_AUTH_KEYS, PERSONAL_AUTH_TYPES, auth_errors

TENANT = "tenant"
ACTS_AS_CHOICES = [
    (TENANT, "The tenant (shared credentials)"),
    ("user_oauth", "Each person: OAuth connection"),
    ("user_key", "Each person: own API key"),
    ("token_exchange", "Each person: token exchange"),
]
CLIENT_CHOICES = [
    ("metadata_document", "Client ID metadata document (recommended)"),
    ("dynamic", "Dynamic registration"),
    ("manual", "Client ID and secret entered here"),
]
REFUSED, SHARED = "refused", "shared"
MACHINE_CHOICES = [(REFUSED, "Refused"), (SHARED, "Use the tenant's shared credentials")]
PLACEMENT_CHOICES = [
    ("bearer", "Bearer token (Authorization header)"),
    ("header", "In a header"),
    ("query", "In the query"),
]
# Each person field: the config keys it holds, by kind of personal config.
PERSON_KEYS: dict[str, dict[str, str]] = {
    "user_oauth": {
        "issuer": "issuer",
        "authorization_endpoint": "authorization_endpoint",
        "token_endpoint": "token_endpoint",
        "revocation_endpoint": "revocation_endpoint",
        "client": "client",
        "client_id": "client_id",
        "client_secret": "secret",
        "scope": "scope",
        "resource": "resource",
    },
    "user_key": {"placement": "placement", "key_name": "name", "label": "label"},
    "token_exchange": {"client_id": "client_id", "client_secret": "secret", "audience": "audience", "scope": "scope"},
}
# Fields that take the choice's first value when empty (a script or an older page may post them empty).
CHOICE_DEFAULTS = {"client": "metadata_document", "placement": "bearer"}


def _url_field(label: str, help_text: str) -> forms.CharField:
    return forms.CharField(required=False, max_length=2048, label=label, help_text=help_text)


def person_fields(*, upstream: bool) -> dict[str, forms.Field]:
    """The fields of the personal kinds, by name (without prefix). ``upstream``: an MCP server, whose authorization
    server is discovered and whose resource is its URL; its key never goes in the query."""
    issuer_help = (
        "Empty: discovered from the upstream (its protected resource metadata)."
        if upstream
        else "The issuer URL of the API's authorization server (its metadata is read); or both endpoints below."
    )
    fields: dict[str, forms.Field] = {
        "issuer": _url_field("Authorization server (issuer)", issuer_help),
        "authorization_endpoint": _url_field("Authorization endpoint", "Only for a server that publishes no metadata."),
        "token_endpoint": _url_field("Token endpoint", "Only with the authorization endpoint."),
        "revocation_endpoint": _url_field("Revocation endpoint", "Optional (RFC 7009): Disconnect revokes there."),
        "client": forms.ChoiceField(
            choices=CLIENT_CHOICES,
            required=False,
            label="OAuth client",
            help_text="How the platform is known to the authorization server.",
        ),
        "client_id": forms.CharField(
            required=False,
            max_length=255,
            label="Client ID",
            help_text="OAuth entered here: the client registered at the server. Token exchange: this tenant's "
            "confidential client that exchanges.",
        ),
        "client_secret": secret_name_field(
            "The tenant's secret holding that client's secret (empty: a public client)."
        ),
        "scope": forms.CharField(required=False, max_length=500, label="Scope", help_text="Space-separated."),
        "placement": forms.ChoiceField(
            choices=PLACEMENT_CHOICES[:2] if upstream else PLACEMENT_CHOICES,
            required=False,
            label="Key sent as",
        ),
        "key_name": forms.CharField(
            required=False, max_length=128, label="Key header or parameter", help_text="For a header or the query."
        ),
        "label": forms.CharField(
            required=False,
            max_length=100,
            label="What the key is called",
            help_text="Shown to people when they are asked for it, e.g. Weather API key.",
        ),
        "audience": _url_field("Audience", "Token exchange: the resource URL the exchanged token is for."),
    }
    fields["client_secret"].label = "Client secret"
    if not upstream:
        fields["resource"] = _url_field("Resource (RFC 8707)", "Optional: the resource the tokens are asked for.")
    return fields


def acting_fields(prefix: str, *, upstream: bool) -> type[forms.Form]:
    """A form mixin declaring ``<prefix>acts_as``, the ``<prefix>person_*`` fields and ``<prefix>machine``."""
    declared: dict[str, Any] = {
        f"{prefix}acts_as": forms.ChoiceField(choices=ACTS_AS_CHOICES, required=False, initial=TENANT, label="Acts as"),
        **{f"{prefix}person_{name}": field for name, field in person_fields(upstream=upstream).items()},
        f"{prefix}machine": forms.ChoiceField(
            choices=MACHINE_CHOICES,
            required=False,
            label="Machine clients",
            help_text="Clients that call with no person (client credentials): refused, or they use the shared "
            "credentials below.",
        ),
    }
    return type(f"ActingFields{prefix.title().replace('_', '')}", (forms.Form,), declared)


def acting_field_names(prefix: str, *, upstream: bool) -> tuple[str, ...]:
    """The mixin's field names, in the order a page shows them."""
    return (
        f"{prefix}acts_as",
        *(f"{prefix}person_{name}" for name in person_fields(upstream=upstream)),
        f"{prefix}machine",
    )


def acting_fits(auth: Any) -> bool:
    """Whether the fields hold ``auth`` as written: none, a personal config of string values whose keys they have
    (and whose machine config is a shared one), or a shared config (the form's own fields hold those)."""
    if not isinstance(auth, dict) or auth.get("type") not in PERSONAL_AUTH_TYPES:
        return True
    kind = auth["type"]
    held = set(PERSON_KEYS[kind].values()) | {"type", "machine"}
    if not set(auth) <= held or not all(isinstance(auth[key], str) for key in set(auth) - {"machine"}):
        return False
    machine = auth.get("machine")
    return machine is None or (isinstance(machine, dict) and machine.get("type") in AUTH_KEYS)


def acting_split(auth: Any, prefix: str) -> tuple[dict[str, Any], Any]:
    """(the mixin's initial values, the shared config the form's own fields show) of a stored ``auth``: a personal
    config's machine config is the shared one."""
    if not isinstance(auth, dict) or auth.get("type") not in PERSONAL_AUTH_TYPES:
        return {f"{prefix}acts_as": TENANT, f"{prefix}machine": REFUSED}, auth
    kind = auth["type"]
    values: dict[str, Any] = {
        f"{prefix}acts_as": kind,
        f"{prefix}machine": SHARED if isinstance(auth.get("machine"), dict) else REFUSED,
    }
    for name, key in PERSON_KEYS[kind].items():
        if key in auth:
            values[f"{prefix}person_{name}"] = auth[key]
    return values, auth.get("machine")


def personal_config(values: Mapping[str, Any], prefix: str) -> dict[str, Any] | None:
    """The personal config the fields ``values`` describe, without its machine config; None for the tenant's."""
    kind = values.get(f"{prefix}acts_as") or TENANT
    if kind == TENANT:
        return None
    config: dict[str, Any] = {"type": kind}
    for name, key in PERSON_KEYS[kind].items():
        value = values.get(f"{prefix}person_{name}")
        value = value.strip() if isinstance(value, str) else value
        if not value and name in CHOICE_DEFAULTS:
            value = CHOICE_DEFAULTS[name]
        if value:
            config[key] = value
    # A key sent as a bearer token needs no name; a name typed meanwhile is not kept.
    if kind == "user_key" and config.get("placement") == "bearer":
        config.pop("name", None)
    return config


def machine_shared(values: Mapping[str, Any], prefix: str) -> bool:
    return values.get(f"{prefix}machine") == SHARED


def field_of(problem: str, prefix: str) -> str:
    """The field a problem ``auth_errors`` found is about (the "Acts as" choice where none is named)."""
    if problem.startswith("machine clients:") or '"machine"' in problem:
        return f"{prefix}machine"
    for kind in PERSON_KEYS.values():
        for name, key in kind.items():
            if f'"{key}"' in problem:
                return f"{prefix}person_{name}"
    return f"{prefix}acts_as"


def personal_errors(config: dict[str, Any], prefix: str, *, upstream: bool) -> dict[str, list[str]]:
    """Why ``config`` (personal, with its machine config if any) cannot be saved, by field."""
    errors: dict[str, list[str]] = {}
    for problem in auth_errors(config, issuer_required=not upstream):
        errors.setdefault(field_of(problem, prefix), []).append(problem)
    return errors


def acting_join(values: Mapping[str, Any], shared: dict[str, Any] | None, prefix: str, *, upstream: bool) -> Any:
    """The auth config of the mixin's cleaned ``values`` and the ``shared`` config the form's own fields made: the
    shared one where the tenant acts, else the personal one with ``shared`` for machine clients where chosen.
    Raises ``ValidationError`` (a dict by field)."""
    config = personal_config(values, prefix)
    if config is None:
        return shared
    if machine_shared(values, prefix):
        if shared is None:
            raise ValidationError(
                {f"{prefix}machine": ["Choose the shared credentials machine clients use (below), or refuse them."]}
            )
        config["machine"] = shared
    errors = personal_errors(config, prefix, upstream=upstream)
    if errors:
        raise ValidationError(errors)
    return config


def personal_secret_field(auth: Any, name: str, prefix: str) -> str | None:
    """The mixin's field that picked the secret ``name`` of ``auth`` (a personal config's client secret), or None."""
    if isinstance(auth, dict) and auth.get("type") in PERSONAL_AUTH_KEYS and auth.get("secret") == name:
        return f"{prefix}person_client_secret"
    return None

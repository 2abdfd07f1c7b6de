"""The tenant domain's versioned models, one entry each, and the services a version goes back through.

Versioned: the catalog's tools, resources, templates and prompts of the tenant's own (rows mirrored from an upstream
are not: a refresh would flood the history; what the tenant decides about them, ``Upstream.overrides`` and
``excluded``, is versioned with the upstream), upstreams (without their health), OpenAPI sources (one version per
import, whose tools join the same revision), the tenant's named servers (with their selections), and the tenant's own
settings. Never versioned: secrets, personal credentials, memberships, invitations. A later model is one more entry
in ``tenants_versioned_register``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError

from tenants import services
from tenants.federation.connection import UpstreamFailure
from tenants.federation.services import upstream_add, upstream_items_update, upstream_update
from tenants.history.versioned import JSONObject, Versioned, restore_through, versioned_register
from tenants.models import OpenApiSource, Prompt, Resource, ResourceTemplate, Server, Tenant, Tool, Upstream
from tenants.outbound_auth import auth_secret_names
from tenants.secret_references import secret_names_in
from tenants.servers import server_create, server_update

# In the order the history pages show them.
TOOL_FIELDS = (
    *("name", "title", "description", "enabled", "backend", "config", "input_schema", "output_schema"),
    *("annotations", "icons", "task_support", "required_scopes", "tags", "openapi_source"),
)
RESOURCE_FIELDS = ("uri", "name", "title", "description", "mime_type", "text", "blob", "annotations", "tags")
TEMPLATE_FIELDS = (
    *("name", "uri_template", "title", "description", "mime_type", "backend", "config", "completions", "tags"),
)
PROMPT_FIELDS = ("name", "title", "description", "backend", "config", "arguments", "messages", "completions", "tags")
UPSTREAM_FIELDS = (
    *("name", "url", "prefix", "enabled", "auth", "session_mode", "session_tools", "excluded", "overrides"),
    *("change_policy", "withhold_incompatible"),
)
OPENAPI_SOURCE_FIELDS = (
    *("name", "location", "prefix", "base_url", "secret_name", "client_id", "change_policy", "withhold_incompatible"),
    *("document_sha256", "imported_at"),
)
SERVER_FIELDS = ("slug", "title", "instructions", "enabled", "required_scopes", "selection")
TENANT_FIELDS = (
    *("name", "slug", "status", "instructions", "allowed_origins", "requires_authorization", "cache_ttl_ms"),
    *("cache_scope", "activity_record_arguments", "activity_retention_days", "outbound_allowed_networks"),
)
ITEM_ITEMS = ("excluded", "overrides")


def _own(obj: Any) -> bool:
    # Mirrored rows change at every refresh of their upstream; the tenant's decisions about them are the upstream's.
    return obj.upstream_id is None


def _backend_secrets(values: Mapping[str, Any]) -> list[str]:
    return secret_names_in(str(values.get("backend") or ""), values.get("config"))


def _tool_refusal(current: Tool | None, values: Mapping[str, Any]) -> str:
    if current is None and values.get("openapi_source") is not None:
        return "This tool was made by an OpenAPI import: import its source again to bring it back."
    return ""


def _upstream_restore(current: Upstream | None, tenant: Tenant, values: JSONObject) -> Upstream:
    items = {key: values.pop(key) for key in ITEM_ITEMS if key in values}
    if current is None:
        try:
            current, _ = upstream_add(
                tenant=tenant,
                name=values["name"],
                url=values["url"],
                prefix=values.get("prefix", ""),
                auth=values.get("auth"),
                session_mode=values.get("session_mode", Upstream.SessionMode.AUTO),
            )
        except UpstreamFailure as exc:
            raise ValidationError(f"The upstream could not be reached, so it was not added back: {exc}") from None
    upstream_update(upstream=current, data=values)
    excluded = list(items.get("excluded", current.excluded) or [])
    overrides = dict(items.get("overrides", current.overrides) or {})
    if excluded != list(current.excluded or []) or overrides != dict(current.overrides or {}):
        upstream_items_update(upstream=current, excluded=excluded, overrides=overrides)
    return current


def _tenant_restore(current: Tenant | None, tenant: Tenant, values: JSONObject) -> Tenant:
    return services.tenant_update(tenant=tenant, data=values)


def tenants_versioned_register() -> None:
    """Version the tenant domain's models (once, at the history app's ``ready()``)."""
    versioned_register(
        Versioned(
            Tool,
            TOOL_FIELDS,
            restore_through(services.tool_create, services.tool_update, "tool"),
            restorable=tuple(f for f in TOOL_FIELDS if f != "openapi_source"),
            refusal=_tool_refusal,
            keep=_own,
            secrets=_backend_secrets,
        )
    )
    resource_restore = restore_through(services.resource_create, services.resource_update, "resource")
    versioned_register(Versioned(Resource, RESOURCE_FIELDS, resource_restore, keep=_own))
    template_restore = restore_through(services.resource_template_create, services.resource_template_update, "template")
    versioned_register(
        Versioned(ResourceTemplate, TEMPLATE_FIELDS, template_restore, keep=_own, secrets=_backend_secrets)
    )
    prompt_restore = restore_through(services.prompt_create, services.prompt_update, "prompt")
    versioned_register(Versioned(Prompt, PROMPT_FIELDS, prompt_restore, keep=_own, secrets=_backend_secrets))
    versioned_register(
        Versioned(
            Upstream,
            UPSTREAM_FIELDS,
            _upstream_restore,
            secrets=lambda v: auth_secret_names(v.get("auth")),
            saves_unchanged=True,
        )
    )
    versioned_register(
        Versioned(
            OpenApiSource,
            OPENAPI_SOURCE_FIELDS,
            not_restorable="A source changes by importing it again (its page's Import again); each of its tools' own "
            "settings is restored from that tool's history.",
            secrets=lambda v: [v["secret_name"]] if v.get("secret_name") else [],
            recoverable=False,
        )
    )
    versioned_register(Versioned(Server, SERVER_FIELDS, restore_through(server_create, server_update, "server")))
    versioned_register(Versioned(Tenant, TENANT_FIELDS, _tenant_restore, tenant_field="", recoverable=False))

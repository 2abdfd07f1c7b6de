"""Every write to tenants, memberships and catalogs: validate fully, store atomically, publish after commit.

Writes to a tenant's settings and catalog happen in a ``catalog_revision`` (``tenants.history``): each leaves a
version, part of the caller's revision when it opened one.

Refusals are ``ValidationError`` keyed by field. ``*_update`` take a ``data`` mapping of fields to change;
``*_upsert`` create or update by natural key and report which (loaders stay idempotent and quiet).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from django.core.exceptions import ValidationError
from django.db import IntegrityError, models, transaction

from tenants.events import CatalogKind, catalog_changed, resource_updated, tenant_changed
from tenants.history.revisions import (
    catalog_revision,
    note_added,
    note_change,
    note_deleted,
    tenant_history_delete,
)
from tenants.models import (
    Backend,
    Membership,
    Prompt,
    Resource,
    ResourceTemplate,
    TaskSupport,
    Tenant,
    Tool,
    Upstream,
    default_input_schema,
)
from tenants.validation import (
    prompt_validate,
    resource_template_validate,
    resource_validate,
    tenant_validate,
    tool_validate,
)

if TYPE_CHECKING:
    from django.contrib.auth.models import User

M = TypeVar("M", bound=models.Model)
JSONObject = dict[str, Any]


class UpsertOutcome(enum.StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"


TENANT_FIELDS = frozenset(
    {
        "slug",
        "name",
        "status",
        "allowed_origins",
        "instructions",
        "requires_authorization",
        "cache_ttl_ms",
        "cache_scope",
        "outbound_allowed_networks",
        "activity_record_arguments",
        "activity_retention_days",
    }
)
TOOL_FIELDS = frozenset(
    {
        "name",
        "title",
        "description",
        "input_schema",
        "output_schema",
        "annotations",
        "icons",
        "backend",
        "config",
        "task_support",
        "enabled",
        "required_scopes",
        "tags",
    }
)
# What a tool's source writes besides: ``withheld`` (a held change of an upstream or OpenAPI source waits).
TOOL_SOURCE_FIELDS = TOOL_FIELDS | {"withheld"}
RESOURCE_FIELDS = frozenset({"uri", "name", "title", "description", "mime_type", "text", "blob", "annotations", "tags"})
TEMPLATE_FIELDS = frozenset(
    {"name", "uri_template", "title", "description", "mime_type", "backend", "config", "completions", "tags"}
)
PROMPT_FIELDS = frozenset(
    {"name", "title", "description", "arguments", "completions", "messages", "backend", "config", "tags"}
)

# Fields that appear in list results, or choose which servers list the item (tags): changing one of them changes a
# list clients see.
TOOL_LISTED = TOOL_SOURCE_FIELDS - {"backend", "config"}
RESOURCE_LISTED = RESOURCE_FIELDS - {"text", "blob"}
RESOURCE_CONTENT = frozenset({"text", "blob", "mime_type"})
TEMPLATE_LISTED = TEMPLATE_FIELDS - {"backend", "config", "completions"}
PROMPT_LISTED = PROMPT_FIELDS - {"completions", "messages", "backend", "config"}


# ---- shared mechanics --------------------------------------------------------------------------------


def _same(a: Any, b: Any) -> bool:
    # JSON-aware: 1 and True (or 1.0) are different JSON values even though Python calls them equal.
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def _save(instance: models.Model, validate: Callable[[Any], None], update_fields: list[str] | None = None) -> None:
    validate(instance)
    try:
        with transaction.atomic():
            instance.save(update_fields=update_fields)
    except IntegrityError as exc:
        # full_clean checked uniqueness; only a concurrent write of the same key gets here.
        raise ValidationError(f"Another {instance._meta.verbose_name} with the same key was saved meanwhile.") from exc


def _change(instance: M, data: Mapping[str, Any], allowed: frozenset[str], validate: Callable[[M], None]) -> set[str]:
    """Apply ``data`` to ``instance``, validate and save; the set of fields that really changed."""
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ValidationError({field: ["This field cannot be changed here."] for field in unknown})
    previous = {field: getattr(instance, field) for field in data}
    changed = {field for field, value in data.items() if not _same(previous[field], value)}
    if not changed:
        return changed
    for field in changed:
        setattr(instance, field, data[field])
    try:
        _save(instance, validate, update_fields=[*sorted(changed), "updated_at"])
    except ValidationError:
        for field in changed:
            setattr(instance, field, previous[field])
        raise
    return changed


def _full_clean(instance: models.Model) -> None:
    instance.full_clean()


# ---- tenants and memberships -------------------------------------------------------------------------


def tenant_create(
    *,
    slug: str,
    name: str,
    instructions: str = "",
    allowed_origins: list[str] | None = None,
    requires_authorization: bool = False,
    status: str = Tenant.Status.ACTIVE,
    cache_ttl_ms: int | None = None,
    cache_scope: str = "",
    outbound_allowed_networks: list[str] | None = None,
    activity_record_arguments: bool = False,
    activity_retention_days: int = 30,
) -> Tenant:
    """Create a tenant. Raises ``ValidationError``."""
    tenant = Tenant(
        slug=slug,
        name=name,
        instructions=instructions,
        allowed_origins=list(allowed_origins or []),
        requires_authorization=requires_authorization,
        status=status,
        cache_ttl_ms=cache_ttl_ms,
        cache_scope=cache_scope,
        outbound_allowed_networks=list(outbound_allowed_networks or []),
        activity_record_arguments=activity_record_arguments,
        activity_retention_days=activity_retention_days,
    )
    with catalog_revision():
        _save(tenant, tenant_validate)
        note_added(tenant)
    return tenant


def tenant_update(*, tenant: Tenant, data: Mapping[str, Any]) -> Tenant:
    """Change a tenant's fields. Raises ``ValidationError``."""
    with catalog_revision():
        _tenant_change(tenant, data)
    return tenant


def _tenant_change(tenant: Tenant, data: Mapping[str, Any]) -> set[str]:
    with catalog_revision():
        changed = _change(tenant, data, TENANT_FIELDS, tenant_validate)
        if changed:
            tenant_changed(tenant_id=tenant.pk)
            note_change(tenant, changed)
    return changed


def tenant_delete(*, tenant: Tenant) -> None:
    """Delete a tenant with its memberships, whole catalog and history."""
    with transaction.atomic():
        tenant_changed(tenant_id=tenant.pk)
        tenant_history_delete(tenant.pk)
        tenant.delete()


def tenant_upsert(*, slug: str, **fields: Any) -> tuple[Tenant, UpsertOutcome]:
    """Create the tenant ``slug`` or bring the given fields up to date. Raises ``ValidationError``."""
    return _upsert(
        Tenant,
        {"slug": slug},
        fields,
        TENANT_FIELDS,
        tenant_create,
        _tenant_change,
    )


def membership_add(*, tenant: Tenant, user: User, role: str = Membership.Role.MEMBER) -> Membership:
    """Make ``user`` a member of ``tenant`` with ``role`` (changing the role of an existing member)."""
    with transaction.atomic():
        membership = Membership.objects.select_for_update().filter(tenant=tenant, user=user).first()
        if membership is None:
            membership = Membership(tenant=tenant, user=user, role=role)
            _save(membership, _full_clean)
        elif membership.role != role:
            membership.role = role
            _save(membership, _full_clean, update_fields=["role"])
    return membership


def membership_remove(*, tenant: Tenant, user: User) -> bool:
    """End ``user``'s membership of ``tenant``; False when there was none."""
    with transaction.atomic():
        deleted, _ = Membership.objects.filter(tenant=tenant, user=user).delete()
    return deleted > 0


# ---- catalog entries ---------------------------------------------------------------------------------


def _create(instance: M, validate: Callable[[M], None], kind: CatalogKind) -> M:
    with catalog_revision():
        _save(instance, validate)
        catalog_changed(tenant_id=instance.tenant_id, kind=kind)  # type: ignore[attr-defined]
        note_added(instance)
    return instance


def _update(
    instance: M,
    data: Mapping[str, Any],
    allowed: frozenset[str],
    validate: Callable[[M], None],
    kind: CatalogKind,
    listed: frozenset[str],
) -> set[str]:
    with catalog_revision():
        changed = _change(instance, data, allowed, validate)
        if changed & listed:
            catalog_changed(tenant_id=instance.tenant_id, kind=kind)  # type: ignore[attr-defined]
        note_change(instance, changed)
    return changed


def _delete(instance: models.Model, kind: CatalogKind) -> None:
    with catalog_revision():
        tenant_id = instance.tenant_id  # type: ignore[attr-defined]
        note_deleted(instance)
        instance.delete()
        catalog_changed(tenant_id=tenant_id, kind=kind)


def _upsert(
    model: type[M],
    lookup: dict[str, Any],
    fields: dict[str, Any],
    allowed: frozenset[str],
    create: Callable[..., M],
    update: Callable[[M, dict[str, Any]], set[str]],
) -> tuple[M, UpsertOutcome]:
    unknown = sorted(set(fields) - (allowed - set(lookup)))
    if unknown:
        raise ValidationError({field: ["Unknown field."] for field in unknown})
    with transaction.atomic():
        existing = model.objects.select_for_update().filter(**lookup).first()  # type: ignore[attr-defined]
        if existing is None:
            return create(**lookup, **fields), UpsertOutcome.CREATED
        changed = update(existing, fields)
        return existing, UpsertOutcome.UPDATED if changed else UpsertOutcome.UNCHANGED


# ---- tools -------------------------------------------------------------------------------------------


def tool_create(
    *,
    tenant: Tenant,
    name: str,
    description: str = "",
    title: str = "",
    input_schema: JSONObject | None = None,
    output_schema: JSONObject | None = None,
    annotations: JSONObject | None = None,
    icons: list[JSONObject] | None = None,
    backend: str = Backend.STATIC,
    config: JSONObject | None = None,
    task_support: str = TaskSupport.FORBIDDEN,
    enabled: bool = True,
    required_scopes: str = "",
    tags: list[str] | None = None,
    upstream: Upstream | None = None,
    withheld: str = "",
) -> Tool:
    """Add a tool; ``input_schema`` defaults to ``{"type": "object"}``. Raises ``ValidationError``."""
    tool = Tool(
        tenant=tenant,
        name=name,
        title=title,
        description=description,
        input_schema=default_input_schema() if input_schema is None else input_schema,
        output_schema=output_schema,
        annotations=annotations,
        icons=icons,
        backend=backend,
        config={} if config is None else config,
        task_support=task_support,
        enabled=enabled,
        required_scopes=required_scopes,
        tags=list(tags or []),
        upstream=upstream,
        withheld=withheld,
    )
    return _create(tool, tool_validate, "tools")


def tool_update(*, tool: Tool, data: Mapping[str, Any]) -> Tool:
    """Change a tool's fields (``withheld`` too: its source's services set it). Raises ``ValidationError``."""
    _update(tool, data, TOOL_SOURCE_FIELDS, tool_validate, "tools", TOOL_LISTED)
    return tool


def tool_delete(*, tool: Tool) -> None:
    _delete(tool, "tools")


def tool_upsert(*, tenant: Tenant, name: str, **fields: Any) -> tuple[Tool, UpsertOutcome]:
    """Create the tool ``name`` or bring the given fields up to date. Raises ``ValidationError``."""
    return _upsert(
        Tool,
        {"tenant": tenant, "name": name},
        fields,
        TOOL_FIELDS,
        tool_create,
        lambda tool, data: _update(tool, data, TOOL_FIELDS, tool_validate, "tools", TOOL_LISTED),
    )


# ---- resources ---------------------------------------------------------------------------------------


def resource_create(
    *,
    tenant: Tenant,
    uri: str,
    name: str,
    text: str | None = None,
    blob: str | None = None,
    title: str = "",
    description: str = "",
    mime_type: str = "",
    annotations: JSONObject | None = None,
    tags: list[str] | None = None,
    upstream: Upstream | None = None,
) -> Resource:
    """Add a concrete resource with exactly one of ``text`` or base64 ``blob``. Raises ``ValidationError``."""
    resource = Resource(
        tenant=tenant,
        uri=uri,
        name=name,
        title=title,
        description=description,
        mime_type=mime_type,
        text=text,
        blob=blob,
        annotations=annotations,
        tags=list(tags or []),
        upstream=upstream,
    )
    return _create(resource, resource_validate, "resources")


def _resource_change(resource: Resource, data: Mapping[str, Any]) -> set[str]:
    with transaction.atomic():
        changed = _update(resource, data, RESOURCE_FIELDS, resource_validate, "resources", RESOURCE_LISTED)
        # A moved resource is a list change (sent above); subscribers of the old URI hear nothing more.
        if changed & RESOURCE_CONTENT and "uri" not in changed:
            resource_updated(tenant_id=resource.tenant_id, uri=resource.uri)
    return changed


def resource_update(*, resource: Resource, data: Mapping[str, Any]) -> Resource:
    """Change a resource; new content also notifies its subscribers. Raises ``ValidationError``."""
    _resource_change(resource, data)
    return resource


def resource_delete(*, resource: Resource) -> None:
    _delete(resource, "resources")


def resource_upsert(*, tenant: Tenant, uri: str, **fields: Any) -> tuple[Resource, UpsertOutcome]:
    """Create the resource at ``uri`` or bring the given fields up to date. Raises ``ValidationError``."""
    return _upsert(Resource, {"tenant": tenant, "uri": uri}, fields, RESOURCE_FIELDS, resource_create, _resource_change)


# ---- resource templates ------------------------------------------------------------------------------


def resource_template_create(
    *,
    tenant: Tenant,
    name: str,
    uri_template: str,
    config: JSONObject,
    backend: str = Backend.STATIC,
    title: str = "",
    description: str = "",
    mime_type: str = "",
    completions: dict[str, list[str]] | None = None,
    tags: list[str] | None = None,
    upstream: Upstream | None = None,
) -> ResourceTemplate:
    """Add a resource template. Raises ``ValidationError``."""
    template = ResourceTemplate(
        tenant=tenant,
        name=name,
        uri_template=uri_template,
        title=title,
        description=description,
        mime_type=mime_type,
        backend=backend,
        config=config,
        completions={} if completions is None else completions,
        tags=list(tags or []),
        upstream=upstream,
    )
    return _create(template, resource_template_validate, "resources")


def _template_change(template: ResourceTemplate, data: Mapping[str, Any]) -> set[str]:
    return _update(template, data, TEMPLATE_FIELDS, resource_template_validate, "resources", TEMPLATE_LISTED)


def resource_template_update(*, template: ResourceTemplate, data: Mapping[str, Any]) -> ResourceTemplate:
    """Change a resource template's fields. Raises ``ValidationError``."""
    _template_change(template, data)
    return template


def resource_template_delete(*, template: ResourceTemplate) -> None:
    _delete(template, "resources")


def resource_template_upsert(*, tenant: Tenant, name: str, **fields: Any) -> tuple[ResourceTemplate, UpsertOutcome]:
    """Create the template ``name`` or bring the given fields up to date. Raises ``ValidationError``."""
    return _upsert(
        ResourceTemplate,
        {"tenant": tenant, "name": name},
        fields,
        TEMPLATE_FIELDS,
        resource_template_create,
        _template_change,
    )


# ---- prompts -----------------------------------------------------------------------------------------


def prompt_create(
    *,
    tenant: Tenant,
    name: str,
    messages: list[JSONObject] | None = None,
    title: str = "",
    description: str = "",
    arguments: list[JSONObject] | None = None,
    completions: dict[str, list[str]] | None = None,
    backend: str = Backend.STATIC,
    config: JSONObject | None = None,
    tags: list[str] | None = None,
    upstream: Upstream | None = None,
) -> Prompt:
    """Add a prompt: ``static`` with messages that may use ``{{argument}}`` placeholders, or ``python`` with
    config ``{"function": "<registered name>"}`` and no messages. Raises ``ValidationError``."""
    prompt = Prompt(
        tenant=tenant,
        name=name,
        title=title,
        description=description,
        arguments=[] if arguments is None else arguments,
        completions={} if completions is None else completions,
        messages=[] if messages is None else messages,
        backend=backend,
        config={} if config is None else config,
        tags=list(tags or []),
        upstream=upstream,
    )
    return _create(prompt, prompt_validate, "prompts")


def _prompt_change(prompt: Prompt, data: Mapping[str, Any]) -> set[str]:
    return _update(prompt, data, PROMPT_FIELDS, prompt_validate, "prompts", PROMPT_LISTED)


def prompt_update(*, prompt: Prompt, data: Mapping[str, Any]) -> Prompt:
    """Change a prompt's fields. Raises ``ValidationError``."""
    _prompt_change(prompt, data)
    return prompt


def prompt_delete(*, prompt: Prompt) -> None:
    _delete(prompt, "prompts")


def prompt_upsert(*, tenant: Tenant, name: str, **fields: Any) -> tuple[Prompt, UpsertOutcome]:
    """Create the prompt ``name`` or bring the given fields up to date. Raises ``ValidationError``."""
    return _upsert(Prompt, {"tenant": tenant, "name": name}, fields, PROMPT_FIELDS, prompt_create, _prompt_change)

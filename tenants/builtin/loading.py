"""Declarative catalogs: a ``CatalogSpec`` stored idempotently through the services.

Every field a spec leaves out is reset to its default, so loading the same spec twice changes nothing
and editing a spec and loading it again converges the database on it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Field, Model

from tenants import services
from tenants.backends.python_grants import python_functions_grant
from tenants.history.revisions import catalog_revision
from tenants.models import Backend, Prompt, Resource, ResourceTemplate, Tenant, Tool
from tenants.services import UpsertOutcome

JSONObject = dict[str, Any]


def _defaults(model: type[Model], fields: frozenset[str]) -> JSONObject:
    """What a spec that leaves a service field out resets it to: the model field's default, for every field that
    may be left out (required ones, such as names, have none)."""
    found: JSONObject = {}
    for name in sorted(fields):
        model_field = model._meta.get_field(name)
        assert isinstance(model_field, Field), name  # service fields are the model's own columns
        if model_field.has_default() or model_field.null or model_field.blank:
            found[name] = model_field.get_default()
    return found


TENANT_DEFAULTS = _defaults(Tenant, services.TENANT_FIELDS)
TOOL_DEFAULTS = _defaults(Tool, services.TOOL_FIELDS)
RESOURCE_DEFAULTS = _defaults(Resource, services.RESOURCE_FIELDS)
TEMPLATE_DEFAULTS = _defaults(ResourceTemplate, services.TEMPLATE_FIELDS)
PROMPT_DEFAULTS = _defaults(Prompt, services.PROMPT_FIELDS)


@dataclass(frozen=True)
class CatalogSpec:
    """A tenant and its whole catalog, each entry given as the keyword arguments of its create service."""

    slug: str
    tenant: JSONObject
    tools: list[JSONObject] = field(default_factory=list)
    resources: list[JSONObject] = field(default_factory=list)
    templates: list[JSONObject] = field(default_factory=list)
    prompts: list[JSONObject] = field(default_factory=list)


@dataclass(frozen=True)
class LoadStep:
    kind: str
    key: str
    outcome: UpsertOutcome

    def __str__(self) -> str:
        return f"{self.kind} {self.key}: {self.outcome}"


def _each(
    kind: str,
    key_field: str,
    entries: list[JSONObject],
    defaults: JSONObject,
    upsert: Callable[..., Any],
    tenant: Tenant,
) -> list[LoadStep]:
    steps = []
    for entry in entries:
        fields = {**defaults, **entry}
        key = fields.pop(key_field)
        _, outcome = upsert(tenant=tenant, **{key_field: key}, **fields)
        steps.append(LoadStep(kind, key, outcome))
    return steps


def spec_python_functions(spec: CatalogSpec) -> set[str]:
    """The registered Python functions the spec's tools, templates and prompts bind."""
    entries = [*spec.tools, *spec.templates, *spec.prompts]
    return {entry["config"]["function"] for entry in entries if entry.get("backend") == Backend.PYTHON}


def catalog_load(spec: CatalogSpec) -> tuple[Tenant, list[LoadStep]]:
    """Create or update the spec's tenant and every entry of its catalog, in one transaction.

    A built-in fixture grants its tenant the Python functions its catalog binds (reserved packages only to the
    tenants they are reserved for). Entries the database has but the spec does not are left alone. Raises
    ``ValidationError``.
    """
    # One revision of the catalog's history for the whole load (a reload that changed nothing adds none).
    with catalog_revision(comment=f"Loaded the built-in catalog {spec.slug}"):
        tenant, outcome = services.tenant_upsert(slug=spec.slug, **{**TENANT_DEFAULTS, **spec.tenant})
        steps = [LoadStep("tenant", spec.slug, outcome)]
        python_functions_grant(tenant=tenant, functions=spec_python_functions(spec))
        steps += _each("tool", "name", spec.tools, TOOL_DEFAULTS, services.tool_upsert, tenant)
        steps += _each("resource", "uri", spec.resources, RESOURCE_DEFAULTS, services.resource_upsert, tenant)
        steps += _each(
            "resource template",
            "name",
            spec.templates,
            TEMPLATE_DEFAULTS,
            services.resource_template_upsert,
            tenant,
        )
        steps += _each("prompt", "name", spec.prompts, PROMPT_DEFAULTS, services.prompt_upsert, tenant)
    return tenant, steps

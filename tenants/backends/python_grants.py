"""Which registered Python functions a tenant may bind: grants made by platform staff, and packages reserved for
the built-in tenants whose fixtures register them (``conformance.*`` for ``conformance``, ``bench.*`` for
``bench``). Validation asks ``python_function_binding_problem`` before a tool, template or prompt is stored.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable

from django.core.exceptions import ValidationError
from django.db import transaction

from tenants.backends.registry import PythonRegistry, default_registry
from tenants.models import Backend, Prompt, PythonFunctionGrant, ResourceTemplate, Tenant, Tool


def grant_problem(tenant: Tenant, function: str, *, registry: PythonRegistry = default_registry) -> str | None:
    """Why ``function`` cannot be granted to ``tenant``, or None."""
    if registry.function(function) is None:
        return f"No Python function named {function!r} is registered."
    reserved = registry.reserved_for(function)
    if reserved is not None and tenant.slug not in reserved:
        owners = ", ".join(repr(slug) for slug in sorted(reserved))
        return f"{function!r} belongs to the built-in tenant {owners}; it cannot be granted to {tenant.slug!r}."
    return None


def grantable_functions(tenant: Tenant | None, *, registry: PythonRegistry = default_registry) -> list[str]:
    """The registered functions ``tenant`` may be granted (those reserved for another tenant left out); without a
    tenant, those any tenant may be granted."""
    slug = tenant.slug if tenant is not None else None
    return [
        name
        for name in registry.names()
        if (reserved := registry.reserved_for(name)) is None or (slug is not None and slug in reserved)
    ]


def python_function_grant(*, tenant: Tenant, function: str) -> PythonFunctionGrant:
    """Allow ``tenant`` to bind ``function`` (idempotent). Raises ``ValidationError``."""
    problem = grant_problem(tenant, function)
    if problem is not None:
        raise ValidationError({"function": [problem]})
    grant, _ = PythonFunctionGrant.objects.get_or_create(tenant=tenant, function=function)
    return grant


def python_functions_grant(*, tenant: Tenant, functions: Iterable[str]) -> None:
    """Grant each of ``functions`` (a built-in fixture grants what its catalog binds). Raises ``ValidationError``."""
    with transaction.atomic():
        for function in sorted(set(functions)):
            python_function_grant(tenant=tenant, function=function)


def python_function_uses(*, tenant: Tenant, function: str) -> list[str]:
    """The tenant's tools, templates and prompts that bind ``function``, as "tool echo" etc."""
    uses = []
    for label, model in (("tool", Tool), ("resource template", ResourceTemplate), ("prompt", Prompt)):
        rows = model.objects.filter(tenant=tenant, backend=Backend.PYTHON, config__function=function)  # type: ignore[attr-defined]
        uses += [f"{label} {name}" for name in rows.values_list("name", flat=True)]
    return uses


def python_function_revoke(*, tenant: Tenant, function: str) -> None:
    """Withdraw a grant. Raises ``ValidationError`` while the tenant's catalog still binds the function."""
    with transaction.atomic():
        uses = python_function_uses(tenant=tenant, function=function)
        if uses:
            raise ValidationError(
                {"function": [f"{function!r} is still bound by {', '.join(uses)}: change or delete those first."]}
            )
        PythonFunctionGrant.objects.filter(tenant=tenant, function=function).delete()


def python_functions_granted(*, tenant_id: int) -> list[str]:
    return sorted(PythonFunctionGrant.objects.filter(tenant_id=tenant_id).values_list("function", flat=True))


def python_function_binding_problem(
    *, tenant_id: int | None, function: str, registry: PythonRegistry = default_registry
) -> str | None:
    """Why the tenant may not bind ``function`` now (no grant, or reserved for another tenant), or None."""
    if tenant_id is None:
        return None  # the model's own validation reports the missing tenant
    tenant = Tenant.objects.filter(pk=tenant_id).only("slug").first()
    if tenant is None:
        return None
    reserved = registry.reserved_for(function)
    if reserved is not None and tenant.slug not in reserved:
        return grant_problem(tenant, function, registry=registry)
    if not PythonFunctionGrant.objects.filter(tenant_id=tenant_id, function=function).exists():
        return (
            f"Tenant {tenant.slug!r} may not bind the Python function {function!r}: platform staff grant functions "
            "per tenant (Python function grants in the admin)."
        )
    return None


def function_help(name: str, *, registry: PythonRegistry = default_registry) -> str:
    """``name(signature)`` and the first line of its docstring, for the admin's list of choices."""
    function = registry.function(name)
    if function is None:
        return name
    try:
        # eval_str: modules with ``from __future__ import annotations`` keep their annotations as strings.
        parameters = list(inspect.signature(function, eval_str=True).parameters.values())[1:]  # [0] is ctx
    except (NameError, TypeError, ValueError):
        parameters = list(inspect.signature(function).parameters.values())[1:]
    signature = "(" + ", ".join(str(p) for p in parameters) + ")"
    doc = (inspect.getdoc(function) or "").strip().splitlines()
    return f"{name}{signature}" + (f" - {doc[0]}" if doc else "")

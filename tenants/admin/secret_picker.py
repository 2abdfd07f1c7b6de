"""The secret picker of the admin's forms (an HTTP tool's, an upstream's and an OpenAPI source's authentication): a
select of the names of the tenant's secrets, never their values, and the check at save that the name picked is a
secret of the tenant the form saves into."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from django import forms

from tenants.models import Secret, Tenant
from tenants.secret_references import secret_missing_message, secrets_missing


def secret_choices(tenant_ids: Collection[int] | None, *, tenant_id: int | None, keep: str = "") -> list[Any]:
    """The picker's choices: names of one tenant's secrets, or grouped by tenant while no tenant is set (None:
    every tenant's). ``keep`` (a stored or posted name that no secret has) stays offered, marked, so the form opens
    without loss; saving it is refused by ``secrets_refuse_missing``."""
    secrets = Secret.objects.select_related("tenant").order_by("tenant__slug", "name")
    if tenant_id is not None:
        secrets = secrets.filter(tenant_id=tenant_id)
    elif tenant_ids is not None:
        secrets = secrets.filter(tenant_id__in=tenant_ids)
    choices: list[Any] = [("", "---------")]
    if tenant_id is not None:
        names = [s.name for s in secrets]
        choices += [(n, n) for n in names]
    else:
        by_tenant: dict[str, list[str]] = {}
        for secret in secrets:
            by_tenant.setdefault(secret.tenant.slug, []).append(secret.name)
        names = sorted({n for group in by_tenant.values() for n in group})
        choices += [(slug, [(n, n) for n in group]) for slug, group in by_tenant.items()]
    if keep and keep not in names:
        choices.append((keep, f"{keep} (no such secret)"))
    return choices


def secret_name_field(
    help_text: str = "One of the tenant's secrets (Secrets in the admin), by name.",
) -> forms.ChoiceField:
    """A picker labelled "Secret"; its choices are set per form by ``secret_names_offer``."""
    return forms.ChoiceField(required=False, label="Secret", help_text=help_text)


def secret_names_offer(
    form: forms.BaseForm, name: str, tenant_ids: Collection[int] | None, *, tenant_id: int | None
) -> None:
    """Offer in ``form``'s picker ``name`` the secrets of ``tenant_id`` (the tenant of a stored row, which stays
    with it), else of ``tenant_ids`` (those the person administers; None: every tenant's), grouped by tenant. The
    name stored or posted stays chosen."""
    field = form.fields.get(name)
    if not isinstance(field, forms.ChoiceField):
        return
    keep = str(form.initial.get(name) or "")
    if form.is_bound:
        keep = str(form.data.get(form.add_prefix(name)) or keep)
    field.choices = secret_choices(tenant_ids, tenant_id=tenant_id, keep=keep)


def secrets_refuse_missing(form: forms.BaseForm, field: str | None, *, tenant: Tenant, names: Iterable[str]) -> None:
    """An error on ``field`` for each of ``names`` that is not a secret of ``tenant``: said at save, not as a failed
    call later."""
    for name in secrets_missing(tenant=tenant, names=names):
        form.add_error(field, secret_missing_message(name, tenant))

"""What an admin save or delete changed: who, what, the changed fields before and after, sent as ``admin_changed``
for the activity log to record (which redacts secret values). Called from ``TenantScopedAdmin``, so every scoped
admin class and inline is audited without a line of its own. Bulk changes (an OpenAPI import, an upstream refresh)
go into the admin's history (``LogEntry``) here, one entry per row, as the admin's own edits do."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib.admin.models import ADDITION, DELETION, LogEntry
from django.contrib.admin.models import CHANGE as CHANGE_FLAG
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.db import models
from django.dispatch import Signal
from django.http import HttpRequest

from tenants.bulk_changes import CHANGE, CREATE, DELETE, BulkChange
from tenants.models import Tenant

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class AdminChange:
    """One admin save or delete of a tenant's row: ``action`` is create, change or delete; ``before`` and ``after``
    are field values, which may hold secrets (receivers redact)."""

    tenant_id: int
    user_id: int | None
    action: str
    object_type: str
    object_repr: str
    object_id: str
    before: Mapping[str, Any] | None
    after: Mapping[str, Any] | None


# Sent with ``change`` (an ``AdminChange``) for every admin save or delete of a tenant's row.
admin_changed = Signal()


def _safe(value: Any) -> Any:
    """A form or model value as JSON: rows by their name, collections item by item, the rest as text."""
    if isinstance(value, models.Model):
        return str(value)
    if isinstance(value, models.QuerySet | set | frozenset | tuple):
        return [_safe(item) for item in value]
    return json.loads(json.dumps(value, default=str))


def _object_type(obj: models.Model) -> str:
    return str(obj._meta.verbose_name)


def _record(
    *,
    request: HttpRequest,
    tenant_id: int | None,
    action: str,
    obj: models.Model,
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
    object_repr: str | None = None,
) -> None:
    if tenant_id is None:
        return  # platform staff's rows (users, unbound clients): not any tenant's log
    user_id = getattr(request.user, "pk", None)
    change = AdminChange(
        tenant_id=tenant_id,
        user_id=user_id,
        action=action,
        object_type=_object_type(obj),
        object_repr=str(obj) if object_repr is None else object_repr,
        object_id=str(obj.pk),
        before=before,
        after=after,
    )
    admin_changed.send(sender=type(obj), change=change)


def _form_change(form: forms.BaseForm, add: bool) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    changed = [name for name in form.changed_data if name in form.cleaned_data]
    after = {name: _safe(form.cleaned_data[name]) for name in changed}
    if add:
        return None, after
    return {name: _safe(form.initial.get(name)) for name in changed}, after


def audit_form_save(
    *,
    request: HttpRequest,
    form: forms.BaseForm,
    formsets: Iterable[Any] | None,
    add: bool,
    tenant_of: Any,
) -> None:
    """Log the saved ``form`` (and the rows its inline ``formsets`` added, changed or deleted); ``tenant_of(obj)``
    is the tenant id of a row. A change that changed nothing is not logged."""
    obj = getattr(form, "instance", None)
    if isinstance(obj, models.Model):
        before, after = _form_change(form, add)
        if add or after:
            _record(
                request=request,
                tenant_id=tenant_of(obj),
                action="create" if add else "change",
                obj=obj,
                before=before,
                after=after,
            )
    parent_tenant_id = tenant_of(obj) if isinstance(obj, models.Model) else None
    for formset in formsets or ():
        # Filled by the formset's save (commit or not): what Django's own change message lists.
        forms_by_object = {id(f.instance): f for f in getattr(formset, "forms", ())}
        for created in getattr(formset, "new_objects", ()):
            inline_form = forms_by_object.get(id(created))
            after = _form_change(inline_form, True)[1] if inline_form is not None else {}
            _record(
                request=request,
                tenant_id=_tenant_id_of_inline(created, parent_tenant_id),
                action="create",
                obj=created,
                before=None,
                after=after,
            )
        for changed, _ in getattr(formset, "changed_objects", ()):
            inline_form = forms_by_object.get(id(changed))
            if inline_form is None:
                continue
            before, after = _form_change(inline_form, False)
            _record(
                request=request,
                tenant_id=_tenant_id_of_inline(changed, parent_tenant_id),
                action="change",
                obj=changed,
                before=before,
                after=after,
            )
        for deleted in getattr(formset, "deleted_objects", ()):
            audit_delete(request=request, obj=deleted, tenant_id=_tenant_id_of_inline(deleted, parent_tenant_id))


def _tenant_id_of_inline(inline: models.Model, parent_tenant_id: int | None) -> int | None:
    tenant_id = getattr(inline, "tenant_id", None)
    return int(tenant_id) if isinstance(tenant_id, int) else parent_tenant_id


def audit_action(
    *,
    request: HttpRequest,
    tenant_id: int | None,
    action: str,
    obj: models.Model,
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
    object_repr: str | None = None,
) -> None:
    """Log an admin action that is neither a form's save nor a delete (``action``: approve, reject, restore, recover
    ...) on ``obj``, named ``object_repr`` (else as itself), with the values it replaced and those it wrote."""
    _record(
        request=request,
        tenant_id=tenant_id,
        action=action,
        obj=obj,
        before=None if before is None else {k: _safe(v) for k, v in before.items()},
        after=None if after is None else {k: _safe(v) for k, v in after.items()},
        object_repr=object_repr,
    )


def audit_delete(*, request: HttpRequest, obj: models.Model, tenant_id: int | None) -> None:
    """Log the deletion of ``obj`` with its fields as they were (a tenant's own deletion takes its log with it)."""
    if isinstance(obj, Tenant):
        return
    before = {
        field.name: _safe(field.value_from_object(obj))
        for field in obj._meta.concrete_fields
        if not field.primary_key and field.name != "tenant"
    }
    _record(request=request, tenant_id=tenant_id, action="delete", obj=obj, before=before, after=None)


# The user the admin's history names for changes no person made (a schedule, a command): Django's ``LogEntry``
# needs a user. Inactive and without a usable password: it cannot sign in.
SYSTEM_USERNAME = "system"
BULK_VERBS = {CREATE: ("Created", ADDITION), CHANGE: ("Changed", CHANGE_FLAG), DELETE: ("Deleted", DELETION)}


def _system_user_id() -> int:
    user, created = get_user_model().objects.get_or_create(
        username=SYSTEM_USERNAME, defaults={"is_active": False, "is_staff": False}
    )
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return int(user.pk)


def bulk_change_history(sender: object, *, change: BulkChange, **kwargs: object) -> None:
    """``catalog_bulk_changed`` receiver: one entry in the admin's history per row the change created, changed or
    deleted, by the admin who made it or by the ``system`` user (the message names the command or schedule)."""
    if not change.items:
        return
    try:
        user_id = change.actor.user_id if change.actor.user_id is not None else _system_user_id()
        by = "" if change.actor.user_id is not None else f" ({change.actor.label})"
        types = ContentType.objects.get_for_models(*{item.model for item in change.items})
        LogEntry.objects.bulk_create(
            LogEntry(
                user_id=user_id,
                content_type=types[item.model],
                object_id=item.object_id,
                object_repr=item.object_repr[:200],
                action_flag=BULK_VERBS[item.action][1],
                change_message=f"{BULK_VERBS[item.action][0]} by the {change.operation} of {change.source}{by}.",
            )
            for item in change.items
        )
    except Exception:
        logger.exception("could not record the %s of %s in the admin's history", change.operation, change.source)

"""The history pages of every versioned model's admin (``tenants.history``), on the scoped base, so their scoping
is the base's: an object's "History" lists its versions (who, when, what changed) above Django's admin log; a
version's page shows it against the current row field by field and restores it (a POST from that page, through the
services, itself a new version, audited); a model's "Recover deleted" page lists its deleted rows. An admin save is
one revision by the person signed in, whatever services it calls."""

from __future__ import annotations

from typing import Any, ClassVar

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import models
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.text import capfirst
from reversion.models import Version

from tenants.admin.audit import audit_action
from tenants.admin.policy import admin_scope
from tenants.history.diff import field_diffs
from tenants.history.restore import RestorePlan, restore_plan, version_restore
from tenants.history.revisions import catalog_revision
from tenants.history.selectors import (
    VersionRow,
    current_values,
    deleted_versions,
    object_history,
    revision_author,
    version_get,
    version_tenant_id,
)
from tenants.history.versioned import Versioned, field_label, versioned_entry
from tenants.models import Tenant

Roles = frozenset[str]


def _label(model: type[models.Model], name: str) -> str:
    return str(capfirst(field_label(model, name)))


class VersionHistoryAdmin(admin.ModelAdmin):
    """History, version and recovery pages for a model ``tenants.history`` versions (none for the others)."""

    # Declared by ``TenantScoped``, which comes first in the scoped admin's bases.
    view_roles: ClassVar[Roles]
    add_roles: ClassVar[Roles]

    def tenant_id_of(self, obj: models.Model) -> int | None:
        raise NotImplementedError

    @property
    def history_entry(self) -> Versioned | None:
        return versioned_entry(self.model)

    def _url_name(self, view: str) -> str:
        return f"{self.opts.app_label}_{self.opts.model_name}_{view}"

    def get_urls(self) -> list[Any]:
        entry = self.history_entry
        if entry is None:
            return super().get_urls()
        site = self.admin_site
        mine = [
            path(
                "<path:object_id>/history/<int:version_id>/",
                site.admin_view(self.version_view),
                name=self._url_name("version"),
            )
        ]
        if entry.recovers:
            mine.append(path("deleted/", site.admin_view(self.deleted_view), name=self._url_name("deleted")))
        return [*mine, *super().get_urls()]

    # ---- an admin save is one revision -----------------------------------------------------------------------

    def changeform_view(
        self, request: HttpRequest, object_id: str | None = None, form_url: str = "", extra_context: Any = None
    ) -> Any:
        if request.method != "POST" or self.history_entry is None:
            return super().changeform_view(request, object_id, form_url, extra_context)
        with catalog_revision(user=request.user):
            return super().changeform_view(request, object_id, form_url, extra_context)

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        entry = self.history_entry
        if entry is not None and entry.recovers and self.has_add_permission(request):
            extra_context = {
                **(extra_context or {}),
                "recover_deleted_url": reverse(f"admin:{self._url_name('deleted')}"),
            }
        return super().changelist_view(request, extra_context)

    # ---- the object's history ----------------------------------------------------------------------------------

    @property
    def object_history_template(self) -> str | None:  # type: ignore[override]
        return "admin/catalog_history/object_history.html" if self.history_entry is not None else None

    def history_view(self, request: HttpRequest, object_id: str, extra_context: Any = None) -> Any:
        entry = self.history_entry
        if entry is None:
            return super().history_view(request, object_id, extra_context)
        obj = self.get_object(request, unquote(object_id))
        if obj is None:
            raise Http404("No such object.")
        context: dict[str, Any] = {**(extra_context or {}), "history_kept": entry.keep(obj)}
        if entry.keep(obj):
            rows, total = object_history(entry, str(obj.pk))
            context.update(
                versions=[self._row(entry, obj, row) for row in rows],
                versions_total=total,
                versions_older=total - len(rows),
            )
        else:
            context["history_elsewhere"] = self._history_elsewhere(obj)
        if entry.recovers and self.has_add_permission(request):
            context["recover_deleted_url"] = reverse(f"admin:{self._url_name('deleted')}")
        return super().history_view(request, object_id, context)

    def _row(self, entry: Versioned, obj: models.Model, row: VersionRow) -> dict[str, Any]:
        changed = ", ".join(_label(entry.model, name) for name in row.changed)
        return {
            "number": row.number,
            "when": row.version.revision.date_created,
            "who": row.who,
            "comment": row.version.revision.comment,
            "changed": "Created" if row.created else (changed or "Nothing it keeps"),
            "url": reverse(f"admin:{self._url_name('version')}", args=[obj.pk, row.version.pk]),
        }

    def _history_elsewhere(self, obj: models.Model) -> dict[str, str] | None:
        """Where the history of a row kept elsewhere is: a mirrored item's upstream."""
        upstream = getattr(obj, "upstream", None)
        if upstream is None:
            return None
        return {
            "name": str(upstream),
            "url": reverse(f"admin:{upstream._meta.app_label}_{upstream._meta.model_name}_history", args=[upstream.pk]),
        }

    # ---- one version: against the current row, and restored ----------------------------------------------------

    def _stored_or_none(self, object_id: str) -> models.Model | None:
        try:
            return self.model._default_manager.filter(pk=unquote(object_id)).first()
        except (ValueError, ValidationError):
            raise Http404("No such version.") from None

    def version_view(self, request: HttpRequest, object_id: str, version_id: int) -> HttpResponse:
        entry = self.history_entry
        if entry is None:
            raise Http404("No history here.")
        stored = self._stored_or_none(object_id)
        scope = admin_scope(request)
        if stored is not None:
            obj: models.Model | None = self.get_object(request, unquote(object_id))  # another tenant's: 404
            assert obj is not None
            if not self.has_view_or_change_permission(request, obj):
                raise PermissionDenied
            version = version_get(entry, str(obj.pk), version_id)
            may_restore = self.has_change_permission(request, obj)
        else:
            obj = None
            version = version_get(entry, unquote(object_id), version_id)
            if version is None or not scope.allows(version_tenant_id(entry, version), self.view_roles):
                raise Http404("No such version.")
            may_restore = scope.allows(version_tenant_id(entry, version), self.add_roles) and self.has_add_permission(
                request
            )
        if version is None:
            raise Http404("No such version.")
        readonly = set(self.get_readonly_fields(request, obj))
        only = [name for name in entry.restored_fields if name not in readonly]
        plan = restore_plan(version=version, only=only)
        error = ""
        if request.method == "POST":
            if not may_restore:
                raise PermissionDenied
            before = current_before(entry, plan)
            try:
                restored = version_restore(version=version, user=request.user, only=only)
            except ValidationError as exc:
                error = " ".join(exc.messages)
            else:
                return self._restored(request, entry, plan, before, restored)
        return self._version_page(request, entry, obj, version, plan, may_restore, error)

    def _restored(
        self,
        request: HttpRequest,
        entry: Versioned,
        plan: RestorePlan,
        before: dict[str, Any] | None,
        restored: models.Model,
    ) -> Any:
        after = {name: plan.data[name] for name in plan.changes}
        audit_action(
            request=request,
            tenant_id=entry.tenant_id_of(restored),
            action="recover" if before is None else "restore",  # recover: a deleted row made again
            obj=restored,
            before=before,
            after=after,
        )
        if plan.current is None:
            self.log_addition(request, restored, plan.comment)
        else:
            self.log_change(request, restored, plan.comment)
        messages.success(request, f"{plan.comment}. That is its newest version now.")
        self.after_restore(request, restored)
        return HttpResponseRedirect(reverse(f"admin:{self._url_name('history')}", args=[restored.pk]))

    def after_restore(self, request: HttpRequest, restored: models.Model) -> None:
        """What the admin does after a restore, as after a save of the form (nothing by default)."""

    def _version_page(
        self,
        request: HttpRequest,
        entry: Versioned,
        obj: models.Model | None,
        version: Version,
        plan: RestorePlan,
        may_restore: bool,
        error: str,
    ) -> TemplateResponse:
        fields = [(name, _label(entry.model, name)) for name in entry.fields]
        now = current_values(entry, obj) if obj is not None else {}
        diffs = field_diffs(fields, now, plan.values)
        restored = set(plan.data)
        tenant_id = version_tenant_id(entry, version)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"Version {plan.number} of {entry.label()} {version.object_repr}",
            "object": obj,
            "version": version,
            "who": revision_author(version.revision),
            "plan": plan,
            "changed": [d for d in diffs if d.changed],
            "kept": [d for d in diffs if d.changed and d.name not in restored],
            "unchanged": ", ".join(d.label for d in diffs if not d.changed),
            "may_restore": may_restore and not plan.problem,
            "problem": error or plan.problem,
            "tenant": Tenant.objects.filter(pk=tenant_id).first() if tenant_id is not None else None,
            "history_url": reverse(f"admin:{self._url_name('history')}", args=[obj.pk]) if obj is not None else "",
            "deleted_url": reverse(f"admin:{self._url_name('deleted')}") if obj is None and entry.recovers else "",
            "restored_fields": ", ".join(_label(entry.model, name) for name in plan.changes),
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, "admin/catalog_history/version.html", context)

    # ---- deleted rows ------------------------------------------------------------------------------------------

    def deleted_view(self, request: HttpRequest) -> HttpResponse:
        entry = self.history_entry
        if entry is None or not entry.recovers:
            raise Http404("Nothing to recover here.")
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        scope = admin_scope(request)
        versions = deleted_versions(entry, None if scope.everything else scope.tenant_ids(self.view_roles))
        tenants = Tenant.objects.in_bulk({version_tenant_id(entry, v) for v in versions} - {None})
        rows = [
            {
                "name": version.object_repr,
                "tenant": tenants.get(version_tenant_id(entry, version) or 0),
                "when": version.revision.date_created,
                "who": revision_author(version.revision),
                "comment": version.revision.comment,
                "url": reverse(f"admin:{self._url_name('version')}", args=[version.object_id, version.pk]),
            }
            for version in versions
        ]
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"Recover deleted {self.opts.verbose_name_plural}",
            "rows": rows,
            "many_tenants": scope.everything or len(scope.tenant_ids(self.view_roles)) > 1,
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, "admin/catalog_history/deleted.html", context)


def current_before(entry: Versioned, plan: RestorePlan) -> dict[str, Any] | None:
    """The values a restore would replace, of the fields it changes (None: it makes a deleted row again)."""
    if plan.current is None:
        return None
    now = current_values(entry, plan.current)
    return {name: now.get(name) for name in plan.changes}

"""Admin of upstream MCP servers: add one (connecting and mirroring its catalog before the form is accepted),
change its URL, authentication, prefix and exclusions, refresh it now, and see its health and last error.

Mirrored items are edited in the tool, template and prompt admins: a changed name, title, description or enabled
flag is an override that refreshes keep (see ``tenants.federation.mirror``).
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from tenants.admin.scoping import TenantScopedAdmin
from tenants.bulk_changes import SYSTEM, Actor
from tenants.federation.connection import UpstreamFailure
from tenants.federation.services import (
    upstream_add,
    upstream_delete,
    upstream_refresh,
    upstream_update,
    upstream_validate,
)
from tenants.models import Upstream
from tenants.secret_references import secret_missing_message, secrets_missing

AUTH_CHOICES = [
    ("", "None"),
    ("bearer", "Bearer token (a secret)"),
    ("header", "API key in a header (a secret)"),
    ("client_credentials", "OAuth 2.0 client credentials (the client secret is a secret)"),
]
HEALTH_FIELDS = (
    "transport",
    "protocol_version",
    "last_ok_at",
    "last_error",
    "last_error_at",
    "consecutive_failures",
    "circuit_open_until",
    "last_refreshed_at",
)


class UpstreamForm(forms.ModelForm):
    """Authentication as a few plain fields (composed into ``auth``); adding connects and mirrors in ``clean``,
    where a failure can still be shown on the form."""

    auth_type = forms.ChoiceField(choices=AUTH_CHOICES, required=False, label="Authentication")
    auth_secret = forms.CharField(required=False, label="Secret name", help_text="A secret of this tenant.")
    auth_header = forms.CharField(required=False, label="Header name", help_text="For an API key, e.g. X-API-Key.")
    client_id = forms.CharField(required=False, label="OAuth client id")
    token_url = forms.URLField(required=False, label="OAuth token URL", assume_scheme="https")
    scope = forms.CharField(required=False, label="OAuth scope")
    # Who adds the upstream (set per request by ``UpstreamAdmin.get_form``): the admin's history names them.
    actor: Actor = SYSTEM

    class Meta:
        model = Upstream
        fields = ("tenant", "name", "url", "prefix", "enabled", "excluded", "session_mode", "session_tools")
        field_classes = {"url": forms.CharField}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        auth = self.instance.auth or {}
        self.initial.update(
            auth_type=auth.get("type", ""),
            auth_secret=auth.get("secret", ""),
            auth_header=auth.get("name", ""),
            client_id=auth.get("client_id", ""),
            token_url=auth.get("token_url", ""),
            scope=auth.get("scope", ""),
        )
        if "prefix" in self.fields:
            self.fields[
                "prefix"
            ].help_text = "Prepended to its tools', templates' and prompts' names; empty: the name and _."
        if "session_mode" in self.fields:
            # A form that does not send it (an older page, a script) keeps the upstream's mode.
            self.fields["session_mode"].required = False
        self.stored: Upstream | None = None
        self.report = ""

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        # The secret must exist now: a missing one would only show as a failed connection later.
        tenant = cleaned.get("tenant") or (self.instance.tenant if self.instance.tenant_id else None)
        name = cleaned.get("auth_secret") if cleaned.get("auth_type") else None
        if tenant is not None and name and secrets_missing(tenant=tenant, names=[name]):
            self.add_error("auth_secret", secret_missing_message(name, tenant))
        return cleaned

    def clean_session_mode(self) -> str:
        return str(self.cleaned_data.get("session_mode") or self.instance.session_mode)

    def auth(self) -> dict[str, Any] | None:
        data = self.cleaned_data
        kind = data.get("auth_type") or ""
        if not kind:
            return None
        auth: dict[str, Any] = {"type": kind, "secret": data.get("auth_secret", "")}
        if kind == "header":
            auth["name"] = data.get("auth_header", "")
        if kind == "client_credentials":
            auth.update(client_id=data.get("client_id", ""), token_url=data.get("token_url", ""))
            if data.get("scope"):
                auth["scope"] = data["scope"]
        return auth

    # After the model's own checks (uniqueness included), so adding is the last step of validation.
    def _post_clean(self) -> None:  # type: ignore[misc]
        super()._post_clean()  # type: ignore[misc]
        if self.errors:
            return
        cleaned = self.cleaned_data
        try:
            if self.instance.pk is not None:
                self.instance.auth = self.auth()
                upstream_validate(self.instance)
                return
            self.stored, report = upstream_add(
                tenant=cleaned["tenant"],
                name=cleaned["name"],
                url=cleaned["url"],
                prefix=cleaned.get("prefix") or None,
                auth=self.auth(),
                actor=self.actor,
                session_mode=cleaned["session_mode"],
            )
            self.report = str(report)
        except ValidationError as exc:
            self.add_error(None, exc.messages)
        except UpstreamFailure as exc:
            self.add_error(None, f"Could not add the upstream: {exc}")


@admin.register(Upstream)
class UpstreamAdmin(TenantScopedAdmin):
    tenant_path = "tenant"
    form = UpstreamForm
    list_display = ("name", "tenant", "url", "enabled", "health", "last_ok_at", "last_refreshed_at")
    list_filter = ("enabled", "tenant")
    list_select_related = ("tenant",)
    search_fields = ("name", "url", "tenant__slug")
    readonly_fields = (*HEALTH_FIELDS, "created_at", "updated_at")
    actions = ["refresh_now"]

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change, **kwargs)
        return type(form.__name__, (form,), {"actor": Actor.person(request.user)})

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        return [
            (None, {"fields": ["tenant", "name", "url", "prefix", "enabled", "excluded"]}),
            ("Session", {"fields": ["session_mode", "session_tools"]}),
            (
                "Authentication",
                {"fields": ["auth_type", "auth_secret", "auth_header", "client_id", "token_url", "scope"]},
            ),
            ("Health", {"fields": list(HEALTH_FIELDS)}),
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # An upstream stays with its tenant: moving it would move its mirrored items between catalogs.
        return (*self.readonly_fields, "tenant") if obj is not None else tuple(self.readonly_fields)

    @admin.display(description="Health")
    def health(self, upstream: Upstream) -> str:
        if upstream.circuit_open_until is not None and upstream.circuit_open_until > timezone.now():
            return f"circuit open: {upstream.last_error}"[:120]
        if upstream.consecutive_failures:
            return f"failing ({upstream.consecutive_failures}): {upstream.last_error}"[:120]
        return "ok" if upstream.last_ok_at else "never reached"

    def save_model(self, request: HttpRequest, obj: Upstream, form: forms.ModelForm, change: bool) -> None:
        assert isinstance(form, UpstreamForm)
        if not change:
            assert form.stored is not None
            obj.__dict__.update(form.stored.__dict__)
            messages.success(request, f"Upstream {obj.name} added: {form.report}.")
            return
        stored = Upstream.objects.get(pk=obj.pk)
        data = {
            f: form.cleaned_data[f]
            for f in form.changed_data
            if f in ("name", "url", "prefix", "enabled", "excluded", "session_mode", "session_tools")
        }
        auth = form.auth()
        if auth != stored.auth:
            data["auth"] = auth
        upstream_update(upstream=stored, data=data)
        obj.__dict__.update(stored.__dict__)
        if data and stored.enabled:
            # A new prefix, exclusion list, URL or credentials shows in the catalog now, not at the next refresh.
            self.refresh_now(request, Upstream.objects.filter(pk=stored.pk))

    def delete_model(self, request: HttpRequest, obj: Upstream) -> None:
        upstream_delete(upstream=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Upstream]) -> None:
        for upstream in queryset:
            upstream_delete(upstream=upstream)

    @admin.action(description="Refresh the catalogs of the selected upstreams now")
    def refresh_now(self, request: HttpRequest, queryset: QuerySet[Upstream]) -> None:
        for upstream in queryset:
            try:
                report = async_to_sync(upstream_refresh)(upstream.pk, pooled=False, actor=Actor.person(request.user))
            except (UpstreamFailure, ValidationError) as exc:
                text = str(exc) if isinstance(exc, UpstreamFailure) else " ".join(exc.messages)
                messages.error(request, f"{upstream.name}: {text}")
                continue
            level = messages.WARNING if report is not None and report.skipped else messages.SUCCESS
            messages.add_message(request, level, f"{upstream.name}: {report or 'disabled, not refreshed'}.")

"""Admin of upstream MCP servers: add one (connecting and mirroring its catalog before the form is accepted),
change its URL, authentication and prefix, serve or leave out each of its items and give them names and
descriptions of the tenant's own, refresh or test it now, see its health in colour with its last error, and hold
its tools' changes for review (``tenants.admin.held_changes``: the Review changes page).

The overrides set here are stored on the upstream (``Upstream.overrides``) and written by the mirror at every
refresh; an edit on a mirrored item's own page is kept by refreshes too (see ``tenants.federation.mirror``).
"""

from __future__ import annotations

import secrets
from collections.abc import Collection
from typing import Any

from asgiref.sync import async_to_sync
from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.timesince import timesince

from tenants.admin.acting_auth import (
    acting_field_names,
    acting_fields,
    acting_join,
    acting_split,
    personal_config,
    personal_secret_field,
)
from tenants.admin.held_changes import held_changes_view, upstream_held_source
from tenants.admin.scoping import TenantScopedAdmin
from tenants.admin.secret_picker import secret_name_field, secret_names_offer, secrets_refuse_missing
from tenants.bulk_changes import SYSTEM, Actor
from tenants.connections.services import connect_link_create, target_of
from tenants.federation.connection import UpstreamFailure
from tenants.federation.overrides import MAX_DESCRIPTION, UpstreamItem, overrides_errors, upstream_items
from tenants.federation.services import (
    upstream_add,
    upstream_delete,
    upstream_items_update,
    upstream_probe,
    upstream_refresh,
    upstream_update,
    upstream_validate,
)
from tenants.models import Upstream
from tenants.outbound_auth import auth_secret_names
from tenants.pinning.ledger import pending_count

# The shared credentials: every call's when the upstream acts as the tenant, machine clients' when it acts as each
# person and they may use them.
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
# How long a page waits on the upstream (a refresh reads every list; a test only connects and pings).
REFRESH_SECONDS = 30.0
TEST_SECONDS = 15.0
# More items than this are not offered as one form (each posts four fields).
MAX_ITEMS_ON_PAGE = 2000
HEALTH_LABELS = {"ok": "OK", "failing": "Failing", "circuit": "Circuit open", "never": "Never connected"}


def health_state(upstream: Upstream) -> str:
    """``ok``, ``failing``, ``circuit`` (open: calls are refused until it closes) or ``never`` (connected)."""
    if upstream.circuit_open_until is not None and upstream.circuit_open_until > timezone.now():
        return "circuit"
    if upstream.consecutive_failures:
        return "failing"
    if upstream.last_ok_at is not None:
        return "ok"
    return "failing" if upstream.last_error else "never"


def health_html(upstream: Upstream) -> str:
    """The health as a coloured label with words (never colour alone), and the last error with its age."""
    state = health_state(upstream)
    label = format_html('<span class="upstream-health upstream-health-{}">{}</span>', state, HEALTH_LABELS[state])
    if state in ("failing", "circuit") and upstream.last_error:
        when = f"{timesince(upstream.last_error_at)} ago" if upstream.last_error_at else ""
        return format_html(
            '{} <span class="upstream-health-error">{}</span> <span class="upstream-health-when">{}</span>',
            label,
            upstream.last_error[:300],
            when,
        )
    return label


class UpstreamItemForm(forms.Form):
    """One item of the upstream: served or left out, and the name and description the tenant gives it (empty:
    the upstream's). ``item`` is set by the upstream's form, from the posted key."""

    item: UpstreamItem | None = None
    item_url = ""

    key = forms.CharField(widget=forms.HiddenInput, max_length=2100)
    served = forms.BooleanField(required=False, label="Served")
    name = forms.CharField(required=False, max_length=255, label="Name")
    description = forms.CharField(
        required=False, max_length=MAX_DESCRIPTION, label="Description", widget=forms.Textarea(attrs={"rows": 2})
    )


def item_initial(item: UpstreamItem) -> dict[str, Any]:
    """What the page shows: an override, or an edit made on the item's own page (it is one), else empty."""
    name = item.override_name or (item.name if item.served and item.name != item.default_name else "")
    description = item.override_description or (
        item.description if item.served and item.description != item.default_description else ""
    )
    return {"key": item.key, "served": item.served, "name": name, "description": description}


ItemFormSet = forms.formset_factory(
    UpstreamItemForm, extra=0, max_num=MAX_ITEMS_ON_PAGE, absolute_max=MAX_ITEMS_ON_PAGE
)


SHARED_AUTH_FIELDS = ("auth_type", "auth_secret", "auth_header", "client_id", "token_url", "scope")
ACTING_FIELDS = acting_field_names("", upstream=True)
ACTS_AS_HELP = (
    "Whom the upstream's calls act as: the tenant, with the shared credentials below; or each person calling, with "
    "their own OAuth connection, API key or a token exchanged for theirs (they are asked to connect on their first "
    "call). Fill in the fields of the kind chosen."
)
SHARED_HELP = (
    "What the platform authenticates with when the upstream acts as the tenant, and machine clients' calls when it "
    "acts as each person and they may use them."
)
# Auth kinds a person connects to (an OAuth connection, or a key they enter); a token exchange needs no connecting.
CONNECTED_TYPES = ("user_oauth", "user_key")
PERSONAL_ADD_HELP = (
    "An upstream that acts as each person through a token exchange is read (its tools, resources and prompts) with "
    "machine clients' shared credentials, since exchanging needs a person's own request: choose them to add it."
)


class UpstreamForm(acting_fields("", upstream=True), forms.ModelForm):  # type: ignore[misc]
    """Authentication as a few plain fields (composed into ``auth``): who the upstream's calls act as (the tenant, or
    each person through their own OAuth connection, key or an exchanged token) and the tenant's shared credentials.
    Adding connects and mirrors in ``clean``, where a failure can still be shown on the form."""

    auth_type = forms.ChoiceField(choices=AUTH_CHOICES, required=False, label="Authentication")
    auth_secret = secret_name_field()
    auth_header = forms.CharField(required=False, label="Header name", help_text="For an API key, e.g. X-API-Key.")
    client_id = forms.CharField(required=False, label="OAuth client id")
    token_url = forms.URLField(required=False, label="OAuth token URL", assume_scheme="https")
    scope = forms.CharField(required=False, label="OAuth scope")
    # Who adds the upstream (set per request by ``UpstreamAdmin.get_form``): the admin's history names them.
    actor: Actor = SYSTEM

    class Meta:
        model = Upstream
        fields = (
            *("tenant", "name", "url", "prefix", "enabled", "session_mode", "session_tools"),
            *("change_policy", "withhold_incompatible"),
        )
        field_classes = {"url": forms.CharField}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        acting, shared = acting_split(self.instance.auth, "")
        self.initial.update(acting)
        auth = shared or {}
        self.initial.update(
            auth_type=auth.get("type", ""),
            auth_secret=auth.get("secret", ""),
            auth_header=auth.get("name", ""),
            client_id=auth.get("client_id", ""),
            token_url=auth.get("token_url", ""),
            scope=auth.get("scope", ""),
        )
        self.limit_to_tenants(None)
        if "prefix" in self.fields:
            self.fields[
                "prefix"
            ].help_text = "Prepended to its tools', templates' and prompts' names; empty: the name and _."
        for name in ("session_mode", "change_policy"):
            if name in self.fields:
                # A form that does not send it (an older page, a script) keeps the upstream's value.
                self.fields[name].required = False
        self.stored: Upstream | None = None
        self.composed_auth: dict[str, Any] | None = None
        self.report = ""
        # The upstream's items, on its change page: a formset of their overrides, validated with this form.
        self.items: Any = None
        self.items_posted = False
        self.new_excluded: list[str] = []
        self.new_overrides: dict[str, dict[str, str]] = {}
        if self.instance.pk is not None:
            listed = upstream_items(self.instance)
            if len(listed) <= MAX_ITEMS_ON_PAGE:
                by_key = {item.key: item for item in listed}
                # A form posted without the items (an older page, a script) leaves them as they are.
                self.items_posted = self.is_bound and "items-TOTAL_FORMS" in self.data
                self.items = ItemFormSet(
                    self.data if self.items_posted else None,
                    prefix="items",
                    initial=[item_initial(item) for item in listed],
                )
                # Each form names its item by key: a form posted for an item gone since is ignored.
                for form in self.items.forms:
                    key = form["key"].value()
                    form.item = by_key.get(key)
                    if form.item is not None:
                        self._describe(form, form.item)

    def limit_to_tenants(self, tenant_ids: Collection[int] | None) -> None:
        """The secret picker offers the upstream's tenant's secrets, or on the add page those of ``tenant_ids`` (the
        tenants the person administers; None: every tenant's). Called by the admin's scoping too."""
        tenant_id = self.instance.tenant_id if self.instance.pk is not None else None
        secret_names_offer(self, "auth_secret", tenant_ids, tenant_id=tenant_id)
        secret_names_offer(self, "person_client_secret", tenant_ids, tenant_id=tenant_id)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        try:
            self.composed_auth = acting_join(cleaned, self._shared_auth(), "", upstream=True)
        except ValidationError as exc:
            for field, problems in exc.message_dict.items():
                self.add_error(field, problems)
            return cleaned
        personal = personal_config(cleaned, "")
        exchanged = personal is not None and personal.get("type") == "token_exchange"
        if self.instance.pk is None and exchanged and cleaned.get("machine") != "shared":
            # The catalog of any other personal upstream is read once its first member connects.
            self.add_error("machine", PERSONAL_ADD_HELP)
        # The secrets must exist now: a missing one would only show as a failed connection later.
        tenant = cleaned.get("tenant") or (self.instance.tenant if self.instance.tenant_id else None)
        if tenant is not None:
            for name in auth_secret_names(self.composed_auth):
                field = personal_secret_field(self.composed_auth, name, "") or "auth_secret"
                secrets_refuse_missing(self, field, tenant=tenant, names=[name])
        return cleaned

    def clean_session_mode(self) -> str:
        return str(self.cleaned_data.get("session_mode") or self.instance.session_mode)

    def clean_change_policy(self) -> str:
        return str(self.cleaned_data.get("change_policy") or self.instance.change_policy)

    @staticmethod
    def _describe(form: UpstreamItemForm, item: UpstreamItem) -> None:
        """Labels for a row's boxes (the table's headings are not their labels), the upstream's values as
        placeholders, and a link to the item's own page."""
        form.fields["served"].widget.attrs["aria-label"] = f"Serve {item.remote}"
        form.fields["name"].widget.attrs.update(
            placeholder=item.default_name, **{"aria-label": f"Name of {item.remote}"}
        )
        form.fields["description"].widget.attrs.update(
            placeholder=item.default_description[:200], **{"aria-label": f"Description of {item.remote}"}
        )
        if item.row is not None:
            form.item_url = reverse(f"admin:tenants_{item.row._meta.model_name}_change", args=[item.row.pk])

    def _clean_items(self) -> None:
        """Read the items' forms into a new exclusion list and overrides, and put any refusal on its item's row."""
        stored = self.instance
        self.new_excluded, self.new_overrides = list(stored.excluded or []), dict(stored.overrides or {})
        if self.items is None or not self.items_posted:
            return
        if not self.items.is_valid():
            self.add_error(None, "Some of the upstream's items need attention: see below.")
            return
        forms_by_key: dict[str, UpstreamItemForm] = {}
        excluded = set(self.new_excluded)
        for form in self.items.forms:
            item = form.item
            if item is None:
                continue
            forms_by_key[item.key] = form
            data = form.cleaned_data
            if data.get("served"):
                excluded.discard(item.key)
            else:
                excluded.add(item.key)
            entry = {
                "name": data.get("name", "").strip() if data.get("name", "").strip() != item.default_name else "",
                "description": data.get("description", "")
                if data.get("description", "") != item.default_description
                else "",
            }
            entry = {field: value for field, value in entry.items() if value}
            if entry:
                self.new_overrides[item.key] = entry
            else:
                self.new_overrides.pop(item.key, None)
        self.new_excluded = sorted(excluded)
        errors = overrides_errors(upstream=stored, excluded=self.new_excluded, overrides=self.new_overrides)
        for key, problems in errors.items():
            form = forms_by_key.get(key)
            if form is None:
                self.add_error(None, f"{key}: {' '.join(problems)}")
                continue
            for problem in problems:
                form.add_error("description" if problem.startswith("A description") else "name", problem)
        if errors:
            self.add_error(None, "Some of the upstream's items need attention: see below.")

    @property
    def items_changed(self) -> bool:
        stored = self.instance
        return self.items_posted and (
            sorted(stored.excluded or []) != self.new_excluded or (stored.overrides or {}) != self.new_overrides
        )

    def auth(self) -> dict[str, Any] | None:
        """The ``auth`` config the fields compose (checked in ``clean``)."""
        return self.composed_auth

    def _shared_auth(self) -> dict[str, Any] | None:
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
                self._clean_items()
                return
            self.stored, report = upstream_add(
                tenant=cleaned["tenant"],
                name=cleaned["name"],
                url=cleaned["url"],
                prefix=cleaned.get("prefix") or None,
                auth=self.auth(),
                actor=self.actor,
                session_mode=cleaned["session_mode"],
                change_policy=cleaned["change_policy"],
                withhold_incompatible=cleaned.get("withhold_incompatible", False),
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
    list_display = ("name", "tenant", "url", "health", "enabled", "last_ok_at", "last_refreshed_at")
    list_filter = ("enabled", "tenant")
    list_select_related = ("tenant",)
    search_fields = ("name", "url", "tenant__slug")
    readonly_fields = ("health", "held_changes", *HEALTH_FIELDS, "created_at", "updated_at")
    change_form_template = "admin/tenants/upstream/change_form.html"
    actions = ["refresh_now"]

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change, **kwargs)
        return type(form.__name__, (form,), {"actor": Actor.person(request.user)})

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        return [
            (None, {"fields": ["tenant", "name", "url", "prefix", "enabled"]}),
            ("Session", {"fields": ["session_mode", "session_tools"]}),
            (
                "Changes to its tools",
                {
                    "fields": [
                        "change_policy",
                        "withhold_incompatible",
                        *(["held_changes"] if obj is not None else []),
                    ]
                },
            ),
            ("Acts as", {"fields": list(ACTING_FIELDS), "description": ACTS_AS_HELP}),
            ("Shared credentials", {"fields": list(SHARED_AUTH_FIELDS), "description": SHARED_HELP}),
            *([("Health", {"fields": ["health", *HEALTH_FIELDS]})] if obj is not None else []),
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # An upstream stays with its tenant: moving it would move its mirrored items between catalogs.
        return (*self.readonly_fields, "tenant") if obj is not None else tuple(self.readonly_fields)

    @admin.display(description="Health")
    def health(self, upstream: Upstream) -> str:
        return health_html(upstream)

    @admin.display(description="Waiting for review")
    def held_changes(self, upstream: Upstream) -> str:
        count = pending_count(source=upstream)
        url = reverse("admin:tenants_upstream_changes", args=[upstream.pk])
        overflow = f" (and {upstream.held_overflow} more not recorded)" if upstream.held_overflow else ""
        return format_html('<a href="{}">{} change{}{}</a>', url, count, "" if count == 1 else "s", overflow)

    def get_urls(self) -> list[Any]:
        site = self.admin_site
        return [
            path("<path:object_id>/refresh/", site.admin_view(self.refresh_view), name="tenants_upstream_refresh"),
            path("<path:object_id>/test/", site.admin_view(self.test_view), name="tenants_upstream_test"),
            path("<path:object_id>/changes/", site.admin_view(self.changes_view), name="tenants_upstream_changes"),
            path("<path:object_id>/connect/", site.admin_view(self.connect_view), name="tenants_upstream_connect"),
            *super().get_urls(),
        ]

    def _changeable(self, request: HttpRequest, object_id: str) -> Upstream:
        upstream = self.get_object(request, object_id)  # another tenant's upstream is a 404
        if not self.has_change_permission(request, upstream):
            raise PermissionDenied
        assert isinstance(upstream, Upstream)
        return upstream

    def _back(self, upstream: Upstream) -> HttpResponse:
        return HttpResponseRedirect(reverse("admin:tenants_upstream_change", args=[upstream.pk]))

    def object_page_context(self, request: HttpRequest, obj: Any) -> dict[str, Any]:
        auth = obj.auth if isinstance(obj, Upstream) and isinstance(obj.auth, dict) else {}
        # Connecting one's own account (OAuth or key) is what reads the catalog of an upstream nobody connected to.
        return {"held_count": pending_count(source=obj), "connects_people": auth.get("type") in CONNECTED_TYPES}

    def connect_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Connect the signed-in admin's own account to the upstream (the connect page, as a call's link opens it):
        the first connection to an upstream that acts as each person is what its catalog is read with."""
        upstream = self.get_object(request, object_id)  # another tenant's upstream is a 404
        if not self.has_view_permission(request, upstream):
            raise PermissionDenied
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        assert isinstance(upstream, Upstream)
        if not isinstance(upstream.auth, dict) or upstream.auth.get("type") not in CONNECTED_TYPES:
            messages.error(request, f"{upstream.name} does not act as each person: there is nothing to connect.")
            return self._back(upstream)
        token = connect_link_create(
            tenant_id=upstream.tenant_id,
            user_id=int(request.user.pk),  # type: ignore[arg-type]
            target=target_of(upstream),
            elicitation_id=f"admin-{secrets.token_urlsafe(12)}",
        )
        return HttpResponseRedirect(f"/connect/{token}/")

    def changes_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The Review changes page: the upstream's held changes side by side, approved or rejected here."""
        upstream = self.get_object(request, object_id)  # another tenant's upstream is a 404
        if not self.has_view_permission(request, upstream):
            raise PermissionDenied
        context = {**self.admin_site.each_context(request), "opts": self.model._meta}
        may_decide = self.has_change_permission(request, upstream)
        return held_changes_view(request, upstream_held_source(upstream), may_decide=may_decide, context=context)

    def refresh_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        upstream = self._changeable(request, object_id)
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        self.refresh_now(request, Upstream.objects.filter(pk=upstream.pk))
        return self._back(upstream)

    def test_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        upstream = self._changeable(request, object_id)
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        try:
            probe = async_to_sync(upstream_probe)(upstream.pk, timeout=TEST_SECONDS)
        except UpstreamFailure as exc:
            messages.error(request, f"Test of {upstream.name} failed: {exc}")
        else:
            messages.success(request, f"Test of {upstream.name}: {probe}.")
        return self._back(upstream)

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
            if f
            in (
                "name",
                "url",
                "prefix",
                "enabled",
                "session_mode",
                "session_tools",
                "change_policy",
                "withhold_incompatible",
            )
        }
        auth = form.auth()
        if auth != stored.auth:
            data["auth"] = auth
        upstream_update(upstream=stored, data=data)
        refresh = bool(data)
        if form.items_changed:
            served_again = set(stored.excluded or []) - set(form.new_excluded)
            # The mirror keeps no copy of a resource's own name and description: an override taken back is undone
            # by reading them from the upstream.
            resource_reverted = any(
                key.startswith("resources:") and form.new_overrides.get(key) != entry
                for key, entry in (stored.overrides or {}).items()
            )
            try:
                report = upstream_items_update(
                    upstream=stored,
                    excluded=form.new_excluded,
                    overrides=form.new_overrides,
                    actor=Actor.person(request.user),
                )
            except ValidationError as exc:  # a name taken since the form was checked
                messages.error(request, f"The items were not changed: {' '.join(exc.messages)}")
            else:
                level = messages.WARNING if report.skipped else messages.SUCCESS
                messages.add_message(request, level, f"Items of {stored.name}: {report}.")
                # An item served again is read from the upstream: a refresh brings it (and a resource's own values).
                refresh = refresh or bool(served_again) or resource_reverted
        obj.__dict__.update(stored.__dict__)
        if refresh and stored.enabled:
            # A new prefix, URL or credentials, or an item served again, shows in the catalog now, not at the next
            # refresh.
            self.refresh_now(request, Upstream.objects.filter(pk=stored.pk))

    def after_restore(self, request: HttpRequest, restored: Any) -> None:
        # As after a save: a restored URL, prefix or credentials, or an item served again, show in the catalog now.
        if restored.enabled:
            self.refresh_now(request, Upstream.objects.filter(pk=restored.pk))

    def delete_model(self, request: HttpRequest, obj: Upstream) -> None:
        upstream_delete(upstream=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Upstream]) -> None:
        for upstream in queryset:
            upstream_delete(upstream=upstream)

    @admin.action(description="Refresh the catalogs of the selected upstreams now")
    def refresh_now(self, request: HttpRequest, queryset: QuerySet[Upstream]) -> None:
        for upstream in queryset:
            try:
                report = async_to_sync(upstream_refresh)(
                    upstream.pk, pooled=False, actor=Actor.person(request.user), timeout=REFRESH_SECONDS
                )
            except (UpstreamFailure, ValidationError) as exc:
                text = str(exc) if isinstance(exc, UpstreamFailure) else " ".join(exc.messages)
                messages.error(request, f"{upstream.name}: {text}")
                continue
            level = messages.WARNING if report is not None and report.skipped else messages.SUCCESS
            text = f"Refreshed {upstream.name}: {report}." if report is not None else f"{upstream.name} is disabled."
            messages.add_message(request, level, text)

"""The activity log in the admin: read-only, tenant-scoped, filtered by time, kind, outcome, what a call called, what
kind of object an admin change changed, which upstream a token exchange was for, what a person's connection is for,
principal, client and the server a call went to (each filter sorted by name), an admin change shown as its fields
before and after, a token exchange as issued or refused, a connection's event with the admin who disconnected it or
the refresh's error, exported as CSV or JSON Lines with the filters in force, and the usage dashboard built from the
same rows."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.core.exceptions import BadRequest, PermissionDenied
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.urls import URLPattern, path
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from mcp_platform.activity.changes import bulk_summary, field_changes
from mcp_platform.activity.export import export_response
from mcp_platform.activity.models import ActivityRecord
from tenants.admin.policy import admin_scope
from tenants.admin.principals import PrincipalsNamed, named_choices, person_of
from tenants.admin.scoping import TenantScopedAdmin
from tenants.connections.listing import target_titles
from tenants.people import people_of

ACTIONS = {
    "admin/create": "Created",
    "admin/change": "Changed",
    "admin/delete": "Deleted",
    # A held change of a source, decided on its Review changes page.
    "admin/approve": "Approved",
    "admin/reject": "Rejected",
    # A version put back from the catalog's history (tenants.history), or a deleted row made again from it.
    "admin/restore": "Restored",
    "admin/recover": "Recovered",
}


def action_label(method: str) -> str:
    """An admin change's action as a person reads it: "Changed", or a bulk change's operation ("OpenAPI import")."""
    return ACTIONS.get(method) or method.removeprefix("admin/")


# Distinct values offered by a filter: the most frequent first, at most this many (type-in search covers the rest).
FILTER_CHOICES = 50


class PeriodFilter(admin.SimpleListFilter):
    title = "time"
    parameter_name = "period"
    PERIODS = {
        "1h": dt.timedelta(hours=1),
        "24h": dt.timedelta(days=1),
        "7d": dt.timedelta(days=7),
        "30d": dt.timedelta(days=30),
    }
    LABELS = {"1h": "Last hour", "24h": "Last 24 hours", "7d": "Last 7 days", "30d": "Last 30 days"}

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return list(self.LABELS.items())

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        period = self.PERIODS.get(self.value() or "")
        return queryset if period is None else queryset.filter(at__gte=timezone.now() - period)


def _sorted(choices: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Choices in the order a person looks for them: by their label, whatever the case."""
    return sorted(choices, key=lambda choice: (choice[1].casefold(), choice[1]))


def _most_frequent(queryset: QuerySet[Any], *fields: str) -> list[tuple[Any, ...]]:
    """The distinct values of ``fields`` in ``queryset``, the ``FILTER_CHOICES`` most frequent (ties by value)."""
    rows = queryset.values_list(*fields).annotate(n=Count("id")).order_by("-n", *fields)[:FILTER_CHOICES]
    return [row[:-1] for row in rows]


class _ValueFilter(admin.SimpleListFilter):
    """Choices from the rows the person may see (the most frequent, sorted by name): never another tenant's values."""

    field = ""
    kinds: tuple[str, ...] = (
        ActivityRecord.Kind.CALL,
        ActivityRecord.Kind.ADMIN,
        ActivityRecord.Kind.EXCHANGE,
        ActivityRecord.Kind.CONNECTION,
    )

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        rows = model_admin.get_queryset(request).filter(kind__in=self.kinds).exclude(**{self.field: ""})
        return _sorted([(value, value) for (value,) in _most_frequent(rows, self.field)])

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset if value is None else queryset.filter(**{self.field: value})


class PrincipalFilter(_ValueFilter):
    title = "person"
    parameter_name = "principal"
    field = "principal"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return named_choices([value for value, _ in super().lookups(request, model_admin)])


class ClientFilter(_ValueFilter):
    title = "client"
    parameter_name = "client"
    field = "client_name"
    # A bulk change names what made it (a command, the schedule) where a call names its client: not a client.
    kinds = (ActivityRecord.Kind.CALL, ActivityRecord.Kind.EXCHANGE)


# What a call's method calls, as its filter names it (tools are the common case: their names stand alone).
CALLED = {"tools/call": "", "resources/read": "resource", "prompts/get": "prompt"}


class CallTargetFilter(admin.SimpleListFilter):
    """Calls by what they called: tools, resources and prompts by name (admin changes have their own filter)."""

    title = "calls to tool, resource or prompt"
    parameter_name = "target"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        calls = model_admin.get_queryset(request).filter(kind=ActivityRecord.Kind.CALL).exclude(target="")
        choices: dict[str, str] = {}
        for method, target in _most_frequent(calls, "method", "target"):
            kind = CALLED.get(method, method)
            choices.setdefault(target, f"{target} ({kind})" if kind else target)
        return _sorted(list(choices.items()))

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset if value is None else queryset.filter(kind=ActivityRecord.Kind.CALL, target=value)


# The server filter's value for calls to a tenant's default server (whose stored server is "").
DEFAULT_SERVER = "-"
DEFAULT_SERVER_LABEL = "(default server)"


def server_value(server: str) -> str:
    """A call's stored server as the server filter's value (``DEFAULT_SERVER`` for the default one)."""
    return server or DEFAULT_SERVER


class ServerFilter(admin.SimpleListFilter):
    """Calls by the tenant's server they went to: a named server by its slug, or the default server."""

    title = "server"
    parameter_name = "server"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        calls = model_admin.get_queryset(request).filter(kind=ActivityRecord.Kind.CALL)
        values = [value for (value,) in _most_frequent(calls, "server")]
        if values == [""]:
            return []  # only the default server: nothing to tell apart
        return _sorted([(server_value(v), v or DEFAULT_SERVER_LABEL) for v in values])

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if value is None:
            return queryset
        return queryset.filter(kind=ActivityRecord.Kind.CALL, server="" if value == DEFAULT_SERVER else value)


BULK = "bulk:"


class AdminObjectFilter(admin.SimpleListFilter):
    """Admin changes by the kind of object changed (tool, secret, membership, ...), and bulk changes (an OpenAPI
    import, an upstream refresh) by their operation."""

    title = "admin changes to"
    parameter_name = "object_type"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        changes = model_admin.get_queryset(request).filter(kind=ActivityRecord.Kind.ADMIN)
        choices = [
            (str(kind), str(kind))
            for (kind,) in _most_frequent(changes.filter(details__has_key="object_type"), "details__object_type")
            if isinstance(kind, str) and kind
        ]
        choices += [
            (BULK + operation, f"{operation} (bulk)")
            for (operation,) in _most_frequent(changes.filter(details__has_key="operation"), "details__operation")
            if isinstance(operation, str) and operation
        ]
        return _sorted(choices)

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if value is None:
            return queryset
        admin_changes = queryset.filter(kind=ActivityRecord.Kind.ADMIN)
        if value.startswith(BULK):
            return admin_changes.filter(details__operation=value.removeprefix(BULK))
        return admin_changes.filter(details__object_type=value)


def _exchange_outcome(obj: ActivityRecord) -> str:
    """A token exchange's outcome: Issued, or the refusal with its OAuth error code
    ("Refused (OAuth error): invalid_target")."""
    if obj.outcome == ActivityRecord.Outcome.OK:
        return "Issued"
    error = obj.details.get("error") if isinstance(obj.details, dict) else None
    return f"{obj.get_outcome_display()}: {error}" if error else str(obj.get_outcome_display())


class ExchangeTargetFilter(admin.SimpleListFilter):
    """Token exchanges by the upstream they asked a token for."""

    title = "token exchanges for"
    parameter_name = "upstream"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        exchanges = model_admin.get_queryset(request).filter(kind=ActivityRecord.Kind.EXCHANGE).exclude(target="")
        return _sorted([(target, target) for (target,) in _most_frequent(exchanges, "target")])

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset if value is None else queryset.filter(kind=ActivityRecord.Kind.EXCHANGE, target=value)


# What happened to a person's connection, as the log's "method or action" column says it.
CONNECTION_ACTIONS = {
    "connection/connected": "Connected",
    "connection/refreshed": "Connection refreshed",
    "connection/refresh_failed": "Connection refresh failed",
    "connection/used": "Connection used",
    "connection/revoked": "Disconnected",
    "connection/key_stored": "Key stored",
    "connection/key_removed": "Key removed",
}

# What a person does on the pages (connect, store a key, disconnect); the rest happens in calls.
PERSON_ACTIONS = frozenset(
    {"connection/connected", "connection/revoked", "connection/key_stored", "connection/key_removed"}
)


def connection_action(method: str) -> str:
    return CONNECTION_ACTIONS.get(method) or method.removeprefix("connection/")


def _connection_by(obj: ActivityRecord) -> int | None:
    """The admin who disconnected a member (None: the person themselves, or the platform)."""
    by = obj.details.get("by") if isinstance(obj.details, dict) else None
    return by if isinstance(by, int) else None


class ConnectionTargetFilter(admin.SimpleListFilter):
    """Events of people's connections by what the connection is for, named as the connection pages name it."""

    title = "personal connections to"
    parameter_name = "connection"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        events = model_admin.get_queryset(request).filter(kind=ActivityRecord.Kind.CONNECTION).exclude(target="")
        keys = [(tenant_id, target) for tenant_id, target in _most_frequent(events, "tenant_id", "target")]
        titles = target_titles(keys)
        return _sorted([(target, f"{titles[(tenant_id, target)]} ({target})") for tenant_id, target in keys])

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset if value is None else queryset.filter(kind=ActivityRecord.Kind.CONNECTION, target=value)


@admin.register(ActivityRecord)
class ActivityRecordAdmin(PrincipalsNamed, TenantScopedAdmin):
    tenant_path = "tenant"
    list_display = ("at", "tenant", "method_shown", "target", "principal_person", "client", "outcome_shown", "duration")
    list_filter = (
        PeriodFilter,
        "kind",
        "outcome",
        CallTargetFilter,
        AdminObjectFilter,
        ExchangeTargetFilter,
        ConnectionTargetFilter,
        "method",
        PrincipalFilter,
        ClientFilter,
        ServerFilter,
        "tenant",
    )
    search_fields = ("target", "request_id", "client_name", "principal")
    list_select_related = ("tenant",)
    list_per_page = 100
    show_full_result_count = False  # counting a large log on every page costs more than the page
    fields = (
        "at",
        "tenant",
        "kind",
        "method",
        "target",
        "principal_person",
        "client_id",
        "client_name",
        "client_version",
        "protocol_version",
        "transport",
        "server_shown",
        "request_id",
        "duration_ms",
        "outcome",
        "error_code",
        "details_shown",
    )
    # An admin change's page: when, who, what, and the fields it changed (before → after).
    admin_change_fields = ("at", "tenant", "action", "changed_object", "by", "changes")
    # A token exchange's page: when, for whom, which client, which upstream, and whether it was issued.
    exchange_fields = ("at", "tenant", "kind", "principal_person", "client_id", "client_name", "upstream", "result")
    # A connection's page: when, whose, what happened, for what, who did it where it was not the person, and a
    # failed refresh's error.
    connection_fields = (
        "at",
        "tenant",
        "kind",
        "principal_person",
        "connection_event",
        "for_target",
        "done_by",
        "error",
    )
    readonly_fields = (
        *fields,
        *admin_change_fields,
        "upstream",
        "result",
        "connection_event",
        "for_target",
        "done_by",
        "error",
    )

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is not None and obj.kind == ActivityRecord.Kind.ADMIN:
            return self.admin_change_fields
        if obj is not None and obj.kind == ActivityRecord.Kind.EXCHANGE:
            return self.exchange_fields
        if obj is not None and obj.kind == ActivityRecord.Kind.CONNECTION:
            return self.connection_fields
        return self.fields

    def get_list_display(self, request: HttpRequest) -> Any:
        # Someone who administers one tenant learns nothing from a tenant column: the room goes to the outcome.
        scope = admin_scope(request)
        if not scope.everything and len(scope.tenant_ids()) == 1:
            return tuple(field for field in self.list_display if field != "tenant")
        return self.list_display

    class Media:
        css = {"all": ("admin-activity.css",)}

    @admin.display(description="method or action", ordering="method")
    def method_shown(self, obj: ActivityRecord) -> str:
        if obj.kind == ActivityRecord.Kind.EXCHANGE:
            return str(ActivityRecord.Kind.EXCHANGE.label)
        if obj.kind == ActivityRecord.Kind.CONNECTION:
            return connection_action(obj.method)
        return action_label(obj.method) if obj.kind == ActivityRecord.Kind.ADMIN else obj.method

    @admin.display(description="client")
    def client(self, obj: ActivityRecord) -> str:
        return f"{obj.client_name} {obj.client_version}".strip() or obj.client_id

    @admin.display(description="outcome", ordering="outcome")
    def outcome_shown(self, obj: ActivityRecord) -> str:
        if obj.kind == ActivityRecord.Kind.ADMIN:
            return "—"
        if obj.kind == ActivityRecord.Kind.EXCHANGE:
            return _exchange_outcome(obj)
        if obj.kind == ActivityRecord.Kind.CONNECTION:
            return "Failed" if obj.outcome == ActivityRecord.Outcome.ERROR else "—"
        return (
            f"{obj.get_outcome_display()} ({obj.error_code})"
            if obj.error_code is not None
            else obj.get_outcome_display()
        )

    @admin.display(description="server", ordering="server")
    def server_shown(self, obj: ActivityRecord) -> str:
        return obj.server or DEFAULT_SERVER_LABEL

    @admin.display(description="duration (ms)", ordering="duration_ms")
    def duration(self, obj: ActivityRecord) -> str:
        return "" if obj.duration_ms is None else f"{obj.duration_ms:.1f}"

    @admin.display(description="upstream")
    def upstream(self, obj: ActivityRecord) -> str:
        return obj.target or "—"

    @admin.display(description="result")
    def result(self, obj: ActivityRecord) -> str:
        """A token exchange's outcome and the scopes it issued (or asked for, when refused)."""
        scope = obj.details.get("scope") if isinstance(obj.details, dict) else None
        return f"{_exchange_outcome(obj)} (scope: {scope})" if scope else _exchange_outcome(obj)

    @admin.display(description="what happened")
    def connection_event(self, obj: ActivityRecord) -> str:
        return connection_action(obj.method)

    @admin.display(description="for")
    def for_target(self, obj: ActivityRecord) -> str:
        """What the connection is for, named as the connection pages name it, with the target as stored."""
        title = target_titles([(obj.tenant_id, obj.target)])[(obj.tenant_id, obj.target)]
        return f"{title} ({obj.target})"

    @admin.display(description="by")
    def done_by(self, obj: ActivityRecord) -> str:
        """The admin who disconnected a member; the person themselves otherwise."""
        by = _connection_by(obj)
        if by is not None:
            return str(people_of([str(by)])[str(by)])
        return "the person themselves" if obj.method in PERSON_ACTIONS else "—"

    @admin.display(description="error")
    def error(self, obj: ActivityRecord) -> str:
        error = obj.details.get("error") if isinstance(obj.details, dict) else None
        return str(error) if error else "—"

    @admin.display(description="action")
    def action(self, obj: ActivityRecord) -> str:
        return action_label(obj.method)

    @admin.display(description="object")
    def changed_object(self, obj: ActivityRecord) -> str:
        return obj.target

    @admin.display(description="by")
    def by(self, obj: ActivityRecord) -> str:
        """Who made the change: the person, or what made it (a command, the schedule) for a bulk change."""
        return str(person_of(obj)) if obj.principal else obj.client_name or "—"

    @admin.display(description="what changed")
    def changes(self, obj: ActivityRecord) -> str:
        bulk = bulk_summary(obj.details)
        if bulk is not None:
            return format_html(
                '<dl class="activity-bulk">{}</dl>',
                format_html_join(
                    "",
                    "<dt>{}</dt><dd>{}</dd>",
                    (
                        (label, ", ".join(names) or "—")
                        for label, names in (
                            ("Added", bulk.added),
                            ("Changed", bulk.changed),
                            ("Removed", bulk.removed),
                        )
                    ),
                ),
            )
        rows = field_changes(obj.details)
        if not rows:
            return "—"
        return format_html(
            '<table class="activity-changes"><thead><tr><th scope="col">Field</th><th scope="col">Before</th>'
            '<th scope="col">After</th></tr></thead><tbody>{}</tbody></table>',
            format_html_join(
                "",
                '<tr><th scope="row">{}</th><td><span class="activity-value">{}</span></td>'
                '<td><span class="activity-value">{}</span></td></tr>',
                ((row.label, row.before, row.after) for row in rows),
            ),
        )

    @admin.display(description="details")
    def details_shown(self, obj: ActivityRecord) -> str:
        if obj.details is None:
            return "—"
        return format_html("<pre>{}</pre>", json.dumps(obj.details, indent=2, sort_keys=True))

    # The log is written by the platform only; rows leave by retention.
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_urls(self) -> list[URLPattern]:
        prefix = f"{self.opts.app_label}_{self.opts.model_name}"
        own = [
            path("export.csv", self.admin_site.admin_view(self.export_csv), name=f"{prefix}_export_csv"),
            path("export.jsonl", self.admin_site.admin_view(self.export_jsonl), name=f"{prefix}_export_jsonl"),
            path("usage/", self.admin_site.admin_view(self.usage_view), name=f"{prefix}_usage"),
        ]
        return own + super().get_urls()

    def filtered(self, request: HttpRequest) -> QuerySet[Any]:
        """The rows the changelist shows with the request's filters and search: the person's tenants only."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        try:
            return self.get_changelist_instance(request).get_queryset(request)
        except IncorrectLookupParameters:
            raise BadRequest("Unknown filter.") from None

    def export_csv(self, request: HttpRequest) -> StreamingHttpResponse:
        return export_response(self.filtered(request), "csv", "activity")

    def export_jsonl(self, request: HttpRequest) -> StreamingHttpResponse:
        return export_response(self.filtered(request), "jsonl", "activity")

    def usage_view(self, request: HttpRequest) -> HttpResponse:
        from mcp_platform.activity.dashboard import usage_page

        if not self.has_view_permission(request):
            raise PermissionDenied
        return usage_page(request, self)

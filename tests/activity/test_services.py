"""Stored calls: fields, arguments only where the tenant opted in (redacted), deleted tenants skipped, retention."""

from __future__ import annotations

import datetime as dt
import time

import pytest
from django.db import connection
from django.utils import timezone

from mcp_platform.activity.models import ActivityRecord
from mcp_platform.activity.rows import call_row
from mcp_platform.activity.services import (
    COPY_CHUNK,
    activity_admin_change_record,
    activity_calls_write,
    activity_purge_expired,
)
from mcp_platform.observe.calls import CallInfo, CallRecord
from mcp_platform.observe.redaction import REDACTED
from tenants.services import tenant_create, tenant_update, tool_create

pytestmark = pytest.mark.django_db

SCHEMA = {"type": "object", "properties": {"pin": {"type": "string", "writeOnly": True}, "city": {"type": "string"}}}


def record(tenant_id: int, *, method: str = "tools/call", target: str = "weather", arguments=None) -> CallRecord:
    info = CallInfo(
        tenant_id=tenant_id,
        tenant_slug="",
        method=method,
        target=target,
        principal="7",
        client_id="app-1",
        client_name="Claude",
        client_version="1.2",
        protocol_version="2026-07-28",
        transport="streamable-http",
        request_id="42",
        started=time.perf_counter(),
        started_at=time.time(),
        arguments=arguments,
        headers=None,
    )
    return CallRecord(info=info, duration_s=0.0123, outcome="error", error_code=-32602)


def test_a_call_is_stored_with_who_what_and_how_it_ended() -> None:
    tenant = tenant_create(slug="acme", name="Acme")
    assert activity_calls_write(rows=[call_row(record(tenant.pk, arguments={"city": "Oslo"}))]) == 1
    row = ActivityRecord.objects.get()
    assert (row.tenant_id, row.principal, row.client_id, row.client_name, row.client_version) == (
        tenant.pk,
        "7",
        "app-1",
        "Claude",
        "1.2",
    )
    assert (row.method, row.target, row.protocol_version, row.transport, row.request_id) == (
        "tools/call",
        "weather",
        "2026-07-28",
        "streamable-http",
        "42",
    )
    assert (row.outcome, row.error_code, row.duration_ms) == ("error", -32602, 12.3)
    assert row.details is None, "arguments are not kept unless the tenant opts in"


def test_names_with_separators_and_backslashes_are_stored_as_sent() -> None:
    tenant = tenant_create(slug="acme", name="Acme")
    tenant_update(tenant=tenant, data={"activity_record_arguments": True})
    odd = "a\tb\nc\\d\re"
    activity_calls_write(rows=[call_row(record(tenant.pk, target=odd + "\x00", arguments={"q": odd}))])
    row = ActivityRecord.objects.get()
    assert row.target == odd, "NUL, which PostgreSQL cannot store, is left out"
    assert row.details == {"arguments": {"q": odd}}


def test_arguments_are_kept_redacted_when_the_tenant_opts_in() -> None:
    tenant = tenant_create(slug="acme", name="Acme")
    tenant_update(tenant=tenant, data={"activity_record_arguments": True})
    tool_create(tenant=tenant, name="weather", input_schema=SCHEMA, config={"content": []})
    activity_calls_write(rows=[call_row(record(tenant.pk, arguments={"pin": "1234", "city": "Oslo", "api_key": "k"}))])
    assert ActivityRecord.objects.get().details == {"arguments": {"pin": REDACTED, "city": "Oslo", "api_key": REDACTED}}


def test_records_of_a_tenant_deleted_meanwhile_are_skipped() -> None:
    tenant = tenant_create(slug="acme", name="Acme")
    assert activity_calls_write(rows=[call_row(record(tenant.pk)), call_row(record(tenant.pk + 1000))]) == 1


def test_each_tenant_keeps_its_own_retention() -> None:
    short = tenant_create(slug="short", name="Short")
    tenant_update(tenant=short, data={"activity_retention_days": 1})
    default = tenant_create(slug="default", name="Default")
    now = timezone.now()
    for tenant in (short, default):
        activity_calls_write(rows=[call_row(record(tenant.pk))])
    ActivityRecord.objects.update(at=now - dt.timedelta(days=2))
    assert activity_purge_expired(now=now) == 1
    assert list(ActivityRecord.objects.values_list("tenant__slug", flat=True)) == ["default"]
    assert activity_purge_expired(now=now + dt.timedelta(days=29)) == 1


def test_the_purge_removes_rows_a_deleted_tenant_left_and_only_those() -> None:
    """The table has no foreign-key constraint: a writer that checked a tenant just before it was deleted can
    store its last calls after the tenant's rows went. The purge finds them; other tenants' rows stay."""
    kept = tenant_create(slug="kept", name="Kept")
    gone = tenant_create(slug="gone", name="Gone")
    later = tenant_create(slug="later", name="Later")
    activity_calls_write(rows=[call_row(record(t.pk)) for t in (kept, gone, later)])
    gone_id = gone.pk
    gone.delete()
    assert set(ActivityRecord.objects.values_list("tenant_id", flat=True)) == {kept.pk, later.pk}, "the cascade"
    # What the race leaves: a call of the deleted tenant stored after the cascade.
    ActivityRecord.objects.create(tenant_id=gone_id, at=timezone.now(), kind="call", method="tools/call")
    assert activity_purge_expired() == 1
    assert set(ActivityRecord.objects.values_list("tenant_id", flat=True)) == {kept.pk, later.pk}
    assert activity_purge_expired() == 0


def test_an_admin_change_never_keeps_a_secret_value() -> None:
    tenant = tenant_create(slug="acme", name="Acme")
    activity_admin_change_record(
        tenant_id=tenant.pk,
        user_id=3,
        action="change",
        object_type="secret",
        object_repr="github",
        object_id="9",
        before={"name": "github", "value": "old-secret"},
        after={"name": "github", "value": "new-secret"},
    )
    row = ActivityRecord.objects.get()
    assert row.kind == "admin" and row.principal == "3" and row.method == "admin/change"
    assert row.details["before"] == {"name": "github", "value": REDACTED}
    assert "secret" not in str(row.details["after"]["value"])


def test_plain_and_odd_calls_in_one_batch_are_all_stored_as_sent() -> None:
    tenant = tenant_create(slug="acme", name="Acme")
    plain = record(tenant.pk, target="weather")
    long = record(tenant.pk, target="t" * 600)
    surrogate = record(tenant.pk, target="bad\ud800name")
    activity_calls_write(rows=[call_row(plain), call_row(long), call_row(surrogate), call_row(plain)])
    stored = list(ActivityRecord.objects.order_by("id"))
    assert [row.target for row in stored] == ["weather", "t" * 512, "bad?name", "weather"]
    assert stored[0].at.timestamp() == pytest.approx(plain.info.started_at, abs=1e-6)
    assert (stored[0].duration_ms, stored[0].error_code, stored[0].details) == (12.3, -32602, None)


def test_arguments_with_nul_escapes_and_lone_surrogates_are_stored() -> None:
    tenant = tenant_create(slug="acme", name="Acme")
    tenant_update(tenant=tenant, data={"activity_record_arguments": True})
    arguments = {"literal": "\\u0000 stays", "nul": "a\x00b", "surrogate": "x\udc00y"}
    activity_calls_write(rows=[call_row(record(tenant.pk, arguments=arguments))])
    assert ActivityRecord.objects.get().details == {
        "arguments": {"literal": "\\u0000 stays", "nul": "ab", "surrogate": "x?y"}
    }


def test_odd_names_and_request_ids_are_stored_field_for_field_in_a_batch_of_many_chunks() -> None:
    """A batch is sent in chunks (``COPY_CHUNK``) on PostgreSQL and inserted at once elsewhere; either way every call
    is stored, in order, each field as sent or cut to its column, and the calls of a tenant that is gone are
    skipped."""
    tenant = tenant_create(slug="acme", name="Acme")
    other = tenant_create(slug="other", name="Other")
    plain = record(tenant.pk)
    variants = [
        plain,
        record(other.pk),
        record(tenant.pk, target="a\tb\\c\nd\re" + "t" * 600),
        record(tenant.pk, target="bad\ud800name\x00"),
        plain._replace(info=plain.info._replace(client_name="Cl\taude\\", client_version="1\n2")),
        plain._replace(info=plain.info._replace(request_id="id\twith\\tab")),
        plain._replace(info=plain.info._replace(request_id="9" * 200)),
        plain._replace(info=plain.info._replace(request_id="")),
        plain._replace(outcome="ok", error_code=None),
        record(tenant.pk + 1000),  # a tenant that is gone: skipped
    ]
    filler = [plain._replace(info=plain.info._replace(request_id=str(n))) for n in range(COPY_CHUNK + 7)]
    assert activity_calls_write(rows=[call_row(r) for r in variants + filler]) == 9 + len(filler)
    fields = [f.name for f in ActivityRecord._meta.concrete_fields if f.name != "id"]
    by_field = [
        dict(zip(fields, row, strict=True)) for row in ActivityRecord.objects.order_by("id").values_list(*fields)
    ]
    assert [row["request_id"] for row in by_field[9:]] == [str(n) for n in range(COPY_CHUNK + 7)]
    assert [row["tenant"] for row in by_field[:2]] == [tenant.pk, other.pk]
    assert [row["target"] for row in by_field[2:4]] == [("a\tb\\c\nd\re" + "t" * 600)[:512], "bad?name"]
    assert (by_field[4]["client_name"], by_field[4]["client_version"]) == ("Cl\taude\\", "1\n2")
    assert [row["request_id"] for row in by_field[5:8]] == ["id\twith\\tab", "9" * 128, ""]
    assert (by_field[8]["outcome"], by_field[8]["error_code"]) == ("ok", None)
    assert by_field[0]["at"].timestamp() == pytest.approx(plain.info.started_at, abs=1e-6)


@pytest.mark.parametrize("fraction", [0.0, 0.25, 0.000001])
def test_a_call_is_found_by_the_orm_at_the_microsecond_it_started(fraction: float) -> None:
    """The time is written without the ORM's help (SQLite's text, PostgreSQL's COPY): the ORM's own lookups must
    still find it, on a whole second too (where Django's SQLite text has no fraction)."""
    tenant = tenant_create(slug="acme", name="Acme")
    plain = record(tenant.pk)
    started_at = 1_790_000_000 + fraction
    activity_calls_write(rows=[call_row(plain._replace(info=plain.info._replace(started_at=started_at)))])
    at = dt.datetime(2026, 9, 21, 14, 13, 20, round(fraction * 1_000_000), tzinfo=dt.UTC)
    assert dt.datetime.fromtimestamp(started_at, tz=dt.UTC) == at
    assert ActivityRecord.objects.filter(at=at).count() == 1
    assert ActivityRecord.objects.filter(at__lte=at, at__gte=at).count() == 1
    assert ActivityRecord.objects.filter(at__lt=at).count() == 0


def test_characters_beyond_ascii_are_cut_to_their_column_by_characters_not_bytes() -> None:
    """A column's limit is one of characters, whatever their size in UTF-8."""
    tenant = tenant_create(slug="acme", name="Acme")
    plain = record(tenant.pk, target="é" * 600)
    activity_calls_write(rows=[call_row(plain._replace(info=plain.info._replace(request_id="запрос-7")))])
    row = ActivityRecord.objects.get()
    assert (row.target, row.request_id) == ("é" * 512, "запрос-7")


@pytest.mark.django_db(transaction=True)
def test_a_batch_of_calls_is_inserted_in_one_transaction() -> None:
    """Outside a transaction each inserted row would be a commit of its own (on SQLite, a write to its log)."""
    if connection.vendor == "postgresql":
        pytest.skip("PostgreSQL takes the COPY path, which runs in one transaction and around execute wrappers")
    tenant = tenant_create(slug="acme", name="Acme")
    in_transaction: list[bool] = []

    def observe(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        if sql.startswith(f"INSERT INTO {ActivityRecord._meta.db_table}"):
            in_transaction.append(connection.in_atomic_block)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(observe):
        assert activity_calls_write(rows=[call_row(record(tenant.pk)) for _ in range(3)]) == 3
    assert in_transaction == [True]
    assert ActivityRecord.objects.count() == 3


def test_the_server_a_call_went_to_is_stored_beside_its_other_columns() -> None:
    """On PostgreSQL's COPY path as on the plain insert: the column sits between the transport and the request id."""
    tenant = tenant_create(slug="acme", name="Acme")
    plain = record(tenant.pk)
    on_server = plain._replace(info=plain.info._replace(server="reader", request_id="8"))
    odd = plain._replace(info=plain.info._replace(server="s\tx" + "r" * 80, request_id="9"))
    assert activity_calls_write(rows=[call_row(r) for r in (plain, on_server, odd)]) == 3
    stored = list(ActivityRecord.objects.order_by("id").values_list("server", "transport", "request_id"))
    transport = plain.info.transport
    assert stored == [
        ("", transport, plain.info.request_id),
        ("reader", transport, "8"),
        (("s\tx" + "r" * 80)[:63], transport, "9"),
    ]

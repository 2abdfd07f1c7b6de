"""The PostgreSQL backend replaces a connection the server has ended before using it, on the thread that owns it,
and leaves live connections and open transactions alone."""

from __future__ import annotations

import time

import psycopg
import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.db import OperationalError, connection, transaction

from tenants import selectors
from tenants.models import Tenant
from tests.factories import TenantFactory

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="a PostgreSQL backend"),
]

EXIT_DEADLINE = 10.0


def backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    return int(pid)


def terminate(pid: int) -> None:
    """End the backend from another connection, as an administrator or a restart would, and wait for it to exit
    (by then its goodbye is on the client's socket)."""
    settings = connection.settings_dict
    with psycopg.connect(
        host=settings["HOST"] or None,
        port=settings["PORT"] or None,
        user=settings["USER"],
        password=settings["PASSWORD"] or None,
        dbname=settings["NAME"],
        autocommit=True,
    ) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        deadline = time.monotonic() + EXIT_DEADLINE
        while admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone():
            assert time.monotonic() < deadline, "the terminated backend did not exit"
            time.sleep(0.01)


def test_a_terminated_connection_is_replaced_before_the_next_query() -> None:
    TenantFactory(slug="acme")
    before = backend_pid()
    terminate(before)

    assert Tenant.objects.filter(slug="acme").count() == 1
    assert backend_pid() != before


def test_an_async_read_after_a_termination_succeeds_on_the_orm_thread() -> None:
    TenantFactory(slug="acme")

    async def read_twice() -> tuple[Tenant | None, Tenant | None]:
        first = await selectors.atenant_get_servable(slug="acme")
        # The ORM's thread: the one whose connection the async reads use.
        await sync_to_async(lambda: terminate(backend_pid()))()
        return first, await selectors.atenant_get_servable(slug="acme")

    first, second = async_to_sync(read_twice)()
    assert first is not None and second is not None and second.pk == first.pk


def test_a_live_connection_is_kept() -> None:
    pid = backend_pid()
    for _ in range(3):
        Tenant.objects.count()
    assert backend_pid() == pid


def test_a_connection_lost_inside_a_transaction_fails_that_transaction_only() -> None:
    TenantFactory(slug="acme")

    def count_in_a_transaction_whose_connection_ends() -> int:
        with transaction.atomic():
            terminate(backend_pid())
            return Tenant.objects.count()

    with pytest.raises(OperationalError):
        count_in_a_transaction_whose_connection_ends()

    assert Tenant.objects.filter(slug="acme").count() == 1

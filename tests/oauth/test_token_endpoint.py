"""The token endpoint's edges: replayed codes, concurrent replays, refreshes for people who lost their access."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test import Client

from tenants.services import membership_remove, tenant_update
from tests.oauth.conftest import ACME_MCP
from tests.oauth.flow import HOST, Pkce, authorize_query, consent, exchange, redirect_params, register, tokens

ON_POSTGRESQL = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="row locks under real concurrency need PostgreSQL"
)


def _client_id(client: Client) -> str:
    response = register(client)
    assert response.status_code == 201, response.content
    return str(response.json()["client_id"])


def _refresh(refresh_token: str, client_id: str, client: Client | None = None) -> Any:
    return (client or Client()).post(
        "/oauth/token/",
        {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client_id, "resource": ACME_MCP},
        HTTP_HOST=HOST,
    )


def _introspect_alive(access_token: str) -> bool:
    """Whether ``access_token`` still opens the tenant endpoint (what a client would notice)."""
    from asgiref.sync import async_to_sync

    from tests.gateway.conftest import INIT_PARAMS, request, rpc

    reply = async_to_sync(request)(
        "POST", "/t/acme/mcp", body=rpc("initialize", INIT_PARAMS), headers={"authorization": f"Bearer {access_token}"}
    )
    return bool(reply.status == 200)


def _in_parallel(calls: list[Callable[[], Any]]) -> list[Any]:
    """Run ``calls`` at once, each on its own thread and database connection; their results in order."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(index: int, call: Callable[[], Any]) -> None:
        try:
            barrier.wait(timeout=10)
            results[index] = call()
        except BaseException as exc:  # reported by the assertions below
            results[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in threads)
    return results


# ---- replayed authorization codes ---------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_replayed_code_is_refused_and_revokes_the_tokens_it_gave(client, acme, browser):
    client_id = _client_id(client)
    pkce = Pkce.new()
    code = redirect_params(consent(browser, authorize_query(client_id, pkce)))["code"]
    first = exchange(Client(), client_id=client_id, code=code, verifier=pkce.verifier)
    assert first.status_code == 200, first.content
    issued = first.json()
    assert _introspect_alive(issued["access_token"])

    replay = exchange(Client(), client_id=client_id, code=code, verifier=pkce.verifier)

    assert replay.status_code == 400
    assert replay.json()["error"] == "invalid_grant"
    assert not _introspect_alive(issued["access_token"])
    assert _refresh(issued["refresh_token"], client_id).status_code == 400


@pytest.mark.django_db(transaction=True)
def test_replayed_code_revokes_the_tokens_refreshed_from_it_too(client, acme, browser):
    client_id = _client_id(client)
    pkce = Pkce.new()
    code = redirect_params(consent(browser, authorize_query(client_id, pkce)))["code"]
    issued = exchange(Client(), client_id=client_id, code=code, verifier=pkce.verifier).json()
    refreshed = _refresh(issued["refresh_token"], client_id).json()
    assert _introspect_alive(refreshed["access_token"])

    assert exchange(Client(), client_id=client_id, code=code, verifier=pkce.verifier).status_code == 400

    assert not _introspect_alive(refreshed["access_token"])
    assert _refresh(refreshed["refresh_token"], client_id).status_code == 400


def test_a_code_replayed_by_another_client_revokes_nothing(client, acme, browser):
    client_id = _client_id(client)
    other_id = _client_id(client)
    pkce = Pkce.new()
    code = redirect_params(consent(browser, authorize_query(client_id, pkce)))["code"]
    issued = exchange(Client(), client_id=client_id, code=code, verifier=pkce.verifier).json()

    stranger = exchange(Client(), client_id=other_id, code=code, verifier=pkce.verifier)

    assert stranger.status_code == 400
    assert stranger.json()["error"] == "invalid_grant"
    assert _refresh(issued["refresh_token"], client_id).status_code == 200


def test_consumed_codes_are_remembered_by_checksum_only(client, acme, browser):
    client_id = _client_id(client)
    pkce = Pkce.new()
    code = redirect_params(consent(browser, authorize_query(client_id, pkce)))["code"]
    assert exchange(Client(), client_id=client_id, code=code, verifier=pkce.verifier).status_code == 200
    from mcp_platform.oauth.models import ConsumedAuthorizationCode

    consumed = ConsumedAuthorizationCode.objects.get()
    assert code not in {consumed.code_checksum, str(consumed.token_family)}
    assert len(consumed.code_checksum) == 64


def test_consumed_codes_are_forgotten_after_a_day(client, acme, browser):
    from datetime import timedelta

    from django.utils import timezone

    from mcp_platform.oauth.models import ConsumedAuthorizationCode
    from mcp_platform.oauth.tasks import oauth_purge_expired

    client_id = _client_id(client)
    for _ in range(2):
        pkce = Pkce.new()
        code = redirect_params(consent(browser, authorize_query(client_id, pkce)))["code"]
        assert exchange(Client(), client_id=client_id, code=code, verifier=pkce.verifier).status_code == 200
    old = ConsumedAuthorizationCode.objects.order_by("pk").first()
    assert old is not None
    ConsumedAuthorizationCode.objects.filter(pk=old.pk).update(consumed=timezone.now() - timedelta(days=2))

    assert oauth_purge_expired()["consumed_codes"] == 1
    assert ConsumedAuthorizationCode.objects.count() == 1


# ---- concurrent replays -------------------------------------------------------------------------------


@ON_POSTGRESQL
@pytest.mark.django_db(transaction=True)
def test_concurrent_exchanges_of_one_code_give_one_token_then_invalid_grant_never_500(client, acme, browser):
    client_id = _client_id(client)
    for _ in range(3):
        pkce = Pkce.new()
        code = redirect_params(consent(browser, authorize_query(client_id, pkce)))["code"]

        def attempt(code: str = code, verifier: str = pkce.verifier) -> Any:
            return exchange(Client(raise_request_exception=False), client_id=client_id, code=code, verifier=verifier)

        responses = _in_parallel([attempt] * 4)

        statuses = sorted(r.status_code for r in responses)
        assert statuses == [200, 400, 400, 400], [r.content for r in responses]
        assert {r.json()["error"] for r in responses if r.status_code == 400} == {"invalid_grant"}
        # The code was used more than once: the tokens it gave are revoked (RFC 9700 §4.2.1).
        winner = next(r.json() for r in responses if r.status_code == 200)
        assert not _introspect_alive(winner["access_token"])


@ON_POSTGRESQL
@pytest.mark.django_db(transaction=True)
def test_concurrent_refreshes_of_one_token_give_one_pair_then_invalid_grant_never_500(client, acme, browser):
    client_id = _client_id(client)
    for _ in range(3):
        issued = tokens(browser, client_id)

        def attempt(refresh_token: str = issued["refresh_token"]) -> Any:
            return _refresh(refresh_token, client_id, Client(raise_request_exception=False))

        responses = _in_parallel([attempt] * 4)

        statuses = sorted(r.status_code for r in responses)
        assert statuses == [200, 400, 400, 400], [r.content for r in responses]
        assert {r.json()["error"] for r in responses if r.status_code == 400} == {"invalid_grant"}


# ---- refreshes for people and tenants that lost access ------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_refresh_is_refused_to_a_removed_member(client, acme, browser, member):
    client_id = _client_id(client)
    issued = tokens(browser, client_id)
    membership_remove(tenant=acme, user=member)

    response = _refresh(issued["refresh_token"], client_id)

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_grant"


@pytest.mark.django_db(transaction=True)
def test_refresh_is_refused_for_a_suspended_tenant_and_works_again_after(client, acme, browser):
    client_id = _client_id(client)
    issued = tokens(browser, client_id)
    tenant_update(tenant=acme, data={"status": "suspended"})

    response = _refresh(issued["refresh_token"], client_id)

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_grant"
    tenant_update(tenant=acme, data={"status": "active"})
    assert _refresh(issued["refresh_token"], client_id).status_code == 200


@pytest.mark.django_db(transaction=True)
def test_refresh_is_refused_to_a_deactivated_account(client, acme, browser, member):
    client_id = _client_id(client)
    issued = tokens(browser, client_id)
    member.is_active = False
    member.save(update_fields=["is_active"])

    assert _refresh(issued["refresh_token"], client_id).status_code == 400


def test_code_exchange_is_refused_to_a_member_removed_after_consent(client, acme, browser, member):
    client_id = _client_id(client)
    pkce = Pkce.new()
    code = redirect_params(consent(browser, authorize_query(client_id, pkce)))["code"]
    membership_remove(tenant=acme, user=member)

    response = exchange(Client(), client_id=client_id, code=code, verifier=pkce.verifier)

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_grant"

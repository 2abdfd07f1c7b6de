"""Open streams are authorized again while they live: a revoked token, a removed member or a suspended tenant ends
the standalone GET stream, the ``subscriptions/listen`` stream and the 2024-11-05 ``/sse`` stream.

Real tokens (hashed rows as django-oauth-toolkit stores them) on a tenant that requires authorization, through
the whole ASGI stack.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import ApplicationCommunicator

from mcp_platform.asgi import application
from tests.gateway.conftest import ACCEPT_BOTH, INIT_PARAMS, http_scope, request, rpc
from tests.gateway.test_stateless import META, standard_headers

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

ACME = "/t/acme/mcp"
RESOURCE = "http://127.0.0.1:8000/t/acme/mcp"
KEEPALIVE = 0.2
# How long a stream may take to notice: a few keep-alives.
NOTICE_WITHIN = 3.0


@pytest.fixture
def acme(transactional_db: None, settings: Any) -> dict[str, Any]:
    """A tenant that requires authorization, a member and a client, and keep-alives five times a second."""
    from tests.factories import MembershipFactory, OAuthClientFactory, TenantFactory, UserFactory

    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "SSE_KEEPALIVE": KEEPALIVE}
    tenant = TenantFactory(slug="acme", name="Acme", requires_authorization=True)
    alice = UserFactory(username="alice")
    MembershipFactory(user=alice, tenant=tenant)
    return {"tenant": tenant, "alice": alice, "client": OAuthClientFactory(name="Claude")}


async def bearer(acme: dict[str, Any]) -> dict[str, str]:
    from tests.factories import access_token_create

    token = await sync_to_async(access_token_create)(
        user=acme["alice"], application=acme["client"], resource=[RESOURCE]
    )
    return {"authorization": f"Bearer {token}"}


class Stream:
    """A long-lived response read chunk by chunk."""

    def __init__(self, method: str, path: str, headers: dict[str, str], body: Any = None) -> None:
        all_headers = {"host": "127.0.0.1:8000", **headers}
        self.communicator = ApplicationCommunicator(application, http_scope(method, path, all_headers))
        self.body = b"" if body is None else json.dumps(body).encode()
        self.text = ""
        self.ended = False

    async def open(self) -> int:
        await self.communicator.send_input({"type": "http.request", "body": self.body, "more_body": False})
        start = await self.communicator.receive_output(5)
        assert start["type"] == "http.response.start"
        return int(start["status"])

    async def read(self, timeout: float) -> None:
        """One chunk; ``ended`` once the server finished the response."""
        chunk = await self.communicator.receive_output(timeout)
        self.text += chunk.get("body", b"").decode()
        self.ended = not chunk.get("more_body", False)

    async def until(self, predicate: Callable[[], bool], timeout: float = 5) -> None:
        while not predicate():
            assert not self.ended, f"the stream ended early: {self.text!r}"
            await self.read(timeout)

    async def until_end(self, timeout: float) -> None:
        """Read until the server ends the response; raises TimeoutError if it is still open after ``timeout``."""
        async with asyncio.timeout(timeout):
            while not self.ended:
                await self.read(timeout)

    async def close(self) -> None:
        await self.communicator.send_input({"type": "http.disconnect"})
        await self.communicator.wait(5)


async def open_get_stream(auth: dict[str, str]) -> Stream:
    """A 2025-11-25 session's standalone GET stream, past its priming event."""
    init = await request("POST", ACME, body=rpc("initialize", INIT_PARAMS), headers=auth)
    assert init.status == 200, init.body
    session = {"mcp-session-id": init.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
    stream = Stream("GET", ACME, {"accept": "text/event-stream", **session, **auth})
    assert await stream.open() == 200
    await stream.until(lambda: "id:" in stream.text)
    return stream


async def open_listen_stream(auth: dict[str, str]) -> Stream:
    """A 2026-07-28 ``subscriptions/listen`` stream, past its acknowledgement."""
    params = {"notifications": {"toolsListChanged": True}, "_meta": META}
    headers = {
        "content-type": "application/json",
        "accept": ACCEPT_BOTH,
        **standard_headers("subscriptions/listen", params),
    }
    stream = Stream("POST", ACME, {**headers, **auth}, rpc("subscriptions/listen", params, id=5))
    assert await stream.open() == 200
    await stream.until(lambda: "acknowledged" in stream.text)
    return stream


async def open_sse_stream(auth: dict[str, str]) -> Stream:
    """A 2024-11-05 ``/sse`` stream, past its endpoint event."""
    stream = Stream("GET", "/t/acme/sse", {"accept": "text/event-stream", **auth})
    assert await stream.open() == 200
    await stream.until(lambda: "event: endpoint" in stream.text)
    return stream


def revoke_token(acme: dict[str, Any]) -> None:
    from oauth2_provider.models import get_access_token_model

    for token in get_access_token_model().objects.filter(user=acme["alice"]):
        token.revoke()


def remove_member(acme: dict[str, Any]) -> None:
    from tenants.services import membership_remove

    assert membership_remove(tenant=acme["tenant"], user=acme["alice"])


def suspend_tenant(acme: dict[str, Any]) -> None:
    from tenants.models import Tenant
    from tenants.services import tenant_update

    tenant_update(tenant=acme["tenant"], data={"status": Tenant.Status.SUSPENDED})


OPENERS = {"get": open_get_stream, "listen": open_listen_stream, "sse": open_sse_stream}
CAUSES = {"token revoked": revoke_token, "member removed": remove_member, "tenant suspended": suspend_tenant}


@pytest.mark.parametrize("kind", OPENERS)
@pytest.mark.parametrize("cause", CAUSES)
async def test_a_stream_ends_once_its_caller_is_no_longer_authorized(acme: dict[str, Any], kind: str, cause: str):
    opener: Callable[[dict[str, str]], Awaitable[Stream]] = OPENERS[kind]
    stream = await opener(await bearer(acme))
    try:
        # Still authorized: the stream lives through several keep-alives.
        await stream.until(lambda: stream.text.count(": \n\n") >= 3)

        await sync_to_async(CAUSES[cause])(acme)
        await stream.until_end(NOTICE_WITHIN)
        assert stream.ended
    finally:
        await stream.close()


async def test_an_authorized_stream_still_hears_catalog_changes(acme: dict[str, Any]):
    from tenants.services import tool_create

    stream = await open_get_stream(await bearer(acme))
    try:
        await sync_to_async(tool_create)(
            tenant=acme["tenant"], name="fresh", config={"content": [{"type": "text", "text": "x"}]}
        )
        await stream.until(lambda: "notifications/tools/list_changed" in stream.text)
    finally:
        await stream.close()


def token_pair(acme: dict[str, Any], family: uuid.UUID) -> tuple[str, int]:
    """An access token and its refresh token in ``family``, as django-oauth-toolkit issues them on an
    authorization or a refresh: (raw access token, refresh-token id)."""
    from oauth2_provider.models import get_access_token_model, get_refresh_token_model, set_token_value

    from tests.factories import access_token_create

    raw = access_token_create(user=acme["alice"], application=acme["client"], resource=[RESOURCE])
    access = get_access_token_model().objects.filter(user=acme["alice"]).latest("pk")
    refresh = get_refresh_token_model()(
        user=acme["alice"], application=acme["client"], access_token=access, token_family=family, resource=[RESOURCE]
    )
    set_token_value(refresh, secrets.token_urlsafe(30))
    refresh.save()
    return raw, refresh.pk


def granted_token(acme: dict[str, Any]) -> tuple[str, int]:
    """The pair an authorization-code grant leaves, in a family of its own."""
    return token_pair(acme, uuid.uuid4())


def expire_access_tokens(acme: dict[str, Any]) -> None:
    from datetime import timedelta

    from django.utils import timezone
    from oauth2_provider.models import get_access_token_model

    get_access_token_model().objects.filter(user=acme["alice"]).update(expires=timezone.now() - timedelta(seconds=1))


def rotate(acme: dict[str, Any], refresh_id: int) -> None:
    """What a refresh does to the family: the old refresh token revoked and its access token deleted, a new pair
    issued in the same family."""
    from oauth2_provider.models import get_refresh_token_model

    old = get_refresh_token_model().objects.get(pk=refresh_id)
    old.revoke()
    token_pair(acme, old.token_family)


def revoke_grant(acme: dict[str, Any]) -> None:
    """The person revokes the client on the connected-apps page."""
    from mcp_platform.oauth.connections import connection_revoke

    assert connection_revoke(user=acme["alice"], application_id=acme["client"].pk, resource=RESOURCE)


@pytest.mark.parametrize("kind", OPENERS)
async def test_a_stream_outlives_its_token_while_the_grant_lives_and_ends_with_it(acme: dict[str, Any], kind: str):
    raw, refresh_id = await sync_to_async(granted_token)(acme)
    stream = await OPENERS[kind]({"authorization": f"Bearer {raw}"})
    try:
        await stream.until(lambda: stream.text.count(": \n\n") >= 2)
        # The access token expires and the client refreshes it: the stream, opened with the old one, lives on.
        await sync_to_async(expire_access_tokens)(acme)
        await sync_to_async(rotate)(acme, refresh_id)
        seen = stream.text.count(": \n\n")
        await stream.until(lambda: stream.text.count(": \n\n") >= seen + 4)
        # The person revokes the client: the whole family goes, and the stream with it.
        await sync_to_async(revoke_grant)(acme)
        await stream.until_end(NOTICE_WITHIN)
        assert stream.ended
    finally:
        await stream.close()


async def test_a_stream_whose_token_expired_without_a_grant_behind_it_ends(acme: dict[str, Any]):
    """A token with no refresh token (a machine client's, by client credentials) holds its stream until it
    expires."""
    stream = await open_sse_stream(await bearer(acme))
    try:
        await stream.until(lambda: stream.text.count(": \n\n") >= 2)
        await sync_to_async(expire_access_tokens)(acme)
        await stream.until_end(NOTICE_WITHIN)
        assert stream.ended
    finally:
        await stream.close()

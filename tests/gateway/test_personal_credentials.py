"""Tools that act as the person, through the whole ASGI stack: a 2026-07-28 call of an HTTP tool whose API takes
each person's own key asks the person to open a connect link; they store the key on that page; the retry sends
their key, and only theirs. A machine client is refused where the admin allows none."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from tenants import services as tenant_services
from tenants.models import Backend, PersonalCredential
from tests.factories import MembershipFactory, OAuthClientFactory, TenantFactory, ToolFactory, UserFactory
from tests.factories import access_token_create as _token_create
from tests.gateway.conftest import META, request, rpc
from tests.loopback_http import loopback_server

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

PATH = "/t/acme/mcp"
URL_META = {**META, "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"url": {}}}}


@pytest.fixture
def api() -> Any:
    with loopback_server() as server:
        yield server


@pytest.fixture
def people(transactional_db: None, api: Any) -> dict[str, Any]:
    acme = TenantFactory(slug="acme", requires_authorization=True)
    tenant_services.tenant_update(tenant=acme, data={"outbound_allowed_networks": ["127.0.0.0/8"]})
    ToolFactory(
        tenant=acme,
        name="whoami_api",
        backend=Backend.HTTP,
        config={
            "method": "GET",
            "url": f"{api.base}/bearer",
            "auth": {"type": "user_key", "placement": "bearer", "label": "Notes API key"},
        },
        input_schema={"type": "object"},
    )
    client = OAuthClientFactory(name="Claude")
    found: dict[str, Any] = {"tenant": acme}
    for name in ("alice", "bob"):
        user = UserFactory(username=name)
        MembershipFactory(user=user, tenant=acme)
        token = _token_create(user=user, application=client, resource=["http://127.0.0.1:8000/t/acme/mcp"])
        found[name] = (user, {"authorization": f"Bearer {token}"})
    return found


async def _call(headers: dict[str, str], meta: dict[str, Any], extra: dict[str, Any] | None = None) -> Any:
    params = {"name": "whoami_api", "arguments": {}, "_meta": meta, **(extra or {})}
    sent = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "whoami_api", **headers}
    return await request("POST", PATH, body=rpc("tools/call", params, id=3), headers=sent)


def _store_key(user: Any, link: str, key: str) -> str:
    browser = Client()
    browser.force_login(user)
    path = urlsplit(link).path
    page = browser.get(path)
    assert page.status_code == 200 and "Notes API key" in page.content.decode()
    saved = browser.post(path, {"key": key})
    assert saved.status_code == 200, saved.content.decode()
    return saved.content.decode()


async def test_a_person_is_asked_for_their_key_stores_it_and_the_retry_sends_it(
    people: dict[str, Any], api: Any
) -> None:
    alice, alice_headers = people["alice"]
    first = (await _call(alice_headers, URL_META)).json()["result"]
    assert first["resultType"] == "input_required"
    ((key, question),) = first["inputRequests"].items()
    assert question["method"] == "elicitation/create" and question["params"]["mode"] == "url"
    link = question["params"]["url"]
    assert "/connect/" in link and api.hits["/bearer"] == 0

    page = await sync_to_async(_store_key)(alice, link, "alice-KEY-1234")
    assert "Key saved" in page
    row = await PersonalCredential.objects.aget(user=alice)
    assert "alice-KEY-1234" not in row.sealed

    retry = {"inputResponses": {key: {"action": "accept"}}, "requestState": first["requestState"]}
    second = (await _call(alice_headers, URL_META, retry)).json()["result"]
    assert not second.get("isError"), second
    # The API got alice's key as its bearer token; the result names it only as redacted (the redactor blanks out
    # exactly the values the call's credentials carried).
    assert json.loads(second["content"][0]["text"]) == {"authenticated": True, "token": "[secret]"}

    # The link is single use; bob is asked for his own key and never gets alice's.
    assert (await sync_to_async(Client().get)(urlsplit(link).path)).status_code == 302  # signed out: to sign-in
    bob_first = (await _call(people["bob"][1], URL_META)).json()["result"]
    assert bob_first["resultType"] == "input_required"


async def test_a_client_without_url_elicitation_gets_the_link_in_a_failed_result(people: dict[str, Any]) -> None:
    result = (await _call(people["alice"][1], META)).json()["result"]
    assert result["isError"] is True
    assert "/connect/" in result["content"][0]["text"] and "Notes API key" in result["content"][0]["text"]

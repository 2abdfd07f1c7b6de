"""What an upstream asks of the client, relayed: an upstream that answers a call with -32042 (the person must visit
its pages first) has the downstream client sent there as the call's era allows, and is called again after the visit.
Against a real SDK upstream process."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync

from mcp_core.dispatch import dispatch
from mcp_core.env import Env, ServerIdentity
from mcp_core.errors import UrlElicitationRequired
from mcp_core.mrtr import InputPolicy
from mcp_core.request_state import derive_key
from tenants.catalog import TenantCatalog
from tenants.federation.services import upstream_add
from tenants.models import Tenant
from tests.e2e.upstreams import UpstreamServer
from tests.factories import TenantFactory
from tests.support import RecordingOutbound

pytestmark = pytest.mark.django_db

URL_DECLARED = {"elicitation": {"form": {}, "url": {}}}
POLICY = InputPolicy(keys=(derive_key("s", "relay"),), now=1_000.0, ttl=600.0, tenant="t", principal="p")
PAGES = "https://accounts.example/connect/"


@pytest.fixture
def tenant(loopback_allowed: None, sdk_upstream: UpstreamServer) -> Tenant:
    tenant = TenantFactory(slug="federating")
    upstream_add(tenant=tenant, name="up", url=sdk_upstream.url)
    return tenant


def call(tenant: Tenant, version: str, capabilities: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        env = Env(
            version=version,
            catalog=TenantCatalog(tenant),
            outbound=RecordingOutbound(),
            server=ServerIdentity("t", "1"),
            client_capabilities=capabilities,
            input_policy=POLICY if version == "2026-07-28" else None,
        )
        return await dispatch("tools/call", params, env)

    return async_to_sync(run)()


def summary(label: str, **extra: Any) -> dict[str, Any]:
    return {"name": "up_account_summary", "arguments": {"label": label}, **extra}


def test_a_handshake_client_that_takes_urls_gets_the_upstreams_page_in_our_own_error(tenant: Tenant) -> None:
    with pytest.raises(UrlElicitationRequired) as raised:
        call(tenant, "2025-11-25", URL_DECLARED, summary("ada"))

    (page,) = raised.value.data["elicitations"]
    assert page["mode"] == "url" and page["message"] == "Connect your account"
    assert page["url"] == PAGES + page["elicitationId"] and page["elicitationId"].startswith("ada-")


def test_a_client_that_takes_no_urls_gets_a_failed_tool_carrying_the_upstreams_link(tenant: Tenant) -> None:
    result = call(tenant, "2025-11-25", {"elicitation": {}}, summary("bob"))

    assert result["isError"] is True
    assert "Connect your account" in result["content"][0]["text"] and PAGES + "bob-" in result["content"][0]["text"]


def test_a_2026_client_is_asked_to_visit_and_after_it_did_the_upstream_is_called_again(tenant: Tenant) -> None:
    first = call(tenant, "2026-07-28", URL_DECLARED, summary("cy"))
    (key, question), *others = first["inputRequests"].items()
    retry = summary("cy", inputResponses={key: {"action": "accept"}}, requestState=first["requestState"])

    # Accepted, but the account is not connected yet: the upstream still refuses, and the person is asked again.
    again = call(tenant, "2026-07-28", URL_DECLARED, retry)
    assert call(tenant, "2026-07-28", {}, {"name": "up_connect_done", "arguments": {"label": "cy"}})["content"]
    done = call(tenant, "2026-07-28", URL_DECLARED, retry)

    assert first["resultType"] == "input_required" and not others
    assert question["params"]["mode"] == "url" and question["params"]["url"].startswith(PAGES + "cy-")
    assert again["resultType"] == "input_required" and key not in again["inputRequests"]
    assert done["resultType"] == "complete" and done["content"] == [{"type": "text", "text": "summary of cy"}]


def test_a_person_who_declines_the_upstreams_page_fails_the_call(tenant: Tenant) -> None:
    first = call(tenant, "2026-07-28", URL_DECLARED, summary("dee"))
    (key,) = first["inputRequests"]
    retry = summary("dee", inputResponses={key: {"action": "decline"}}, requestState=first["requestState"])

    declined = call(tenant, "2026-07-28", URL_DECLARED, retry)

    assert declined["isError"] is True and "declined" in declined["content"][0]["text"]

"""Scopes on the MCP endpoint: each feature needs its scope, a tool may need more; a missing one is 403."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

import pytest
from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError
from django.test import Client

from mcp_platform.oauth.scopes import arequired_scopes, required_scopes
from tenants.services import tool_create
from tests.factories import ToolFactory, access_token_create
from tests.gateway.conftest import INIT_PARAMS, request, rpc
from tests.oauth.conftest import ACME_MCP
from tests.oauth.flow import HOST, Pkce, authorize_query, redirect_params, register

TEXT_RESULT = {"content": [{"type": "text", "text": "ok"}]}

MCP = "/t/acme/mcp"


@pytest.mark.parametrize(
    ("message", "needed"),
    [
        (rpc("tools/call", {"name": "x"}), {"mcp:tools"}),
        (rpc("tasks/get", {"taskId": "t"}), {"mcp:tools"}),
        (rpc("resources/read", {"uri": "a://b"}), {"mcp:resources"}),
        (rpc("resources/templates/list"), {"mcp:resources"}),
        (rpc("prompts/get", {"name": "p"}), {"mcp:prompts"}),
        (rpc("completion/complete", {"ref": {"type": "ref/prompt", "name": "p"}}), {"mcp:prompts"}),
        (rpc("completion/complete", {"ref": {"type": "ref/resource", "uri": "a://{x}"}}), {"mcp:resources"}),
        (rpc("initialize", INIT_PARAMS), set()),
        (rpc("ping"), set()),
        (rpc("server/discover"), set()),
        ([rpc("tools/list"), rpc("prompts/list", id=2)], {"mcp:tools", "mcp:prompts"}),
    ],
)
def test_each_method_needs_the_scope_of_its_feature(message, needed):

    assert required_scopes(json.dumps(message).encode()) == needed


def test_a_body_that_does_not_parse_needs_no_scope():
    assert required_scopes(b"{nope") == frozenset()


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_a_tool_call_needs_the_scopes_of_the_enabled_tool_of_this_tenant(acme, globex):
    make = sync_to_async(ToolFactory)
    await make(tenant=acme, name="pay", required_scopes="billing:write  billing:read")
    await make(tenant=acme, name="off", required_scopes="admin:all", enabled=False)
    await make(tenant=acme, name="open")
    await make(tenant=globex, name="pay", required_scopes="hr:read")

    def calls(*names: str) -> bytes:
        return json.dumps(
            [rpc("tools/call", {"name": name, "arguments": {}}, id=i) for i, name in enumerate(names)]
        ).encode()

    assert await arequired_scopes(calls("pay", "off", "open"), tenant=acme) == {
        "mcp:tools",
        "billing:write",
        "billing:read",
    }
    assert await arequired_scopes(calls("off"), tenant=acme) == {"mcp:tools"}


async def _session(token: str) -> str:
    headers = {"authorization": f"Bearer {token}"}
    reply = await request("POST", MCP, body=rpc("initialize", INIT_PARAMS), headers=headers)
    assert reply.status == 200
    session_id = reply.headers["mcp-session-id"]
    await request(
        "POST", MCP, body=rpc("notifications/initialized", id=None), headers={**headers, "mcp-session-id": session_id}
    )
    return session_id


async def _in_session(token: str, message: Any) -> Any:
    """``message``'s reply, sent in a session opened with ``token``."""
    session_id = await _session(token)
    return await request(
        "POST", MCP, body=message, headers={"authorization": f"Bearer {token}", "mcp-session-id": session_id}
    )


async def _token(member: Any, client_app: Any, scope: str) -> str:
    """A token of ``member`` through ``client_app`` for the acme endpoint with ``scope``."""
    token: str = await sync_to_async(access_token_create)(
        user=member, application=client_app, resource=[ACME_MCP], scope=scope
    )
    return token


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_token_with_the_scope_may_use_the_feature(acme, member, client_app):
    reply = await _in_session(await _token(member, client_app, "mcp:tools"), rpc("tools/list", id=2))
    assert reply.status == 200
    assert "tools" in reply.json()["result"]


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_missing_scope_is_403_naming_every_scope_needed(acme, member, client_app):
    reply = await _in_session(await _token(member, client_app, "mcp:tools"), rpc("prompts/list", id=2))
    assert reply.status == 403
    challenge = reply.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge
    assert 'scope="mcp:tools mcp:prompts"' in challenge
    assert 'resource_metadata="http://127.0.0.1:8000/.well-known/oauth-protected-resource/t/acme/mcp"' in challenge


# ---- scopes a tool requires --------------------------------------------------------------------------


@pytest.fixture
def billing_tool(acme: Any) -> Any:
    return ToolFactory(tenant=acme, name="charge_card", required_scopes="billing:write")


async def _tools_call(token: str, name: str) -> Any:
    return await _in_session(token, rpc("tools/call", {"name": name, "arguments": {}}, id=3))


async def _tool_names(token: str) -> list[str]:
    reply = await _in_session(token, rpc("tools/list", id=2))
    return [tool["name"] for tool in reply.json()["result"]["tools"]]


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_a_tool_requiring_a_scope_the_token_lacks_is_not_listed(acme, member, client_app, billing_tool):
    await sync_to_async(ToolFactory)(tenant=acme, name="echo")
    assert await _tool_names(await _token(member, client_app, "mcp:tools")) == ["echo"]
    assert await _tool_names(await _token(member, client_app, "mcp:tools billing:write")) == ["charge_card", "echo"]


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_calling_it_without_the_scope_is_403_naming_every_scope_needed(acme, member, client_app, billing_tool):
    reply = await _tools_call(await _token(member, client_app, "mcp:tools mcp:prompts"), "charge_card")
    assert reply.status == 403
    challenge = reply.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge
    assert 'scope="mcp:tools mcp:prompts billing:write"' in challenge


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_calling_it_with_the_scope_runs_it(acme, member, client_app, billing_tool):
    reply = await _tools_call(await _token(member, client_app, "mcp:tools billing:write"), "charge_card")
    assert reply.status == 200
    assert reply.messages()[-1]["result"]["content"][0]["text"] == "charge_card answered"


def test_protected_resource_metadata_lists_the_scopes_tools_require(client, acme, billing_tool):
    document = client.get("/.well-known/oauth-protected-resource/t/acme/mcp", HTTP_HOST=HOST).json()
    assert document["scopes_supported"] == ["mcp:tools", "mcp:resources", "mcp:prompts", "billing:write"]


def test_a_client_may_ask_for_a_tool_scope_and_the_person_sees_it(client, acme, member, billing_tool):
    client_id = register(client).json()["client_id"]
    browser = Client()
    browser.force_login(member)
    query = authorize_query(client_id, Pkce.new(), scope="mcp:tools billing:write")
    page = browser.get(f"/oauth/authorize/?{urlencode(query)}", HTTP_HOST=HOST)
    assert page.status_code == 200
    assert "tools that require “billing:write”" in page.content.decode()
    unknown = authorize_query(client_id, Pkce.new(), scope="mcp:tools payroll:read")
    assert redirect_params(browser.get(f"/oauth/authorize/?{urlencode(unknown)}", HTTP_HOST=HOST))["error"] == (
        "invalid_scope"
    )


def test_required_scopes_must_be_scope_names(acme):
    with pytest.raises(ValidationError) as refused:
        tool_create(tenant=acme, name="bad", required_scopes='billing "write"', config=TEXT_RESULT)
    assert "required_scopes" in refused.value.message_dict
    assert tool_create(tenant=acme, name="good", required_scopes="billing:write  audit.read", config=TEXT_RESULT)

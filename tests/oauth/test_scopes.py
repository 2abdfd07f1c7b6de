"""Scopes on the MCP endpoint: each feature needs its scope; a missing one is 403 insufficient_scope."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from mcp_platform.oauth.scopes import required_scopes
from tests.factories import access_token_create
from tests.gateway.conftest import INIT_PARAMS, request, rpc
from tests.oauth.conftest import ACME_MCP

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
    import json

    assert required_scopes(json.dumps(message).encode()) == needed


def test_a_body_that_does_not_parse_needs_no_scope():
    assert required_scopes(b"{nope") == frozenset()


async def _session(token: str) -> str:
    headers = {"authorization": f"Bearer {token}"}
    reply = await request("POST", MCP, body=rpc("initialize", INIT_PARAMS), headers=headers)
    assert reply.status == 200
    session_id = reply.headers["mcp-session-id"]
    await request(
        "POST", MCP, body=rpc("notifications/initialized", id=None), headers={**headers, "mcp-session-id": session_id}
    )
    return session_id


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_token_with_the_scope_may_use_the_feature(acme, member, client_app):
    token = await sync_to_async(access_token_create)(
        user=member, application=client_app, resource=[ACME_MCP], scope="mcp:tools"
    )
    session_id = await _session(token)
    reply = await request(
        "POST",
        MCP,
        body=rpc("tools/list", id=2),
        headers={"authorization": f"Bearer {token}", "mcp-session-id": session_id},
    )
    assert reply.status == 200
    assert "tools" in reply.json()["result"]


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_missing_scope_is_403_naming_every_scope_needed(acme, member, client_app):
    token = await sync_to_async(access_token_create)(
        user=member, application=client_app, resource=[ACME_MCP], scope="mcp:tools"
    )
    session_id = await _session(token)
    reply = await request(
        "POST",
        MCP,
        body=rpc("prompts/list", id=2),
        headers={"authorization": f"Bearer {token}", "mcp-session-id": session_id},
    )
    assert reply.status == 403
    challenge = reply.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge
    assert 'scope="mcp:tools mcp:prompts"' in challenge
    assert 'resource_metadata="http://127.0.0.1:8000/.well-known/oauth-protected-resource/t/acme/mcp"' in challenge

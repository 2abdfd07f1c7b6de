"""list_changed per server: the open streams of a named server (a handshake session's GET stream, the 2024-11-05
stream, a 2026-07-28 listen stream) hear of a catalog change only when their own server's list changed; the
default endpoint's streams hear of every change.

Each test makes a change the stream must not pass on, then one it must, of another kind: the first notification
the stream sends is then the second change's, or the first one leaked."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from tenants import servers, services
from tenants.models import Prompt, Resource, Server, Tenant, Tool
from tests.gateway.conftest import INIT_PARAMS, OpenStream, request, rpc
from tests.gateway.test_servers import DEFAULT, READER, curated_catalog
from tests.gateway.test_stateless import META, standard_headers
from tests.gateway.test_stream_access import Stream

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

TOOLS = "notifications/tools/list_changed"
PROMPTS = "notifications/prompts/list_changed"
RESOURCES = "notifications/resources/list_changed"


@pytest.fixture
def acme(transactional_db: None) -> Tenant:
    tenant = services.tenant_create(slug="acme", name="Acme")
    curated_catalog(tenant)
    return tenant


def _describe(model: type[Any], description: str, **key: str) -> Callable[[], Any]:
    def change() -> None:
        row = model.objects.get(tenant__slug="acme", **key)
        update = {Tool: services.tool_update, Prompt: services.prompt_update}[model]
        update(**{model.__name__.lower(): row, "data": {"description": description}})

    return sync_to_async(change)


def notifications(text: str) -> list[str]:
    found = []
    for line in text.splitlines():
        if line.startswith("data:") and '"method"' in line:
            method = json.loads(line[len("data:") :])["method"]
            if method.endswith("list_changed") or method.endswith("resources/updated"):
                found.append(method)
    return found


async def get_stream(path: str) -> tuple[Stream, dict[str, str]]:
    """A 2025-11-25 session on ``path`` and its standalone GET stream, past its priming event."""
    init = await request("POST", path, body=rpc("initialize", INIT_PARAMS))
    session = {"mcp-session-id": init.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
    await request("POST", path, body=rpc("notifications/initialized", id=None), headers=session)
    stream = Stream("GET", path, {"accept": "text/event-stream", **session})
    assert await stream.open() == 200
    await stream.until(lambda: "id:" in stream.text)
    return stream, session


async def test_a_session_of_a_server_hears_only_of_its_own_lists(acme: Tenant) -> None:
    reader, _ = await get_stream(READER)
    everything, _ = await get_stream(DEFAULT)
    await _describe(Tool, "Deletes everything, now documented.", name="delete_all")()  # not the reader's
    await _describe(Prompt, "Triage, reworded.", name="triage")()  # the reader's
    await reader.until(lambda: len(notifications(reader.text)) >= 1)
    await everything.until(lambda: len(notifications(everything.text)) >= 2)
    assert notifications(reader.text) == [PROMPTS]
    assert notifications(everything.text) == [TOOLS, PROMPTS]
    await reader.close()
    await everything.close()


async def test_an_item_joining_the_selection_by_its_tag_is_a_change_of_the_servers_list(acme: Tenant) -> None:
    reader, _ = await get_stream(READER)

    def tag() -> None:
        tool = Tool.objects.get(tenant=acme, name="delete_all")
        services.tool_update(tool=tool, data={"tags": ["read-only"]})

    await sync_to_async(tag)()
    await reader.until(lambda: len(notifications(reader.text)) >= 1)
    assert notifications(reader.text) == [TOOLS]
    await reader.close()


async def test_a_change_of_the_selection_notifies_only_the_lists_it_changed(acme: Tenant) -> None:
    reader, _ = await get_stream(READER)

    def widen() -> None:
        server = Server.objects.get(tenant=acme, slug="reader")
        servers.server_update(server=server, data={"selection": [*server.selection, "prompts:escalate"]})

    await sync_to_async(widen)()
    await reader.until(lambda: len(notifications(reader.text)) >= 1)
    # A server change is announced as a change of every list (tools first): only the prompts list of this server
    # changed. The streams compare what the lists are when they hear of a change, so the next change waits.
    assert notifications(reader.text) == [PROMPTS]
    await _describe(Tool, "Searches better.", name="search")()
    await reader.until(lambda: len(notifications(reader.text)) >= 2)
    assert notifications(reader.text) == [PROMPTS, TOOLS]
    await reader.close()


async def test_a_session_of_a_server_hears_of_updates_to_its_own_resources_only(acme: Tenant) -> None:
    reader, session = await get_stream(READER)
    for number, uri in enumerate(("docs://secret", "docs://readme"), 2):
        subscribed = await request(
            "POST", READER, body=rpc("resources/subscribe", {"uri": uri}, id=number), headers=session
        )
        assert "result" in subscribed.messages()[0], subscribed.body

    def rewrite(uri: str) -> Callable[[], Any]:
        def change() -> None:
            resource = Resource.objects.get(tenant=acme, uri=uri)
            services.resource_update(resource=resource, data={"text": "New text."})

        return sync_to_async(change)

    await rewrite("docs://secret")()
    await rewrite("docs://readme")()
    await reader.until(lambda: "resources/updated" in reader.text)
    updates = [json.loads(line[5:]) for line in reader.text.splitlines() if "resources/updated" in line]
    assert [update["params"]["uri"] for update in updates] == ["docs://readme"]
    await reader.close()


async def test_a_listen_stream_of_a_server_hears_only_of_its_own_lists(acme: Tenant) -> None:
    params = {"notifications": {"toolsListChanged": True, "promptsListChanged": True}, "_meta": META}
    stream = OpenStream(
        READER, rpc("subscriptions/listen", params, id=9), standard_headers("subscriptions/listen", params)
    )
    assert (await stream.open())[0] == 200
    assert (await stream.next_message())["method"] == "notifications/subscriptions/acknowledged"
    await _describe(Tool, "Deletes everything, now documented.", name="delete_all")()
    await _describe(Prompt, "Triage, reworded.", name="triage")()
    assert (await stream.next_message())["method"] == PROMPTS
    await stream.close()


async def test_the_2024_11_05_stream_of_a_server_hears_only_of_its_own_lists(acme: Tenant) -> None:
    stream = Stream("GET", "/t/acme/s/reader/sse", {"accept": "text/event-stream"})
    assert await stream.open() == 200
    await stream.until(lambda: "event: endpoint" in stream.text)
    endpoint = stream.text.split("data: ", 1)[1].split("\n", 1)[0].strip()
    initialize = rpc("initialize", {**INIT_PARAMS, "protocolVersion": "2024-11-05"})
    assert (await request("POST", endpoint, body=initialize)).status == 202
    await stream.until(lambda: '"serverInfo"' in stream.text)
    await _describe(Tool, "Deletes everything, now documented.", name="delete_all")()
    await _describe(Prompt, "Triage, reworded.", name="triage")()
    await stream.until(lambda: len(notifications(stream.text)) >= 1)
    assert notifications(stream.text) == [PROMPTS]
    await stream.close()


async def test_a_server_disabled_ends_its_open_streams(acme: Tenant) -> None:
    reader, _ = await get_stream(READER)
    everything, _ = await get_stream(DEFAULT)

    def disable() -> None:
        server = Server.objects.get(tenant=acme, slug="reader")
        servers.server_update(server=server, data={"enabled": False})

    await sync_to_async(disable)()
    await reader.until_end(5)
    assert (await request("POST", READER, body=rpc("ping", id=1))).status == 404
    await _describe(Tool, "Still served by default.", name="search")()
    await everything.until(lambda: TOOLS in notifications(everything.text))
    assert not everything.ended
    await everything.close()

"""OpenAPI import end to end: a live platform imports a FastAPI app's generated document with ``openapi_import``,
and the official SDK client, in both eras, lists and calls the tools it made against the app's real process."""

from __future__ import annotations

import secrets
import sys
from collections.abc import Iterator

import anyio
import mcp_types as types
import pytest
from mcp.client import Client

from tests.e2e.live import LiveServer, ManagedProcess, free_port, wait_for_port
from tests.tenants.openapi.rest_api import TOKEN

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]

REQUEST_TIMEOUT = 30.0
TEST_DEADLINE = 60.0


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    argv = [sys.executable, "-m", "uvicorn", "tests.tenants.openapi.rest_api:app", "--port", str(port)]
    process = ManagedProcess.start("shop-api", argv, {"PATH": "/usr/bin:/bin"}, tmp_path_factory.mktemp("shop"))
    try:
        wait_for_port(process, port)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.stop()


@pytest.fixture(scope="module")
def shop_tenant_url(live_platform: LiveServer, shop: str) -> str:
    slug = f"shop-{secrets.token_hex(4)}"
    live_platform.manage(
        "shell",
        "-c",
        "from tenants import services; from tenants.secrets import secret_set; "
        f"tenant = services.tenant_create(slug={slug!r}, name='Shop', outbound_allowed_networks=['127.0.0.1/32']); "
        f"secret_set(tenant=tenant, name='shop', value={TOKEN!r})",
    )
    output = live_platform.manage(
        "openapi_import", slug, f"{shop}/openapi.json", "--prefix", "shop_", "--secret", "shop"
    )
    assert "4 created" in output
    return live_platform.endpoint(slug)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_sdk_client_lists_and_calls_imported_tools_in_both_eras(shop_tenant_url: str, mode: str) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with Client(shop_tenant_url, mode=mode, cache=None, read_timeout_seconds=REQUEST_TIMEOUT) as client:
            listed = await client.list_tools()
            created = await client.call_tool("shop_create_pet", {"name": f"Rex-{mode}", "species": "dog"})
            assert created.structured_content is not None, created
            pet_id = created.structured_content["id"]
            shown = await client.call_tool("shop_get_pet", {"pet_id": pet_id})
            page = await client.call_tool("shop_list_pets", {"species": "dog"})
            missing = await client.call_tool("shop_get_pet", {"pet_id": 99999})
    tools = {tool.name: tool for tool in listed.tools}
    assert sorted(tools) == ["shop_create_pet", "shop_delete_pet", "shop_get_pet", "shop_list_pets"]
    assert tools["shop_list_pets"].annotations is not None and tools["shop_list_pets"].annotations.read_only_hint
    assert tools["shop_get_pet"].output_schema is not None
    assert not created.is_error and shown.structured_content == created.structured_content
    assert f"Rex-{mode}" in [pet["name"] for pet in (page.structured_content or {})["items"]]
    assert missing.is_error
    texts = [block.text for block in missing.content if isinstance(block, types.TextContent)]
    assert "404" in texts[0]

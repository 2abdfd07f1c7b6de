"""The official SDK's OAuth clients against a live platform whose tenants require authorization.

``OAuthClientProvider`` discovers everything from the endpoint URL (protected-resource metadata, then the
authorization server), registers itself (DCR) or presents a client metadata document URL (CIMD, served over
HTTPS by the test), and sends a person to the consent page; the person signs in and consents through real
HTTP requests (``tests/e2e/oauth_person.py``). Then tools are called with the token, the token is refreshed
after it expires, and the tokens are tried where they must not work.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx
import httpx2
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from tests.e2e.live import LiveServer, free_port
from tests.e2e.oauth_person import Person
from tests.e2e.raw_http import stateless_headers, stateless_request
from tests.https_documents import DocumentServer

pytestmark = pytest.mark.anyio

TEST_DEADLINE = 120.0
REQUEST_TIMEOUT = 30.0
PASSWORD = "correct horse battery staple"
TENANT_A, TENANT_B = "secure", "secure-b"

# Runs in ``manage.py shell -c``: two tenants that require authorization, their members, their tools.
SETUP_SCRIPT = f"""
from django.contrib.auth import get_user_model
from tenants import services
users = {{name: get_user_model().objects.create_user(name, password={PASSWORD!r}) for name in ("alice", "bob")}}
text = lambda t: {{"content": [{{"type": "text", "text": t}}]}}
for slug, name in (({TENANT_A!r}, "Secure workspace"), ({TENANT_B!r}, "Second workspace")):
    tenant = services.tenant_create(slug=slug, name=name, requires_authorization=True)
    for user in users.values():
        services.membership_add(tenant=tenant, user=user)
    services.tool_create(tenant=tenant, name="greet", config=text(f"hello from {{slug}}"))
    services.tool_create(tenant=tenant, name="charge_card", required_scopes="billing:write", config=text("charged"))
"""


@pytest.fixture(scope="session")
def secure_platform(live_platform: LiveServer) -> LiveServer:
    live_platform.manage("shell", "-c", SETUP_SCRIPT)
    return live_platform


@pytest.fixture
def documents(secure_platform: LiveServer) -> Any:
    with DocumentServer(secure_platform.pki.cert, secure_platform.pki.key) as server:
        yield server


@dataclass
class MemoryStorage:
    """The SDK's ``TokenStorage``: what a client keeps between runs."""

    tokens: OAuthToken | None = None
    client_info: OAuthClientInformationFull | None = None
    token_saves: list[OAuthToken] = field(default_factory=list)

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens
        self.token_saves.append(tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


@dataclass
class Connection:
    provider: OAuthClientProvider
    storage: MemoryStorage
    person: Person
    redirect_uri: str

    @property
    def access_token(self) -> str:
        assert self.storage.tokens is not None
        return self.storage.tokens.access_token


def native_app(
    endpoint: str,
    person: Person,
    *,
    client_metadata_url: str | None = None,
    redirect_uri: str = "",
    client_name: str = "SDK end-to-end",
) -> Connection:
    """An SDK client as a native app builds it: a loopback redirect on a random port, a browser to open; it
    registers itself as ``client_name``."""
    redirect_uri = redirect_uri or f"http://127.0.0.1:{free_port()}/callback"
    landed: list[str] = []

    async def open_browser(authorization_url: str) -> None:
        landed.append(await person.authorize(authorization_url))

    async def receive_callback() -> AuthorizationCodeResult:
        query = {k: v[0] for k, v in parse_qs(urlsplit(landed[-1]).query).items()}
        assert landed[-1].startswith(redirect_uri), landed[-1]
        assert "error" not in query, query
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))

    storage = MemoryStorage()
    metadata = OAuthClientMetadata(
        client_name=client_name,
        redirect_uris=[redirect_uri],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    provider = OAuthClientProvider(
        server_url=endpoint,
        client_metadata=metadata,
        storage=storage,
        redirect_handler=open_browser,
        callback_handler=receive_callback,
        client_metadata_url=client_metadata_url,
    )
    return Connection(provider, storage, person, redirect_uri)


@asynccontextmanager
async def connected(endpoint: str, auth: httpx2.Auth) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(auth=auth, timeout=REQUEST_TIMEOUT) as http,
        Client(
            streamable_http_client(endpoint, http_client=http), cache=None, read_timeout_seconds=REQUEST_TIMEOUT
        ) as client,
    ):
        yield client


@asynccontextmanager
async def signed_in(
    endpoint: str, username: str = "alice", *, client_metadata_url: str | None = None, redirect_uri: str = ""
) -> AsyncIterator[tuple[Connection, Client]]:
    """A person connects a native app to ``endpoint`` (signing in and consenting as asked); yields the app and its
    client once a first ``greet`` call has worked."""
    async with Person(username, PASSWORD) as person:
        app = native_app(endpoint, person, client_metadata_url=client_metadata_url, redirect_uri=redirect_uri)
        async with connected(endpoint, app.provider) as client:
            assert only_text(await client.call_tool("greet", {})) == "hello from secure"
            yield app, client


def only_text(result: types.CallToolResult) -> str:
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, types.TextContent), block
    return block.text


async def raw_call(endpoint: str, token: str, name: str = "greet") -> httpx.Response:
    """One stateless ``tools/call`` with ``token``, as any HTTP client would send it."""
    body = stateless_request(1, "tools/call", {"name": name, "arguments": {}})
    headers = {**stateless_headers("tools/call", name), "Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT) as http:
        return await http.post(endpoint, json=body, headers=headers)


def assert_invalid_token(response: httpx.Response) -> None:
    assert response.status_code == 401, response.text
    assert 'error="invalid_token"' in response.headers["www-authenticate"]


# ---- the flows ---------------------------------------------------------------------------------------


async def test_sdk_registers_itself_gets_consent_and_calls_a_tool(secure_platform: LiveServer) -> None:
    endpoint = secure_platform.endpoint(TENANT_A)
    with anyio.fail_after(TEST_DEADLINE):
        async with signed_in(endpoint) as (app, client):
            listed = await client.list_tools()
    assert [tool.name for tool in listed.tools] == ["greet"], "charge_card needs a scope not granted"
    assert app.person.consents == 1
    assert app.storage.client_info is not None
    assert app.storage.client_info.client_id and not app.storage.client_info.client_id.startswith("https:")
    assert app.storage.tokens is not None
    assert set((app.storage.tokens.scope or "").split()) == {"mcp:tools", "mcp:resources", "mcp:prompts"}


async def test_sdk_uses_a_client_metadata_document_url_as_its_client_id(
    secure_platform: LiveServer, documents: DocumentServer
) -> None:
    endpoint = secure_platform.endpoint(TENANT_A)
    redirect_uri = f"http://127.0.0.1:{free_port()}/callback"
    client_id = documents.client_document("/sdk-client.json", [redirect_uri], client_name="SDK via CIMD")
    with anyio.fail_after(TEST_DEADLINE):
        async with signed_in(endpoint, client_metadata_url=client_id, redirect_uri=redirect_uri) as (app, _):
            pass
    assert app.storage.client_info is not None and app.storage.client_info.client_id == client_id
    assert documents.hits["/sdk-client.json"] == 1


async def test_an_expired_token_is_refreshed_without_asking_the_person_again(secure_platform: LiveServer) -> None:
    endpoint = secure_platform.endpoint(TENANT_A)
    with anyio.fail_after(TEST_DEADLINE):
        async with signed_in(endpoint) as (app, client):
            first = app.storage.tokens
            assert first is not None and first.refresh_token
            assert app.storage.client_info is not None
            await secure_platform.amanage("shell", "-c", expire_access_tokens_script(app.storage.client_info.client_id))
            assert_invalid_token(await raw_call(endpoint, first.access_token))
            # The client's clock now agrees: its token has expired (what expires_in seconds would do).
            app.provider.context.token_expiry_time = time.time() - 1
            assert only_text(await client.call_tool("greet", {})) == "hello from secure"
    second = app.storage.tokens
    assert second is not None
    assert second.access_token != first.access_token
    assert second.refresh_token and second.refresh_token != first.refresh_token, "refresh tokens rotate"
    assert app.person.consents == 1


def expire_access_tokens_script(client_id: str) -> str:
    return (
        "from datetime import timedelta\n"
        "from django.utils import timezone\n"
        "from oauth2_provider.models import get_access_token_model\n"
        f"get_access_token_model().objects.filter(application__client_id={client_id!r})"
        ".update(expires=timezone.now() - timedelta(seconds=1))\n"
    )


async def test_a_tool_needing_another_scope_is_403_and_the_sdk_steps_up(secure_platform: LiveServer) -> None:
    endpoint = secure_platform.endpoint(TENANT_A)
    with anyio.fail_after(TEST_DEADLINE):
        async with signed_in(endpoint) as (app, client):
            refused = await raw_call(endpoint, app.access_token, "charge_card")
            assert refused.status_code == 403
            challenge = refused.headers["www-authenticate"]
            assert 'error="insufficient_scope"' in challenge
            assert 'scope="mcp:tools mcp:resources mcp:prompts billing:write"' in challenge
            # The SDK sees the same 403, asks the person for the wider grant, and retries.
            assert only_text(await client.call_tool("charge_card", {})) == "charged"
    assert app.person.consents == 2
    assert app.storage.tokens is not None
    assert "billing:write" in (app.storage.tokens.scope or "").split()


# ---- where a token must not work ---------------------------------------------------------------------


async def test_tokens_are_rejected_at_another_tenant_when_tampered_and_after_leaving(
    secure_platform: LiveServer,
) -> None:
    endpoint_a, endpoint_b = secure_platform.endpoint(TENANT_A), secure_platform.endpoint(TENANT_B)
    with anyio.fail_after(TEST_DEADLINE):
        async with signed_in(endpoint_a, "bob") as (app, _):
            pass
        token = app.access_token
        assert (await raw_call(endpoint_a, token)).status_code == 200
        # Bob is a member of B too: only the audience keeps A's token out.
        assert_invalid_token(await raw_call(endpoint_b, token))
        tampered = token[:-1] + ("A" if token[-1] != "A" else "B")
        assert_invalid_token(await raw_call(endpoint_a, tampered))
        await secure_platform.amanage("shell", "-c", LEAVE_TENANT_A_SCRIPT)
        assert_invalid_token(await raw_call(endpoint_a, token))


LEAVE_TENANT_A_SCRIPT = f"""
from django.contrib.auth import get_user_model
from tenants import services
from tenants.models import Tenant
bob = get_user_model().objects.get(username="bob")
services.membership_remove(tenant=Tenant.objects.get(slug={TENANT_A!r}), user=bob)
"""


# ---- machine clients ---------------------------------------------------------------------------------

MACHINE_CLIENT_SCRIPT = f"""
import json
from mcp_platform.oauth.machine_clients import machine_client_create
from tenants.models import Tenant
tenant = Tenant.objects.get(slug={TENANT_A!r})
client, secret = machine_client_create(tenant=tenant, name="Nightly job", scopes=["mcp:tools"])
print(json.dumps({{"client_id": client.client_id, "secret": secret}}))
"""


async def test_a_machine_client_calls_tools_with_client_credentials(secure_platform: LiveServer) -> None:
    endpoint = secure_platform.endpoint(TENANT_A)
    with anyio.fail_after(TEST_DEADLINE):
        output = await secure_platform.amanage("shell", "-c", MACHINE_CLIENT_SCRIPT)
        credentials = json.loads(output.strip().splitlines()[-1])
        storage = MemoryStorage()
        provider = ClientCredentialsOAuthProvider(
            server_url=endpoint,
            storage=storage,
            client_id=credentials["client_id"],
            client_secret=credentials["secret"],
            issuer=secure_platform.web_urls[0],  # the credentials go to this authorization server only
        )
        async with connected(endpoint, provider) as client:
            assert only_text(await client.call_tool("greet", {})) == "hello from secure"
        assert storage.tokens is not None
        assert storage.tokens.scope == "mcp:tools"
        assert_invalid_token(await raw_call(secure_platform.endpoint(TENANT_B), storage.tokens.access_token))


# ---- the 2024-11-05 HTTP+SSE transport ------------------------------------------------------------------


async def test_an_sse_transport_client_discovers_authorization_from_the_sse_endpoint(
    secure_platform: LiveServer,
) -> None:
    """The SDK's ``sse_client`` is given the ``/sse`` URL: the 401 there must lead to metadata whose ``resource``
    is that URL (the SDK refuses ``…/mcp``: "Protected resource … does not match expected …/sse"). A token that
    stops working mid-session is refused on ``/messages`` with a challenge leading back to the same metadata."""
    sse = secure_platform.sse_endpoint(TENANT_A)
    with anyio.fail_after(TEST_DEADLINE):
        async with Person("alice", PASSWORD) as person:
            app = native_app(sse, person)
            transport = sse_client(sse, timeout=10.0, sse_read_timeout=REQUEST_TIMEOUT, auth=app.provider)
            async with Client(transport, mode="legacy", cache=None, read_timeout_seconds=REQUEST_TIMEOUT) as client:
                assert only_text(await client.call_tool("greet", {})) == "hello from secure"
                metadata = app.provider.context.protected_resource_metadata
                assert metadata is not None and str(metadata.resource) == sse
                first = app.access_token
                assert app.storage.client_info is not None
                await secure_platform.amanage(
                    "shell", "-c", expire_access_tokens_script(app.storage.client_info.client_id)
                )
                assert only_text(await client.call_tool("greet", {})) == "hello from secure"
                assert app.access_token != first
    assert app.person.consents == 2, "the /messages refusal sent the person through consent again, for /sse"
    # Audiences stay exact: the /sse token is not one for Streamable HTTP, nor for another tenant.
    assert_invalid_token(await raw_call(secure_platform.endpoint(TENANT_A), app.access_token))
    async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT) as http:
        other = await http.get(
            secure_platform.sse_endpoint(TENANT_B),
            headers={"Authorization": f"Bearer {app.access_token}", "Accept": "text/event-stream"},
        )
    assert_invalid_token(other)

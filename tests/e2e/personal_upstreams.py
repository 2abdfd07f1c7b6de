"""A person's upstreams for the end-to-end tests of tools that act as the person (issue 30): a second platform
instance whose tenant requires OAuth, and a REST API (``tests/upstreams/notes_api.py``) that trusts that instance
through token introspection, both real processes.

The instance is an embedded ``manage.py serve`` on a SQLite database of its own, with
``tests.upstreams.personal_platform`` installed (the ``personal.whoami`` Python tool). It is served and named as
``http://localhost:<port>`` (``MCP_PUBLIC_BASE_URL``) while the session's platform is ``http://127.0.0.1:<port>``:
browsers keep cookies per host name, not per port, so a person can be signed in to both at once. Its tenant holds
``whoami`` (Python), ``greet`` (static) and ``notes_api`` (static, requiring ``notes:read notes:write``, which makes
those scopes grantable there), a public client for the tests' own authorization-code flows, and the Notes API's
confidential client (a machine client whose token exchange target is the API's URL: the platform introspects only
tokens exchanged for one of the caller's targets, ``mcp_platform/oauth/introspection.py``).

Every process started carries a mark of its own (``tests/process_marks.py``); leaving ``personal_upstreams`` stops
them all and fails when one is left.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx

from tests.e2e.live import (
    MIGRATED,
    PYTHON,
    REPO,
    LiveServer,
    ManagedProcess,
    base_env,
    command_runner,
    free_port,
    in_tenant,
    live_pki,
    sqlite_database,
    start_web,
    wait_for_port,
)
from tests.e2e.oauth_person import Person, post_form
from tests.process_marks import TEST_MARK, kill_all, new_mark, wait_until_none_marked
from tests.upstreams.notes_api import SECRET_ENV

SETTINGS_MODULE = "tests.upstreams.personal_platform.settings"
WHOAMI_FUNCTION = "personal.whoami"
NOTES_SCOPES = "notes:read notes:write"
# What the Notes API's client may be granted, in exchanges and for itself.
API_CLIENT_SCOPES = ["mcp:tools", "notes:read", "notes:write"]
# RFC 8693 token exchange.
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
REQUEST_TIMEOUT = 30.0
STOP_DEADLINE = 20.0

# Runs in ``manage.py shell -c``: the tenant, its tools and the public client; prints the client's id as JSON.
TENANT_SCRIPT = """
import json
from oauth2_provider.models import get_application_model
from tenants import services
from tenants.backends.python_grants import python_function_grant
tenant = services.tenant_create(slug={slug!r}, name="Personal upstream", requires_authorization=True)
python_function_grant(tenant=tenant, function={whoami!r})
services.tool_create(tenant=tenant, name="whoami", description="Whom this call acts for.", backend="python",
                     config={{"function": {whoami!r}}})
text = lambda value: {{"content": [{{"type": "text", "text": value}}]}}
services.tool_create(tenant=tenant, name="greet", config=text("hello from {slug}"))
services.tool_create(tenant=tenant, name="notes_api", required_scopes={notes_scopes!r},
                     description="Where the person's notes are kept.",
                     config=text({api_url!r}))
client = get_application_model().objects.create(
    name="Personal upstream test client", client_type="public", authorization_grant_type="authorization-code",
    redirect_uris={redirect_uri!r}, tenant=tenant,
)
print(json.dumps({{"client_id": client.client_id}}))
"""

# Runs in ``manage.py shell -c`` with the tenant bound; prints the client's id and secret as JSON.
CONFIDENTIAL_CLIENT_SCRIPT = """
import json
from mcp_platform.oauth.machine_clients import machine_client_create
client, secret = machine_client_create(tenant=tenant, name={name!r}, scopes={scopes!r}, exchange_targets={targets!r})
print(json.dumps({{"client_id": client.client_id, "secret": secret}}))
"""

# Runs in ``manage.py shell -c`` with the tenant bound; prints the client's id and secret ("" when public) as JSON.
AUTHORIZATION_CODE_CLIENT_SCRIPT = """
import json
from oauth2_provider.generators import generate_client_secret
from oauth2_provider.models import get_application_model
secret = generate_client_secret() if {confidential!r} else ""
client = get_application_model().objects.create(
    name={name!r}, client_type="confidential" if {confidential!r} else "public",
    authorization_grant_type="authorization-code", redirect_uris={redirect_uris!r}, tenant=tenant,
    client_secret=secret, hash_client_secret=True,
)
print(json.dumps({{"client_id": client.client_id, "secret": secret}}))
"""

PERSON_SCRIPT = """
from django.contrib.auth import get_user_model
user = get_user_model().objects.create_user({username!r}, password={password!r})
services.membership_add(tenant=tenant, user=user)
"""


@dataclass(frozen=True)
class Account:
    """A person's credentials on the upstream instance."""

    username: str
    password: str


@dataclass(frozen=True)
class OAuthClient:
    """An OAuth client of the instance; one with a secret authenticates with it (HTTP Basic at the token and
    introspection endpoints), one without is public."""

    client_id: str
    secret: str = ""


async def confidential_client_create(
    platform: LiveServer, tenant: str, *, name: str, scopes: list[str], exchange_targets: list[str]
) -> OAuthClient:
    """A machine client of ``tenant`` on ``platform`` (any live platform) allowed ``scopes``, that may exchange
    people's tokens for, and introspect the tokens exchanged for, ``exchange_targets``."""
    output = await platform.amanage("shell", "-c", _client_script(tenant, name, scopes, exchange_targets))
    return _created_client(output)


def _client_script(tenant: str, name: str, scopes: list[str], exchange_targets: list[str]) -> str:
    return in_tenant(tenant, CONFIDENTIAL_CLIENT_SCRIPT.format(name=name, scopes=scopes, targets=exchange_targets))


def _created_client(output: str) -> OAuthClient:
    return OAuthClient(**json.loads(output.strip().splitlines()[-1]))


@dataclass
class NotesApi:
    """The running Notes API: ``url`` is its resource URL (the audience its tokens must name), its server URL in its
    OpenAPI document, and the base of its operations."""

    url: str
    issuer: str
    process: ManagedProcess

    @property
    def openapi_url(self) -> str:
        return f"{self.url}/openapi.json"


def start_notes_api(
    stack: ExitStack, directory: Path, *, issuer: str, client: OAuthClient, port: int, mark: str = ""
) -> NotesApi:
    """Start the Notes API on ``port`` trusting ``issuer`` (introspecting as ``client``, whose exchange targets must
    name ``http://127.0.0.1:<port>``); stopped when ``stack`` closes."""
    url = f"http://127.0.0.1:{port}"
    argv = [str(PYTHON), "-m", "tests.upstreams.notes_api", "--port", str(port), "--resource", url]
    argv += ["--issuer", issuer, "--client-id", client.client_id]
    env = {**os.environ, "PYTHONPATH": str(REPO), SECRET_ENV: client.secret}
    if mark:
        env[TEST_MARK] = mark
    directory.mkdir(parents=True, exist_ok=True)
    process = ManagedProcess.start(f"notes-api-{port}", argv, env, directory)
    stack.callback(process.stop)
    wait_for_port(process, port)
    return NotesApi(url=url, issuer=issuer, process=process)


def start_personal_platform(stack: ExitStack, tmp: Path, *, mark: str = "") -> LiveServer:
    """An embedded platform with the personal upstream's app installed, named ``http://localhost:<port>``, on a
    migrated SQLite database of its own; stopped when ``stack`` closes."""
    port = free_port()
    base_url = f"http://localhost:{port}"
    pki = live_pki(tmp)
    env = base_env(tmp / "var", secrets.token_urlsafe(32), pki)
    env.update({"DJANGO_SETTINGS_MODULE": SETTINGS_MODULE, "MCP_PUBLIC_BASE_URL": base_url})
    if mark:
        env[TEST_MARK] = mark
    sqlite_database(env, prepared_with=MIGRATED)
    process, _ = start_web("personal-upstream", env, tmp, port=port)
    stack.callback(process.stop)
    wait_for_port(process, port)
    return LiveServer(
        web_urls=[base_url],
        processes=[process],
        command_env=env,
        production=False,
        pki=pki,
        commands=command_runner(stack, env),
    )


def _pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


@dataclass
class PersonalUpstream:
    """The second instance, its tenant and the Notes API that trusts it."""

    platform: LiveServer
    tenant: str
    # A public client of the tenant for the tests' own authorization-code flows, and where it is redirected.
    public_client: OAuthClient
    redirect_uri: str
    # The Notes API's client: introspects (and may exchange people's tokens for) tokens for ``api.url``.
    api_client: OAuthClient
    api: NotesApi
    mark: str

    @property
    def issuer(self) -> str:
        """The instance's issuer (RFC 8414), which is also its base URL."""
        return self.platform.web_urls[0]

    @property
    def mcp_url(self) -> str:
        """The tenant's Streamable HTTP endpoint (its RFC 8707 resource)."""
        return self.platform.endpoint(self.tenant)

    @property
    def authorization_endpoint(self) -> str:
        return f"{self.issuer}/oauth/authorize/"

    @property
    def token_endpoint(self) -> str:
        return f"{self.issuer}/oauth/token/"

    @property
    def introspection_endpoint(self) -> str:
        return f"{self.issuer}/oauth/introspect/"

    @property
    def login_url(self) -> str:
        return f"{self.issuer}/account/login/"

    async def add_person(self, prefix: str = "person") -> Account:
        """A new person ``<prefix>-<random>`` with a password of their own, a member of the tenant."""
        account = Account(f"{prefix}-{secrets.token_hex(4)}", secrets.token_urlsafe(16))
        script = PERSON_SCRIPT.format(username=account.username, password=account.password)
        await self.platform.amanage("shell", "-c", in_tenant(self.tenant, script))
        return account

    async def oauth_client_create(self, *, name: str, redirect_uris: list[str], confidential: bool) -> OAuthClient:
        """An authorization-code client of the tenant registered by its admin (for a platform that connects people to
        this instance with a client it was given), public or confidential."""
        script = AUTHORIZATION_CODE_CLIENT_SCRIPT.format(
            name=name, confidential=confidential, redirect_uris=" ".join(redirect_uris)
        )
        return _created_client(await self.platform.amanage("shell", "-c", in_tenant(self.tenant, script)))

    def person(self, account: Account) -> Person:
        """A headless browser that signs in as ``account`` and consents when asked (``async with`` it)."""
        return Person(account.username, account.password, timeout=REQUEST_TIMEOUT)

    async def sign_in(self, browser: httpx.AsyncClient, account: Account) -> None:
        """Sign ``account`` in through the instance's login page, leaving its session cookie in ``browser``."""
        page = await browser.get(self.login_url)
        page.raise_for_status()
        fields = {**post_form(page.text, with_field="password"), "username": account.username}
        fields["password"] = account.password
        response = await browser.post(self.login_url, data=fields, headers={"referer": self.login_url})
        assert response.is_redirect, f"signing in as {account.username} failed:\n{response.text[:2000]}"

    async def person_token(
        self, account: Account, *, scope: str = "mcp:tools", client: OAuthClient | None = None
    ) -> str:
        """An access token for the tenant's endpoint, got by ``client`` (the public client unless told; another must
        be registered with ``redirect_uri``) through the authorization-code flow with PKCE: ``account`` signs in and
        consents on the instance's real pages."""
        client = client or self.public_client
        verifier, challenge = _pkce_pair()
        state = secrets.token_urlsafe(16)
        query = {
            "response_type": "code",
            "client_id": client.client_id,
            "redirect_uri": self.redirect_uri,
            "scope": scope,
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "resource": self.mcp_url,
        }
        async with self.person(account) as person:
            landed = await person.authorize(f"{self.authorization_endpoint}?{urlencode(query)}")
        answer = {key: values[0] for key, values in parse_qs(urlsplit(landed).query).items()}
        assert landed.startswith(self.redirect_uri) and answer.get("state") == state, landed
        assert "code" in answer, f"no code in the redirect: {landed}"
        form = {
            "grant_type": "authorization_code",
            "code": answer["code"],
            "redirect_uri": self.redirect_uri,
            "code_verifier": verifier,
            "resource": self.mcp_url,
        }
        if not client.secret:
            form["client_id"] = client.client_id
        return await self._token(form, auth=(client.client_id, client.secret) if client.secret else None)

    async def exchange(self, subject_token: str, *, audience: str = "", scope: str = "") -> str:
        """``subject_token`` (a person's token for the tenant's endpoint) exchanged by the Notes API's client for a
        token to ``audience`` (the API's URL unless told), with ``scope`` (the subject's, as far as the client may
        hold them, unless told)."""
        form = {
            "grant_type": TOKEN_EXCHANGE,
            "subject_token": subject_token,
            "subject_token_type": ACCESS_TOKEN_TYPE,
            "resource": audience or self.api.url,
        }
        if scope:
            form["scope"] = scope
        return await self._token(form, auth=(self.api_client.client_id, self.api_client.secret))

    async def introspect(self, token: str, *, client: OAuthClient | None = None) -> dict[str, Any]:
        """What the instance's introspection endpoint answers ``client`` (the Notes API's unless told) about
        ``token``."""
        client = client or self.api_client
        async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT) as http:
            response = await http.post(
                self.introspection_endpoint, data={"token": token}, auth=(client.client_id, client.secret)
            )
        assert response.status_code == 200, response.text
        answer: dict[str, Any] = response.json()
        return answer

    async def initialize(self, token: str) -> httpx.Response:
        """An ``initialize`` with ``token`` at the MCP endpoint, as any HTTP client would send it: its gateway checks
        the token first."""
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "check", "version": "1"},
            },
        }
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
        async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT) as http:
            return await http.post(self.mcp_url, json=body, headers=headers)

    async def _token(self, form: dict[str, str], *, auth: tuple[str, str] | None) -> str:
        async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT) as http:
            response = await http.post(self.token_endpoint, data=form, auth=auth or httpx.USE_CLIENT_DEFAULT)
        assert response.status_code == 200, f"the token endpoint refused {form['grant_type']}: {response.text}"
        token: str = response.json()["access_token"]
        return token

    def logs(self) -> str:
        return "\n\n".join(process.tail() for process in [*self.platform.processes, self.api.process])


@contextmanager
def personal_upstreams(tmp: Path) -> Iterator[PersonalUpstream]:
    """Start the instance (its tenant and clients set up) and the Notes API; on leaving, stop both and fail if any
    process they started is still running."""
    mark = new_mark()
    try:
        with ExitStack() as stack:
            platform = start_personal_platform(stack, tmp / "platform", mark=mark)
            tenant = f"personal-{secrets.token_hex(4)}"
            api_port = free_port()
            api_url = f"http://127.0.0.1:{api_port}"
            redirect_uri = f"http://127.0.0.1:{free_port()}/callback"
            script = TENANT_SCRIPT.format(
                slug=tenant,
                whoami=WHOAMI_FUNCTION,
                notes_scopes=NOTES_SCOPES,
                api_url=api_url,
                redirect_uri=redirect_uri,
            )
            public_client = _created_client(platform.manage("shell", "-c", script))
            api_client = _created_client(
                platform.manage("shell", "-c", _client_script(tenant, "Notes API", API_CLIENT_SCOPES, [api_url]))
            )
            api = start_notes_api(
                stack, tmp / "notes-api", issuer=platform.web_urls[0], client=api_client, port=api_port, mark=mark
            )
            yield PersonalUpstream(platform, tenant, public_client, redirect_uri, api_client, api, mark)
    finally:
        left = wait_until_none_marked(TEST_MARK, mark, timeout=STOP_DEADLINE)
        if left:
            kill_all(left)
            raise AssertionError(f"still running {STOP_DEADLINE}s after the personal upstreams stopped: {left}")

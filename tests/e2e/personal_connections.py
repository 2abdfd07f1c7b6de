"""The platform under test with an upstream that acts as each person (issue 30), for the end-to-end tests of people's
connections: a tenant requiring authorization whose upstream is the personal upstream's MCP endpoint
(``tests/e2e/personal_upstreams.py``), its members with an account of their own on both instances, their official
SDK clients authorized on our platform, and the ways a person connects: in Chromium, or headless through the same
pages (``connect_headless``, for tests where the browser adds nothing).

The upstream's catalog is read with a shared token of a reader account of the upstream (the ``machine`` config):
an upstream that acts as each person is added only where the platform can read its catalog on its own.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

import anyio
import httpx
import httpx2
import mcp_types as types
import pytest
from mcp.client import Client, ClientRequestContext
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.browser import CHROMIUM, CHROMIUM_ARGS, PASSWORD, SKIP_ENV
from tests.e2e.live import LiveServer, in_tenant
from tests.e2e.oauth_person import Person, post_form
from tests.e2e.personal_upstreams import Account, OAuthClient, PersonalUpstream
from tests.e2e.test_oauth_clients import Connection, native_app

REQUEST_TIMEOUT = 30.0
BROWSER_TIMEOUT_MS = 15_000
UPSTREAM = "mine"
TOOL = f"{UPSTREAM}_whoami"
READER_SECRET = "upstream-catalog-reader"
# What reading a catalog takes: tools/list, resources/list, prompts/list.
READER_SCOPE = "mcp:tools mcp:resources mcp:prompts"

# Runs in ``manage.py shell -c`` on the platform under test: the tenant and its upstream; prints their ids as JSON.
SCENE_SCRIPT = """
import json
from tenants import services
from tenants.federation.services import upstream_add
from tenants.secrets import secret_set
tenant = services.tenant_create(slug={slug!r}, name="People's workspace", requires_authorization=True,
                                outbound_allowed_networks=["127.0.0.1/32"])
secret_set(tenant=tenant, name={reader_secret!r}, value={reader_token!r})
{secrets}
upstream, report = upstream_add(tenant=tenant, name={name!r}, url={url!r}, auth={auth!r})
# Any call of whoami may become a task (a 2026-07-28 client that declared the tasks extension gets one).
services.tool_update(tool=tenant.tools.get(name={tool!r}), data={{"task_support": "optional"}})
print(json.dumps({{"tenant_id": tenant.pk, "upstream_id": upstream.pk}}))
"""

# Runs in ``manage.py shell -c`` with the tenant bound: a member who signs in with ``PASSWORD``.
MEMBER_SCRIPT = """
from django.contrib.auth import get_user_model
user = get_user_model().objects.create_user({username!r}, password={password!r})
services.membership_add(tenant=tenant, user=user)
"""

# Runs in ``manage.py shell -c`` with the tenant bound: a person's credential for a target as JSON (null: none), its
# values unsealed (for the tests to look for them where they must not be).
CREDENTIAL_SCRIPT = """
import json
from tenants.connections.services import credential_values
from tenants.models import PersonalCredential
row = PersonalCredential.objects.filter(tenant=tenant, user__username={username!r}, target={target!r}).first()
print(json.dumps(None if row is None else {{
    "status": row.status, "kind": row.kind, "scope": row.scope, "values": credential_values(row),
    "expires_at": row.expires_at.isoformat() if row.expires_at else None,
    "refreshed_at": row.refreshed_at.isoformat() if row.refreshed_at else None, "last_error": row.last_error,
}}))
"""

# Runs in ``manage.py shell -c`` with the tenant bound: the person's access token for a target expired an hour ago.
EXPIRE_SCRIPT = """
from datetime import timedelta
from django.utils import timezone
from tenants.models import PersonalCredential
rows = PersonalCredential.objects.filter(tenant=tenant, user__username={username!r}, target={target!r})
assert rows.update(expires_at=timezone.now() - timedelta(hours=1)) == 1
"""

# Runs in ``manage.py shell -c`` with the tenant bound: the person removes their connection, which is revoked at the
# upstream (RFC 7009) as their connected-apps page does; prints whether the upstream accepted the revocation.
REMOVE_SCRIPT = """
import json
from asgiref.sync import async_to_sync
from tenants.connections import flow
from tenants.connections.services import credential_remove
from tenants.models import PersonalCredential
row = PersonalCredential.objects.get(tenant=tenant, user__username={username!r}, target={target!r})
values = credential_remove(credential=row)
print(json.dumps({{"revoked": async_to_sync(flow.revoke)(credential=row, values=values)}}))
"""

# Runs in ``manage.py shell -c`` with the tenant bound: how the platform is registered at a target's authorization
# server.
REGISTRATION_SCRIPT = """
import json
from tenants.models import OAuthClientRegistration
row = OAuthClientRegistration.objects.get(tenant=tenant, target={target!r})
print(json.dumps({{"client_id": row.client_id, "issuer": row.issuer, "server": row.server}}))
"""

# Runs in ``manage.py shell -c`` on the upstream instance: the grants its token endpoint made for a client and a
# person. Every code or refresh-token grant issues a refresh token; refresh tokens rotate, the old one kept revoked
# (while the access token it came with is deleted).
UPSTREAM_GRANTS_SCRIPT = """
import json
from oauth2_provider.models import get_refresh_token_model
refresh = get_refresh_token_model().objects.filter(application__client_id={client_id!r}, user__username={username!r})
print(json.dumps({{"grants": refresh.count(), "revoked": refresh.filter(revoked__isnull=False).count()}}))
"""


def last_json(output: str) -> Any:
    return json.loads(output.strip().splitlines()[-1])


@dataclass
class Member:
    """A person: their account on the platform under test, their account at the upstream, and their SDK client's
    OAuth authorization on our platform, one per web process reached (each is a resource of its own: its port is in
    its URL), each made with one registration and one consent and reused by every client made with it."""

    account: Account
    upstream: Account
    person: Person
    apps: dict[str, Connection] = field(default_factory=dict)

    def app_for(self, endpoint: str) -> Connection:
        if endpoint not in self.apps:
            self.apps[endpoint] = native_app(endpoint, self.person)
        return self.apps[endpoint]

    @property
    def app(self) -> Connection:
        """The authorization of their first client (for the first web process)."""
        return next(iter(self.apps.values()))

    @property
    def access_token(self) -> str:
        """Their first client's access token on our platform (after a first request)."""
        return self.app.access_token


@dataclass
class Scene:
    """A tenant of the platform under test whose upstream ``mine`` is the personal upstream's endpoint, acting as
    each person with ``auth``."""

    live: LiveServer
    upstream: PersonalUpstream
    slug: str
    tenant_id: int
    upstream_id: int
    auth: dict[str, Any]
    _stack: AsyncExitStack = field(default_factory=AsyncExitStack, repr=False)

    @property
    def target(self) -> str:
        return f"upstream:{self.upstream_id}"

    @property
    def base_url(self) -> str:
        return self.live.web_urls[0]

    def endpoint(self, *, web: int = 0) -> str:
        return self.live.endpoint(self.slug, web=web)

    async def member(self, prefix: str) -> Member:
        """A new member with an account at the upstream, whose SDK client is authorized on our platform."""
        account = Account(f"{prefix}-{secrets.token_hex(3)}", PASSWORD)
        script = MEMBER_SCRIPT.format(username=account.username, password=account.password)
        await self.live.amanage("shell", "-c", in_tenant(self.slug, script))
        theirs = await self.upstream.add_person(prefix)
        person = await self._stack.enter_async_context(Person(account.username, account.password))
        member = Member(account, theirs, person)
        member.app_for(self.endpoint())
        return member

    async def credential(self, member: Member, target: str = "") -> dict[str, Any] | None:
        script = CREDENTIAL_SCRIPT.format(username=member.account.username, target=target or self.target)
        found: dict[str, Any] | None = last_json(await self.live.amanage("shell", "-c", in_tenant(self.slug, script)))
        return found

    async def expire(self, member: Member) -> None:
        script = EXPIRE_SCRIPT.format(username=member.account.username, target=self.target)
        await self.live.amanage("shell", "-c", in_tenant(self.slug, script))

    async def remove(self, member: Member) -> bool:
        """The member removes their connection; whether the upstream accepted its revocation."""
        script = REMOVE_SCRIPT.format(username=member.account.username, target=self.target)
        revoked: bool = last_json(await self.live.amanage("shell", "-c", in_tenant(self.slug, script)))["revoked"]
        return revoked

    async def registration(self) -> dict[str, Any]:
        script = REGISTRATION_SCRIPT.format(target=self.target)
        found: dict[str, Any] = last_json(await self.live.amanage("shell", "-c", in_tenant(self.slug, script)))
        return found

    async def upstream_grants(self, member: Member) -> dict[str, int]:
        """How many grants (code or refresh) the upstream made to the platform's client for ``member``, and how many
        of their refresh tokens are revoked."""
        client_id = (await self.registration())["client_id"]
        script = UPSTREAM_GRANTS_SCRIPT.format(client_id=client_id, username=member.upstream.username)
        found: dict[str, int] = last_json(await self.upstream.platform.amanage("shell", "-c", script))
        return found

    async def aclose(self) -> None:
        await self._stack.aclose()


async def scene_create(
    live: LiveServer, upstream: PersonalUpstream, *, auth: dict[str, Any], secrets_to_set: dict[str, str] | None = None
) -> Scene:
    """A new tenant on ``live`` with the upstream ``mine`` added with ``auth`` (plus the catalog reader's shared
    token as ``machine``), and ``secrets_to_set`` stored first."""
    reader = await upstream.add_person("catalog-reader")
    reader_token = await upstream.person_token(reader, scope=READER_SCOPE)
    auth = {**auth, "machine": {"type": "bearer", "secret": READER_SECRET}}
    slug = f"people-{secrets.token_hex(4)}"
    stored = "\n".join(
        f"secret_set(tenant=tenant, name={name!r}, value={value!r})" for name, value in (secrets_to_set or {}).items()
    )
    script = SCENE_SCRIPT.format(
        slug=slug,
        reader_secret=READER_SECRET,
        reader_token=reader_token,
        secrets=stored,
        name=UPSTREAM,
        url=upstream.mcp_url,
        auth=auth,
        tool=TOOL,
    )
    ids = last_json(await live.amanage("shell", "-c", script))
    return Scene(live, upstream, slug, ids["tenant_id"], ids["upstream_id"], auth)


@asynccontextmanager
async def mcp_client(endpoint: str, member: Member, **options: Any) -> AsyncIterator[Client]:
    """The member's official SDK client on ``endpoint`` (``options``: the ``Client``'s, such as ``mode``)."""
    async with (
        httpx2.AsyncClient(auth=member.app_for(endpoint).provider, timeout=REQUEST_TIMEOUT) as http,
        Client(
            streamable_http_client(endpoint, http_client=http),
            cache=None,
            read_timeout_seconds=REQUEST_TIMEOUT,
            **options,
        ) as client,
    ):
        yield client


class Visitor:
    """A client's elicitation callback: records each question, visits its page as ``visit`` does (the person
    connecting), and answers ``action``."""

    def __init__(self, visit: Callable[[str], Awaitable[Any]] | None = None, *, action: str = "accept") -> None:
        self.visit = visit
        self.action = action
        self.asked: list[dict[str, Any]] = []

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked = params.model_dump(by_alias=True, mode="json", exclude_none=True)
        self.asked.append(asked)
        if self.visit is not None and asked.get("mode") == "url":
            await self.visit(asked["url"])
        return types.ElicitResult(action=self.action)  # type: ignore[arg-type]


class Completions:
    """A client's message handler: keeps the ids of the ``notifications/elicitation/complete`` it hears, and sets
    ``completed`` at the first."""

    def __init__(self) -> None:
        self.heard: list[str] = []
        self.completed = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ElicitCompleteNotification):
            self.heard.append(message.params.elicitation_id)
            self.completed.set()


def whoami(result: types.CallToolResult) -> dict[str, Any]:
    """What the upstream's whoami answered: whom its call acted for."""
    assert not result.is_error, result
    assert isinstance(result.structured_content, dict), result
    return result.structured_content


def text_of(result: types.CallToolResult) -> str:
    return " ".join(block.text for block in result.content if isinstance(block, types.TextContent))


# ---- connecting ------------------------------------------------------------------------------------------------


@asynccontextmanager
async def chromium() -> AsyncIterator[Any]:
    """Debian's Chromium through Playwright's async API (the tests around it are async). A missing browser fails
    loudly; only ``MCP_SKIP_BROWSER_TESTS=1`` skips."""
    if os.environ.get(SKIP_ENV) == "1":
        pytest.skip(f"{SKIP_ENV}=1: browser tests skipped on request")
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium or set {SKIP_ENV}=1", pytrace=False)
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            await browser.close()


async def _sign_in(page: Any, account: Account) -> None:
    await page.get_by_label("Username").fill(account.username)
    await page.get_by_label("Password").fill(account.password)
    await page.get_by_role("button", name="Sign in").click()


@dataclass
class Visit:
    """What the person saw on the way: the pages' headings in order, and the last page's text."""

    headings: list[str]
    final_text: str


async def connect_in_chromium(browser: Any, link: str, member: Member) -> Visit:
    """The member opens ``link`` in a fresh browser profile (JavaScript off: nothing may need it), signs in on the
    platform, presses Continue, signs in at the upstream, allows there, and lands on the platform's page."""
    from playwright.async_api import expect

    context = await browser.new_context(java_script_enabled=False)
    context.set_default_timeout(BROWSER_TIMEOUT_MS)
    headings: list[str] = []

    async def heading(page: Any) -> None:
        headings.append((await page.get_by_role("heading", level=1).first.inner_text()).strip())

    try:
        page = await context.new_page()
        await page.goto(link)
        await heading(page)  # the platform's sign-in page
        await _sign_in(page, member.account)
        await expect(page.get_by_role("button", name="Continue to sign in")).to_be_visible()
        await heading(page)
        await page.get_by_role("button", name="Continue to sign in").click()
        await expect(page.get_by_label("Username")).to_be_visible()
        await heading(page)  # the upstream's sign-in page
        await _sign_in(page, member.upstream)
        await expect(page.get_by_role("button", name="Allow")).to_be_visible()
        await heading(page)
        await page.get_by_role("button", name="Allow").click()
        await expect(page.get_by_role("heading", level=1)).to_have_text(re.compile("Connected|Not connected"))
        await heading(page)
        return Visit(headings, await page.locator("main").inner_text())
    finally:
        await context.close()


MAX_HOPS = 10


async def _follow(browser: httpx.AsyncClient, url: str) -> tuple[str, httpx.Response]:
    for _ in range(MAX_HOPS):
        response = await browser.get(url)
        if not response.is_redirect:
            return url, response
        url = urljoin(url, response.headers["location"])
    raise AssertionError(f"more than {MAX_HOPS} redirects from {url}")


async def _signed_in_at(browser: httpx.AsyncClient, link: str, member: Member) -> tuple[str, httpx.Response]:
    """Where ``link`` leads, through the platform's sign-in page (signed in there as ``member``) when it asks."""
    url, page = await _follow(browser, link)
    if urlsplit(url).path.startswith("/account/login/"):
        fields = {**post_form(page.text, with_field="password"), "username": member.account.username}
        fields["password"] = member.account.password
        signed_in = await browser.post(url, data=fields, headers={"referer": url})
        assert signed_in.is_redirect, f"signing in failed:\n{signed_in.text[:2000]}"
        url, page = await _follow(browser, urljoin(url, signed_in.headers["location"]))
    return url, page


async def connect_headless(scene: Scene, link: str, member: Member) -> str:
    """What ``connect_in_chromium`` does, through the same pages with an HTTP client; the text of the last page."""
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(link))
    async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT, follow_redirects=False) as browser:
        url, page = await _signed_in_at(browser, link, member)
        assert page.status_code == 200 and "Continue to sign in" in page.text, page.text[:2000]
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        assert token is not None
        onward = await browser.post(url, data={"csrfmiddlewaretoken": token.group(1)}, headers={"referer": url})
        assert onward.is_redirect, onward.text[:2000]
        async with scene.upstream.person(member.upstream) as person:
            back = await person.authorize(onward.headers["location"])
        assert back.startswith(origin), back
        _, done = await _follow(browser, back)
    return done.text


# ---- at the upstream, and many calls at once -------------------------------------------------------------------


def _client_form(client: OAuthClient) -> tuple[dict[str, str], tuple[str, str] | None]:
    """How ``client`` authenticates at the upstream's endpoints: HTTP Basic with its secret, else its id."""
    if client.secret:
        return {}, (client.client_id, client.secret)
    return {"client_id": client.client_id}, None


async def refresh_at_upstream(upstream: PersonalUpstream, refresh_token: str, client: OAuthClient) -> httpx.Response:
    form, basic = _client_form(client)
    form.update({"grant_type": "refresh_token", "refresh_token": refresh_token})
    async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT) as http:
        return await http.post(upstream.token_endpoint, data=form, auth=basic or httpx.USE_CLIENT_DEFAULT)


async def revoke_at_upstream(upstream: PersonalUpstream, refresh_token: str, client: OAuthClient) -> int:
    """Revoke ``refresh_token`` at the upstream (RFC 7009), as the person withdrawing the grant there would."""
    form, basic = _client_form(client)
    form.update({"token": refresh_token, "token_type_hint": "refresh_token"})
    async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT) as http:
        response = await http.post(
            f"{upstream.issuer}/oauth/revoke/", data=form, auth=basic or httpx.USE_CLIENT_DEFAULT
        )
    return response.status_code


async def calls_at_once(scene: Scene, member: Member, *, webs: list[int]) -> list[types.CallToolResult]:
    """One call of the tool per entry of ``webs`` (the web process it goes to), each from a client of its own, all
    sent once every client is connected."""
    answers: list[types.CallToolResult | None] = [None] * len(webs)
    async with AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(mcp_client(scene.endpoint(web=web), member)) for web in webs]

        async def call(index: int) -> None:
            answers[index] = await clients[index].call_tool(TOOL, {})

        async with anyio.create_task_group() as group:
            for index in range(len(webs)):
                group.start_soon(call, index)
    assert all(answer is not None for answer in answers)
    return [answer for answer in answers if answer is not None]


# ---- HTTP tools that act as the person ------------------------------------------------------------------------

# Runs in ``manage.py shell -c`` with the tenant bound: an HTTP tool ``name`` (GET ``url``) with ``auth``, and the
# tenant secrets it names.
HTTP_TOOL_SCRIPT = """
from tenants.secrets import secret_set
for name, value in {secrets!r}.items():
    secret_set(tenant=tenant, name=name, value=value)
services.tool_create(tenant=tenant, name={name!r}, backend="http", input_schema={{"type": "object"}},
                     config={{"method": "GET", "url": {url!r}, "auth": {auth!r}}})
"""


async def http_tool_create(
    scene: Scene, name: str, *, url: str, auth: dict[str, Any], secrets_to_set: dict[str, str] | None = None
) -> None:
    script = HTTP_TOOL_SCRIPT.format(name=name, url=url, auth=auth, secrets=secrets_to_set or {})
    await scene.live.amanage("shell", "-c", in_tenant(scene.slug, script))


async def store_key_headless(link: str, member: Member, key: str) -> str:
    """The member opens a key link, signs in on the platform and saves ``key`` on its form; the last page's text."""
    async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT, follow_redirects=False) as browser:
        url, page = await _signed_in_at(browser, link, member)
        fields = {**post_form(page.text, with_field="key"), "key": key}
        saved = await browser.post(url, data=fields, headers={"referer": url})
    assert saved.status_code == 200, saved.text[:2000]
    return saved.text


# ---- where secrets must not be -------------------------------------------------------------------------------

# Runs in ``manage.py shell -c``: every person's credential values in the platform's database, and the tenant's
# activity rows, as JSON.
EVERY_CREDENTIAL_SCRIPT = """
import json
from tenants.connections.services import credential_values
from tenants.models import PersonalCredential
print(json.dumps([credential_values(row) for row in PersonalCredential.objects.all()]))
"""

ACTIVITY_SCRIPT = """
import json
from mcp_platform.activity.models import ActivityRecord
rows = ActivityRecord.objects.filter(tenant__slug={slug!r}).order_by("at").values()
print(json.dumps(list(rows), default=str))
"""


async def every_credential_value(live: LiveServer) -> list[str]:
    """The values (tokens, keys) of every person's credential on ``live``."""
    rows: list[dict[str, Any]] = last_json(await live.amanage("shell", "-c", EVERY_CREDENTIAL_SCRIPT))
    return [value for row in rows for value in row.values() if isinstance(value, str) and value]


async def activity_rows(scene: Scene) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = last_json(
        await scene.live.amanage("shell", "-c", ACTIVITY_SCRIPT.format(slug=scene.slug))
    )
    return rows


def database_dump(live: LiveServer) -> str:
    """Everything the platform's database holds, as text: ``pg_dump`` of the topology's database, or SQLite's own
    dump of the embedded one."""
    import sqlite3
    import subprocess
    from pathlib import Path

    if live.production:
        done = subprocess.run(
            ["pg_dump", "--no-owner", live.command_env["DATABASE_URL"]], capture_output=True, text=True, check=True
        )
        return done.stdout
    database = Path(live.command_env["MCP_VAR_DIR"]) / "db.sqlite3"
    connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        return "\n".join(connection.iterdump())
    finally:
        connection.close()


def platform_output(live: LiveServer) -> str:
    """All that the platform's processes printed so far."""
    return "\n".join(
        path.read_text(errors="replace")
        for process in live.processes
        for path in (process.stdout_path, process.stderr_path)
        if path.exists()
    )

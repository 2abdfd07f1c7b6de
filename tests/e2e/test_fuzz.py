"""A seeded corpus of hostile requests against the live platform, both eras on ``/mcp`` and the 2024-11-05
``/sse`` + ``/messages``: malformed JSON, wrong types, huge numbers, deep nesting (bodies past any parser's limit,
arguments just under it), NUL, lone surrogates, control characters and URIs whose brackets hold no address in every
string field and header (``Mcp-Name`` base64 too), bad paths, tenants and methods.

Nothing may answer 5xx or show a traceback, the server logs no traceback, and it keeps serving. Requests are
written on raw sockets, so headers carry bytes no HTTP client library would send.
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

import anyio
import httpx
import pytest

from tests.e2e.live import CONFORMANCE_TENANT, LiveServer
from tests.e2e.raw_http import (
    CLIENT_INFO,
    PROTOCOL_VERSION,
    RawSession,
    raw_http_client,
    stateless_headers,
    stateless_request,
)

pytestmark = pytest.mark.anyio

SEED = 20260728
CORPUS_SIZE = 2400
CONCURRENCY = 8
READ_TIMEOUT = 10.0
# A stream (``/sse``, a GET on ``/mcp``) answers headers and stays open: read this long, then hang up.
STREAM_GRACE = 0.5
DEADLINE = 240.0

HOSTILE_TEXT = [
    "\x00",
    "a\x00b",
    "\ud800",
    "x\udfffy",
    "\x01\x02\x1f\x7f",
    "\r\n",
    "\u2028\u2029",
    "\ufeff",
    "🙂" * 3,
    "../../etc/passwd",
    "%00",
    "' OR 1=1 --",
    "a" * 5000,
    "",
    " ",
    # urlsplit raises on these (brackets that hold no IPv6 address; an unclosed one); a bad port only on .port.
    "x://[x]",
    "https://[::1",
    "http://a:99999/",
]
# Nested as deep as JSON encoding here allows; the server decodes about a thousand levels.
DEEP_VALUE: list[Any] = []
for _ in range(500):
    DEEP_VALUE = [DEEP_VALUE]
HOSTILE_VALUES: list[Any] = [
    None,
    True,
    0,
    -1,
    2**64,
    10**400,
    1.5e308,
    [],
    {},
    [[[]]],
    {"": ""},
    "",
    DEEP_VALUE,
]
METHODS = [
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "completion/complete",
    "logging/setLevel",
    "tasks/get",
    "tasks/list",
    "tasks/cancel",
    "tasks/result",
    "tasks/update",
    "subscriptions/listen",
    "notifications/initialized",
    "notifications/cancelled",
]
NAMES = ["greet", "test_simple_text", "slow_compute", "test_simple_prompt", "test://static-text"]


@dataclass(frozen=True)
class Hostile:
    """One raw request and what it tries."""

    label: str
    method: bytes
    target: bytes
    headers: list[tuple[bytes, bytes]]
    body: bytes


# ---- the corpus ------------------------------------------------------------------------------------------


def encode_json(value: Any) -> bytes:
    """JSON with lone surrogates written as ``\\u`` escapes (what a careless client sends)."""
    return json.dumps(value, ensure_ascii=True, allow_nan=True).encode()


def mcp_name(rng: random.Random, text: str) -> bytes:
    if rng.random() < 0.5:
        return b"=?base64?" + base64.b64encode(text.encode("utf-8", "surrogatepass")) + b"?="
    return text.encode("utf-8", "surrogatepass")


def hostile_text(rng: random.Random) -> str:
    base = rng.choice([*NAMES, "", "x"])
    text = rng.choice(HOSTILE_TEXT)
    return rng.choice([text, base + text, text + base, base[:2] + text + base[2:]])


def mutate(rng: random.Random, value: Any, depth: int = 0) -> Any:
    """``value`` with one string, key or value somewhere replaced by something hostile."""
    if isinstance(value, dict) and value and depth < 6:
        key = rng.choice(list(value))
        copy = dict(value)
        roll = rng.random()
        if roll < 0.15:
            copy[hostile_text(rng)] = copy.pop(key)
        elif roll < 0.35:
            copy[key] = rng.choice(HOSTILE_VALUES)
        else:
            copy[key] = mutate(rng, value[key], depth + 1)
        return copy
    if isinstance(value, list) and value and depth < 6:
        index = rng.randrange(len(value))
        return [mutate(rng, item, depth + 1) if i == index else item for i, item in enumerate(value)]
    if isinstance(value, str):
        return hostile_text(rng)
    return rng.choice([*HOSTILE_VALUES, hostile_text(rng)])


def params_for(rng: random.Random, method: str) -> dict[str, Any]:
    name = rng.choice(NAMES)
    return {
        "initialize": {"protocolVersion": PROTOCOL_VERSION, "capabilities": {"roots": {}}, "clientInfo": CLIENT_INFO},
        "tools/call": {"name": name, "arguments": {"name": "x", "delay": 0}, "task": {"ttl": 1000}},
        "prompts/get": {"name": name, "arguments": {"a": "b"}},
        "resources/read": {"uri": name},
        "resources/subscribe": {"uri": name},
        "resources/unsubscribe": {"uri": name},
        "completion/complete": {
            "ref": rng.choice([{"type": "ref/prompt", "name": name}, {"type": "ref/resource", "uri": name}]),
            "argument": {"name": "language", "value": "p"},
        },
        "logging/setLevel": {"level": "debug"},
        "tasks/get": {"taskId": "A" * 32},
        "tasks/cancel": {"taskId": "A" * 32},
        "tasks/result": {"taskId": "A" * 32},
        "tasks/update": {"taskId": "A" * 32, "inputResponses": {"k": {"action": "accept"}}},
        "tasks/list": {"cursor": "eyJ2IjoxLCJrIjoiYSJ9"},
        "tools/list": {"cursor": "eyJ2IjoxLCJrIjoiYSJ9"},
        "notifications/cancelled": {"requestId": 1, "reason": "x"},
    }.get(method, {})


def nested(depth: int) -> bytes:
    return b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":' + b"[" * depth + b"]" * depth + b"}}"


MALFORMED_BODIES = [
    b"",
    b"{",
    b"[]",
    b"[1,2,3]",
    b"null",
    b'"str"',
    b"\x00\x00\x00",
    b"\xff\xfe{}",
    b'{"jsonrpc":"2.0","id":1,"method":"ping"}garbage',
    b'{"jsonrpc":"2.0","id":1e999,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":NaN,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}',
    b'{"jsonrpc":"2.0","id":1,"method":"\\u0000"}',
    b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\\udc00"}}',
    b'{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}',
    b'{"jsonrpc":"1.0","id":1,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":1,"method":1}',
    nested(100),
    nested(5000),
    nested(100_000),
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":'
    + b"[" * 1000
    + b"]" * 1000
    + b"}}}",
    b"[" + b",".join([b'{"jsonrpc":"2.0","id":1,"method":"ping"}'] * 200) + b"]",
]


class Corpus:
    """Deterministic hostile requests for one live platform."""

    def __init__(self, server: LiveServer, session_id: str, sse_session_id: str, seed: int = SEED) -> None:
        self.rng = random.Random(seed)
        self.host = urlsplit(server.web_urls[0]).netloc.encode()
        self.session_id = session_id
        self.sse_session_id = sse_session_id

    def headers(self, extra: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
        return [(b"host", self.host), (b"accept", b"application/json, text/event-stream"), *extra]

    def json_message(self, *, stateless: bool) -> tuple[str, dict[str, Any]]:
        rng = self.rng
        method = rng.choice(METHODS)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rng.randrange(1, 10**6), "method": method}
        params = params_for(rng, method)
        if stateless:
            params = stateless_request(1, method, params)["params"]
            if method == "tools/call":
                params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = {
                    "extensions": {"io.modelcontextprotocol/tasks": {}}
                }
        if params:
            message["params"] = params
        return method, message

    def one(self) -> Hostile:
        rng = self.rng
        roll = rng.random()
        tenant = CONFORMANCE_TENANT
        if roll < 0.40:
            return self.stateless()
        if roll < 0.65:
            return self.handshake()
        if roll < 0.80:
            return self.legacy_messages()
        if roll < 0.85:
            return self.stream()
        if roll < 0.92:
            body = rng.choice(MALFORMED_BODIES)
            path = rng.choice(["mcp", "messages?session_id=" + self.sse_session_id])
            headers = self.headers([(b"content-type", b"application/json")])
            return Hostile("malformed body", b"POST", f"/t/{tenant}/{path}".encode(), headers, body)
        return self.bad_target()

    def stateless(self) -> Hostile:
        rng = self.rng
        method, message = self.json_message(stateless=True)
        name = (message.get("params") or {}).get("name") or (message.get("params") or {}).get("uri")
        if rng.random() < 0.8:
            message = mutate(rng, message)
        headers = [(key.lower().encode(), value.encode()) for key, value in stateless_headers(method).items()]
        headers.append((b"content-type", b"application/json"))
        if isinstance(name, str):
            headers.append((b"mcp-name", mcp_name(rng, name)))
        headers = self.mutate_headers(headers)
        return Hostile(
            f"stateless {method}", b"POST", f"/t/{CONFORMANCE_TENANT}/mcp".encode(), headers, encode_json(message)
        )

    def handshake(self) -> Hostile:
        rng = self.rng
        method, message = self.json_message(stateless=False)
        if rng.random() < 0.8:
            message = mutate(rng, message)
        headers = [(b"content-type", b"application/json"), (b"mcp-protocol-version", PROTOCOL_VERSION.encode())]
        if method != "initialize":
            headers.append((b"mcp-session-id", self.session_id.encode()))
        headers = self.mutate_headers(headers)
        return Hostile(
            f"handshake {method}", b"POST", f"/t/{CONFORMANCE_TENANT}/mcp".encode(), headers, encode_json(message)
        )

    def legacy_messages(self) -> Hostile:
        rng = self.rng
        method, message = self.json_message(stateless=False)
        if rng.random() < 0.8:
            message = mutate(rng, message)
        session = (
            self.sse_session_id
            if rng.random() < 0.8
            else quote(hostile_text(rng).encode("utf-8", "surrogatepass"), safe="")
        )
        target = f"/t/{CONFORMANCE_TENANT}/messages?session_id={session}".encode()
        headers = self.mutate_headers([(b"content-type", b"application/json")])
        return Hostile(f"/messages {method}", b"POST", target, headers, encode_json(message))

    def stream(self) -> Hostile:
        rng = self.rng
        headers = [(b"accept", b"text/event-stream")]
        if rng.random() < 0.5:
            target = f"/t/{CONFORMANCE_TENANT}/sse"
        else:
            target = f"/t/{CONFORMANCE_TENANT}/mcp"
            headers.append(
                (b"mcp-session-id", rng.choice([self.session_id, hostile_text(rng)]).encode("utf-8", "surrogatepass"))
            )
            headers.append((b"last-event-id", hostile_text(rng).encode("utf-8", "surrogatepass")))
        return Hostile("stream", b"GET", target.encode(), self.headers(self.mutate_headers(headers))[1:], b"")

    def bad_target(self) -> Hostile:
        rng = self.rng
        tenant = rng.choice(
            ["demo%00", "%00", "conformance%00", "%ED%A0%80", "a" * 300, "..", "%2e%2e", "C%C3%B6nf", ""]
        )
        endpoint = rng.choice(["mcp", "sse", "messages", "mcp/extra", "", "%00"])
        method = rng.choice([b"POST", b"GET", b"DELETE", b"PUT", b"PATCH", b"OPTIONS", b"HEAD", b"TRACE"])
        headers = self.mutate_headers([(b"content-type", b"application/json")])
        body = encode_json(stateless_request(1, "tools/list")) if method in (b"POST", b"PUT", b"PATCH") else b""
        return Hostile("bad target", method, f"/t/{tenant}/{endpoint}".encode(), headers, body)

    def mutate_headers(self, headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
        rng = self.rng
        headers = list(headers)
        if headers and rng.random() < 0.4:
            index = rng.randrange(len(headers))
            key, _ = headers[index]
            value = hostile_text(rng).replace("\r", "").replace("\n", "")
            headers[index] = (key, value.encode("utf-8", "surrogatepass"))
        if rng.random() < 0.1:
            headers.append((b"mcp-name", mcp_name(rng, hostile_text(rng))))
        if rng.random() < 0.05:
            headers.append((b"authorization", b"Bearer " + hostile_text(rng).encode("utf-8", "surrogatepass")))
        return [(b"host", self.host), *[(k, v) for k, v in headers if k != b"host"]]


# ---- sending ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    status: int | None
    head_and_body: bytes


def raw_request(request: Hostile) -> bytes:
    headers = [(key, value) for key, value in request.headers if key not in (b"content-length", b"connection")]
    lines = [request.method + b" " + request.target + b" HTTP/1.1"]
    lines += [key + b": " + value for key, value in headers]
    lines += [b"content-length: " + str(len(request.body)).encode(), b"connection: close"]
    return b"\r\n".join(lines) + b"\r\n\r\n" + request.body


async def send(base_url: str, request: Hostile) -> Answer:
    """Write the request, read the answer until the server closes (or, for a stream, a moment after its head)."""
    parts = urlsplit(base_url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        writer.write(raw_request(request))
        await writer.drain()
        received = bytearray()
        streaming_since: float | None = None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + READ_TIMEOUT
        while True:
            remaining = (streaming_since + STREAM_GRACE if streaming_since else deadline) - loop.time()
            if remaining <= 0:
                break
            try:
                chunk = await asyncio.wait_for(reader.read(65536), remaining)
            except TimeoutError:
                break
            if not chunk:
                break
            received.extend(chunk)
            if streaming_since is None and b"text/event-stream" in received.split(b"\r\n\r\n", 1)[0].lower():
                streaming_since = loop.time()
    finally:
        writer.close()
        with anyio.move_on_after(1):
            await writer.wait_closed()
    status = None
    if received.startswith(b"HTTP/1.1 ") and len(received) >= 12 and received[9:12].isdigit():
        status = int(received[9:12])
    return Answer(status, bytes(received))


# ---- the test --------------------------------------------------------------------------------------------


def log_sizes(server: LiveServer) -> dict[str, int]:
    paths = [p for process in server.processes for p in (process.stdout_path, process.stderr_path)]
    return {str(path): path.stat().st_size if path.exists() else 0 for path in paths}


def logs_since(sizes: dict[str, int]) -> str:
    text = []
    for path, size in sizes.items():
        with open(path, "rb") as handle:
            handle.seek(size)
            text.append(handle.read().decode(errors="replace"))
    return "\n".join(text)


async def open_sessions(server: LiveServer, http: httpx.AsyncClient) -> tuple[str, str, Any]:
    """A live handshake session on ``/mcp``, and a 2024-11-05 session whose ``/sse`` stays open (its exit)."""
    session = RawSession(http, server.endpoint())
    await session.initialize()
    assert session.session_id is not None
    stream = http.stream("GET", server.sse_endpoint(), headers={"Accept": "text/event-stream"})
    response = await stream.__aenter__()
    assert response.status_code == 200
    async for line in response.aiter_lines():
        if line.startswith("data:") and "session_id=" in line:
            return session.session_id, line.split("session_id=", 1)[1].strip(), stream
    raise AssertionError("/sse named no endpoint")


async def test_a_hostile_corpus_gets_no_5xx_no_traceback_and_the_server_keeps_serving(
    live_platform: LiveServer,
) -> None:
    sizes = log_sizes(live_platform)
    failures: list[str] = []
    async with raw_http_client() as http:
        with anyio.fail_after(DEADLINE):
            session_id, sse_session_id, sse = await open_sessions(live_platform, http)
            try:
                corpus = Corpus(live_platform, session_id, sse_session_id)
                requests = [corpus.one() for _ in range(CORPUS_SIZE)]
                limit = anyio.Semaphore(CONCURRENCY)

                async def run(index: int, request: Hostile) -> None:
                    async with limit:
                        web = index % len(live_platform.web_urls)
                        answer = await send(live_platform.web_urls[web], request)
                    if (answer.status is not None and answer.status >= 500) or b"Traceback" in answer.head_and_body:
                        failures.append(
                            f"#{index} {request.label}: {raw_request(request)[:300]!r}"
                            f" -> {answer.head_and_body[:300]!r}"
                        )

                async with anyio.create_task_group() as group:
                    for index, request in enumerate(requests):
                        group.start_soon(run, index, request)
            finally:
                await sse.__aexit__(None, None, None)

            for web in range(len(live_platform.web_urls)):
                response = await http.post(
                    live_platform.endpoint(web=web),
                    json=stateless_request(1, "tools/call", {"name": "greet", "arguments": {"name": "after"}}),
                    headers=stateless_headers("tools/call", "greet"),
                )
                assert response.status_code == 200 and "result" in response.json(), response.text

    assert not failures, f"{len(failures)} of {CORPUS_SIZE} hostile requests failed:\n" + "\n".join(failures[:20])
    live_platform.check_alive()
    logged = logs_since(sizes)
    assert "Traceback" not in logged, logged[logged.index("Traceback") - 2000 :][:6000]


# ---- hostile HTTP tool templates and arguments ---------------------------------------------------------------

HTTP_CORPUS_SIZE = 240
# Awkward keys: every character that changes meaning in a URL, a query, JSON or a header value.
FUZZ_QUERY_SECRET = 'Zm9v+YmFy/YmF6==%"\\ &?#:@é-fuzz'
FUZZ_HEADER_SECRET = 'hdr+/="\\ &?#:@%-fuzz'
# Templates whose origin an argument could change: each must be refused on save.
HOSTILE_TEMPLATES = [
    "{api}{{+path}}",
    "{api}{{path}}",
    "{api}{{.path}}",
    "{api}{{;path}}",
    "{api}{{&path}}",
    "http://127.0.0.1:{{path}}/pets",
    "http://{{path}}/pets",
    "http://{{+path}}",
    "http://robot:pw@127.0.0.1/pets",
    "http://127.0.0.1:99999/pets",
]


def origin_changers(listener: str) -> list[str]:
    """Argument values that try to move a request (and its key) to ``listener`` (``host:port``)."""
    return [
        f"@{listener}/stolen",
        f"@{listener}",
        f"//{listener}/stolen",
        f"\\\\@{listener}/",
        f"#@{listener}/",
        f"?@{listener}/",
        f"http://{listener}/stolen",
        f"%40{listener}",
        ":99999/x",
        ":x1/x",
        "@[::1]:1/x",
        "café",
        "a\r\nHost: evil",
        "\x00",
    ]


def http_fuzz_setup(api: str) -> str:
    """``manage.py shell`` source: keys, sound tools that take hostile arguments, one legacy tool saved before the
    origin rule (written to its row), and an attempt to save each hostile template (the refusals are printed)."""
    query = {"type": "query", "name": "key", "secret": "query_key"}
    header = {"type": "header", "name": "X-API-Key", "secret": "header_key"}
    sound = [
        ("by_path", f"{api}/pets/{{+path}}", query, {"path": {}}, {}),
        ("by_id", f"{api}/pets/{{id}}{{?q}}", header, {"id": {}, "q": {}}, {}),
        ("reflect", f"{api}/reflect/json/403{{?pad}}", query, {"pad": {}}, {"X-Trace": "trace"}),
        ("segments", f"{api}{{/path*}}{{?q}}", header, {"path": {}, "q": {}}, {}),
    ]
    lines = [
        "import json",
        "from django.core.exceptions import ValidationError",
        "from tenants.models import Tool",
        "from tenants.secrets import secret_set",
        "services.tenant_update(tenant=tenant, data={'outbound_allowed_networks': ['127.0.0.1/32']})",
        f"secret_set(tenant=tenant, name='query_key', value={FUZZ_QUERY_SECRET!r})",
        f"secret_set(tenant=tenant, name='header_key', value={FUZZ_HEADER_SECRET!r})",
    ]
    for name, url, auth, properties, headers in sound:
        config = {"url": url, "auth": auth, "headers": headers}
        schema = {"type": "object", "properties": {**properties, "trace": {}}}
        lines.append(
            f"services.tool_create(tenant=tenant, name={name!r}, backend='http', config={config!r}, "
            f"input_schema={schema!r})"
        )
    legacy = {"url": f"{api}{{+path}}", "auth": query}
    lines += [
        f"legacy = services.tool_create(tenant=tenant, name='legacy', backend='http', config={{**{legacy!r}, "
        f"'url': {api + '/pets/{+path}'!r}}}, input_schema={{'type': 'object'}})",
        f"Tool.objects.filter(pk=legacy.pk).update(config={legacy!r})",
        "saved = []",
    ]
    for index, template in enumerate(HOSTILE_TEMPLATES):
        url = template.format(api=api)
        lines.append(
            "try:\n"
            f"    services.tool_create(tenant=tenant, name='hostile_{index}', backend='http',"
            f" config={{'url': {url!r}}}, input_schema={{'type': 'object'}})\n"
            f"    saved.append({url!r})\n"
            "except ValidationError:\n"
            "    pass"
        )
    lines.append("print('SAVED=' + json.dumps(saved))")
    return "\n".join(lines)


async def test_hostile_http_tool_templates_are_refused_and_hostile_arguments_reach_no_other_host(
    live_platform: LiveServer, tmp_path: Any
) -> None:
    """Origin-changing templates are refused on save; a seeded corpus of origin-changing and awkward arguments
    against sound tools (and one saved before the rule) answers no 5xx, no traceback, no internal error, reaches
    no other host, and no answer or log line holds any spelling of the keys."""
    from contextlib import ExitStack

    from tests.loopback_http import loopback_server
    from tests.rest_api import secret_spellings, start_rest_api

    sizes = log_sizes(live_platform)
    with ExitStack() as stack, loopback_server() as listener:
        api = start_rest_api(stack, tmp_path)
        slug = f"hostile-{random.Random(SEED).randrange(10**8)}"
        output = await live_platform.amanage(
            "shell",
            "-c",
            f"from tenants import services\ntenant = services.tenant_create(slug={slug!r}, name='Hostile')\n"
            + http_fuzz_setup(api.base),
        )
        saved = json.loads(output.rsplit("SAVED=", 1)[1].splitlines()[0])
        assert saved == [], f"hostile templates were saved: {saved}"

        rng = random.Random(SEED)
        changers = origin_changers(listener.base.removeprefix("http://"))
        tools = {"by_path": "path", "by_id": "id", "reflect": "pad", "segments": "path", "legacy": "path"}
        calls = []
        for _ in range(HTTP_CORPUS_SIZE):
            name = rng.choice(list(tools))
            value: Any = rng.choice([*changers, hostile_text(rng), rng.choice(changers) + hostile_text(rng)])
            arguments = {tools[name]: [value, rng.choice(changers)] if name == "segments" else value}
            if rng.random() < 0.3:
                arguments["trace"] = rng.choice(changers)
            if rng.random() < 0.3:
                arguments["q"] = rng.choice(changers)
            calls.append((name, arguments))

        failures: list[str] = []
        spellings = secret_spellings(FUZZ_QUERY_SECRET) | secret_spellings(FUZZ_HEADER_SECRET)
        limit = anyio.Semaphore(CONCURRENCY)
        async with raw_http_client() as http:

            async def run(index: int, name: str, arguments: dict[str, Any]) -> None:
                async with limit:
                    response = await http.post(
                        live_platform.endpoint(slug, web=index % len(live_platform.web_urls)),
                        content=encode_json(
                            stateless_request(index, "tools/call", {"name": name, "arguments": arguments})
                        ),
                        headers={**stateless_headers("tools/call", name), "Content-Type": "application/json"},
                    )
                body = response.text
                problems = [
                    problem
                    for problem, bad in (
                        ("5xx", response.status_code >= 500),
                        ("traceback", "Traceback" in body),
                        ("internal error", "internal error" in body),
                        ("a key", any(s in body for s in spellings)),
                    )
                    if bad
                ]
                if problems:
                    failures.append(f"#{index} {name} {arguments!r}: {problems} -> {body[:300]}")

            with anyio.fail_after(DEADLINE):
                async with anyio.create_task_group() as group:
                    for index, (name, arguments) in enumerate(calls):
                        group.start_soon(run, index, name, arguments)

        assert not failures, f"{len(failures)} of {HTTP_CORPUS_SIZE} calls failed:\n" + "\n".join(failures[:20])
        assert not listener.hits, f"requests reached another host: {listener.hosts}"

    live_platform.check_alive()
    logged = logs_since(sizes)
    assert "Traceback" not in logged, logged[logged.index("Traceback") - 2000 :][:6000]
    assert not [s for s in spellings if s in logged]

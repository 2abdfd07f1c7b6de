"""HTTP tools under hostile arguments and awkward secrets, against the real REST API process and a listener that
must receive nothing: arguments never choose the host a request (and its key) goes to, a secret comes back in no
spelling (raw, percent-encoded, JSON-escaped, base64) in a result, an excerpt or a log line, and values that cannot
be sent become clear ``isError`` results."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from tenants.models import Tenant, Tool
from tenants.secrets import secret_set
from tests.loopback_http import LoopbackServer, loopback_server
from tests.rest_api import RestApi, secret_spellings, start_rest_api
from tests.tenants.test_http_tools import call, http_tool, text

pytestmark = pytest.mark.django_db

JSONObject = dict[str, Any]

AWKWARD_SECRETS = [
    "Zm9v+YmFy/YmF6==Zm9v+YmFy",
    'quote"back\\slash-7d1e',
    "sp ace&amp?hash#colon:at@pct%25%-9c",
    "/=+/=+/=+\\\"'<>&",
]
NON_ASCII_SECRET = "näïve-ключ-🔑-ß+é/="


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestApi]:
    with ExitStack() as stack:
        yield start_rest_api(stack, Path(tmp_path_factory.mktemp("rest-api")))


@pytest.fixture
def loopback_allowed(settings: Any) -> None:
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "OUTBOUND_ALLOWED_NETWORKS": ["127.0.0.1/32"]}


@pytest.fixture
def listener() -> Iterator[LoopbackServer]:
    """Where a stolen request would land: it must see no request at all."""
    with loopback_server() as server:
        yield server


def stored_without_checks(tool: Tool, url: str) -> None:
    """The tool as one saved before the origin rule existed: its URL written to the row, bypassing validation."""
    Tool.objects.filter(pk=tool.pk).update(config={**tool.config, "url": url})


def leaked(result: JSONObject, secret: str) -> list[str]:
    """The spellings of ``secret`` found anywhere in ``result``: its text, its structured content, its JSON."""
    haystacks = [text(result), json.dumps(result), json.dumps(result, ensure_ascii=False)]
    structured = result.get("structuredContent")
    if structured is not None:
        haystacks.append(repr(structured))
    return sorted(s for s in secret_spellings(secret) if any(s in h for h in haystacks))


# ---- the origin of a request is the template's -----------------------------------------------------------


@pytest.mark.parametrize(
    ("auth", "secret"),
    [
        ({"type": "header", "name": "X-API-Key"}, "api-key-origin-1f2e3d4c"),
        ({"type": "query", "name": "key"}, "query-key-origin-5a6b7c8d"),
        ({"type": "bearer"}, "bearer-origin-9e8d7c6b"),
    ],
)
def test_an_argument_cannot_send_the_request_and_its_key_to_another_host(
    tenant: Tenant, api: RestApi, loopback_allowed: None, listener: LoopbackServer, auth: JSONObject, secret: str
) -> None:
    secret_set(tenant=tenant, name="api", value=secret)
    tool = http_tool(tenant, "fetch", {"url": api.base + "/{+path}", "auth": {**auth, "secret": "api"}}, {"path": {}})
    stored_without_checks(tool, api.base + "{+path}")
    stolen = "@" + listener.base.removeprefix("http://") + "/stolen"

    result = call(tenant, "fetch", {"path": stolen})

    assert result["isError"] is True
    assert text(result).startswith("the tool's URL template cannot be used: the origin (scheme://host[:port]) must")
    assert not listener.hits, listener.hosts
    assert not leaked(result, secret)


def test_an_argument_after_a_literal_host_stays_on_that_host(
    tenant: Tenant, api: RestApi, loopback_allowed: None, listener: LoopbackServer
) -> None:
    http_tool(tenant, "fetch", {"url": api.base + "/pets/{+path}"}, {"path": {}})
    result = call(tenant, "fetch", {"path": "@" + listener.base.removeprefix("http://")})
    assert result["structuredContent"]["path"] == "/pets/@" + listener.base.removeprefix("http://")
    assert not listener.hits


def test_an_argument_cannot_add_a_fragment_that_hides_the_rest_of_the_url(
    tenant: Tenant, api: RestApi, loopback_allowed: None
) -> None:
    http_tool(tenant, "fetch", {"url": api.base + "/pets/{+id}?verbose=true"}, {"id": {}})
    assert call(tenant, "fetch", {"id": "7"})["structuredContent"]["query"] == [["verbose", "true"]]
    refused = call(tenant, "fetch", {"id": "7#"})
    assert refused["isError"] is True
    assert "would send the request elsewhere than" in text(refused)


def test_a_stored_template_without_a_literal_origin_is_refused_at_call_time(
    tenant: Tenant, api: RestApi, loopback_allowed: None
) -> None:
    tool = http_tool(tenant, "fetch", {"url": api.base + "/{port}"}, {"port": {}})
    stored_without_checks(tool, "http://127.0.0.1:{port}/pets")
    result = call(tenant, "fetch", {"port": "x1"})
    assert result["isError"] is True
    assert text(result).startswith("the tool's URL template cannot be used: the origin (scheme://host[:port]) must")


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("https://api.example{+path}", "must be written out in full"),
        ("https://api.example{path}", "must be written out in full"),
        ("https://api.example{.tld}", "must be written out in full"),
        ("https://api.{env}.example/x", "must be written out in full"),
        ("https://api.example:{port}/x", "must be written out in full"),
        ("https://robot:pw@api.example/x", "must not carry a user name or password"),
        ("https://api.example:99999/x", "port '99999' is not a number from 1 to 65535"),
        ("https://api.example:0/x", "port '0' is not a number from 1 to 65535"),
    ],
)
def test_a_template_whose_origin_is_not_literal_is_refused_on_save(tenant: Tenant, url: str, problem: str) -> None:
    names = ("path", "tld", "env", "port")
    with pytest.raises(ValidationError) as refused:
        http_tool(tenant, "bad", {"url": url}, {name: {"type": "string"} for name in names})
    assert any(problem in message for message in refused.value.message_dict["config"]), refused.value
    assert not Tool.objects.filter(name="bad").exists()


def test_expressions_that_start_with_a_separator_may_follow_the_host(tenant: Tenant) -> None:
    for index, url in enumerate(
        ["https://api.example{/path*}", "https://api.example{?q}", "https://api.example:8443{#f}"]
    ):
        http_tool(tenant, f"fine_{index}", {"url": url}, {"path": {}, "q": {}, "f": {}})


def test_the_tool_admin_shows_why_an_origin_is_refused(admin_client: Any, tenant: Tenant) -> None:
    from django.urls import reverse

    from tests.tenants.admin.test_service_backed import tool_form

    schema = json.dumps({"type": "object", "properties": {"path": {"type": "string"}}})
    config = json.dumps({"url": "https://api.example{+path}"})
    form = tool_form(tenant, name="fetch", backend="http", input_schema=schema, config=config)
    refused = admin_client.post(reverse("admin:tenants_tool_add"), form)
    assert refused.status_code == 200
    assert "must be written out in full" in refused.content.decode()
    assert not Tool.objects.filter(name="fetch").exists()


def test_openapi_operations_whose_server_would_not_keep_a_literal_origin_are_skipped(tenant: Tenant) -> None:
    from tenants.openapi.document import document_parse
    from tenants.openapi.importing import openapi_import
    from tenants.openapi.translate import ImportOptions

    answer = {"200": {"description": "ok"}}

    def server(default: str) -> list[JSONObject]:
        return [{"url": "https://{host}/v1", "variables": {"host": {"default": default}}}]

    data = {
        "openapi": "3.0.3",
        "info": {"title": "Hostile", "version": "1"},
        "servers": [{"url": "https://api.example/v1"}],
        "paths": {
            "/pets": {"get": {"operationId": "pets", "responses": answer}},
            "/users": {
                "get": {"operationId": "users", "servers": server("x@other.example:19230"), "responses": answer}
            },
            "/orders": {"get": {"operationId": "orders", "servers": server("api.example:99999"), "responses": answer}},
        },
    }
    document = document_parse(json.dumps(data).encode(), location="https://api.example/openapi.json")
    report = openapi_import(tenant=tenant, document=document, options=ImportOptions())

    assert report.created == ["pets"]
    reasons = dict(report.skipped)
    assert "must not carry a user name or password" in reasons["GET /users"]
    assert "port '99999' is not a number from 1 to 65535" in reasons["GET /orders"]
    assert list(Tool.objects.filter(tenant=tenant).values_list("name", flat=True)) == ["pets"]


# ---- secrets never come back ---------------------------------------------------------------------------------


def test_a_reflected_argument_cannot_move_the_excerpts_cut_into_the_secret(
    tenant: Tenant, api: RestApi, loopback_allowed: None
) -> None:
    secret = "api-key-cut-0123456789abcdef"
    secret_set(tenant=tenant, name="api", value=secret)
    auth = {"type": "header", "name": "X-API-Key", "secret": "api"}
    http_tool(tenant, "reflect", {"url": api.base + "/reflect/text/403{?pad}", "auth": auth}, {"pad": {}})
    # The API quotes the pad twice (the prefix, the URL): find where the key lands with none, then move it onto
    # the 1,000-character cut of the excerpt so that all of it but its last characters would be shown.
    unpadded = text(call(tenant, "reflect", {"pad": ""}))
    where = unpadded.index(": ") + 2
    at = unpadded.index("[secret]") - where
    pad = "p" * ((1000 - 22 - at) // 2)

    result = call(tenant, "reflect", {"pad": pad})

    assert result["isError"] is True
    shown = text(result)
    assert not any(shown.endswith(secret[:size]) for size in range(3, len(secret) + 1)), shown[-40:]
    assert not leaked(result, secret)


def test_a_body_cut_at_the_size_limit_shows_no_part_of_a_secret(
    tenant: Tenant, api: RestApi, loopback_allowed: None, settings: Any
) -> None:
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "HTTP_TOOL_MAX_RESULT_BYTES": 600}
    secret = "api-key-limit-0123456789abcdef"
    secret_set(tenant=tenant, name="api", value=secret)
    auth = {"type": "header", "name": "X-API-Key", "secret": "api"}
    http_tool(tenant, "reflect", {"url": api.base + "/reflect/text/200{?pad}", "auth": auth}, {"pad": {}})
    unpadded = text(call(tenant, "reflect", {"pad": ""}))
    at = unpadded.index("[secret]")
    pad = "p" * ((600 - 10 - at) // 2)

    result = call(tenant, "reflect", {"pad": pad})

    shown = result["content"][0]["text"]
    assert result["content"][1]["text"].startswith("[response cut")
    assert not any(shown.endswith(secret[:size]) for size in range(3, len(secret) + 1)), shown[-40:]


@pytest.mark.parametrize("secret", AWKWARD_SECRETS)
@pytest.mark.parametrize("shape", ["text", "json", "json-ascii"])
@pytest.mark.parametrize("status", [200, 403])
def test_an_awkward_query_secret_comes_back_in_no_spelling(
    tenant: Tenant, api: RestApi, loopback_allowed: None, secret: str, shape: str, status: int
) -> None:
    secret_set(tenant=tenant, name="api", value=secret)
    auth = {"type": "query", "name": "key", "secret": "api"}
    http_tool(tenant, "reflect", {"url": f"{api.base}/reflect/{shape}/{status}", "auth": auth})

    result = call(tenant, "reflect")

    assert result.get("isError", False) is (status != 200)
    assert "[secret]" in text(result)
    assert not leaked(result, secret)
    if shape != "text" and status == 200:
        structured = result["structuredContent"]
        assert ["key", "[secret]"] in structured["query"]
        assert "[secret]" in structured["url"]


@pytest.mark.parametrize("secret", AWKWARD_SECRETS)
@pytest.mark.parametrize(
    "auth", [{"type": "header", "name": "X-API-Key"}, {"type": "bearer"}, {"type": "basic"}], ids=lambda a: a["type"]
)
@pytest.mark.parametrize("shape", ["text", "json-ascii"])
def test_an_awkward_header_secret_comes_back_in_no_spelling(
    tenant: Tenant, api: RestApi, loopback_allowed: None, secret: str, auth: JSONObject, shape: str
) -> None:
    value = "robot:" + secret if auth["type"] == "basic" else secret
    secret_set(tenant=tenant, name="api", value=value)
    http_tool(tenant, "reflect", {"url": f"{api.base}/reflect/{shape}/403", "auth": {**auth, "secret": "api"}})

    result = call(tenant, "reflect")

    assert result["isError"] is True
    assert "[secret]" in text(result)
    assert not leaked(result, value)
    assert not leaked(result, secret)


@pytest.mark.parametrize("shape", ["text", "json", "json-ascii"])
def test_a_non_ascii_query_secret_comes_back_in_no_spelling(
    tenant: Tenant, api: RestApi, loopback_allowed: None, shape: str
) -> None:
    secret_set(tenant=tenant, name="api", value=NON_ASCII_SECRET)
    auth = {"type": "query", "name": "key", "secret": "api"}
    http_tool(tenant, "reflect", {"url": f"{api.base}/reflect/{shape}/200", "auth": auth})
    result = call(tenant, "reflect")
    assert "[secret]" in text(result)
    assert not leaked(result, NON_ASCII_SECRET)


def test_no_log_line_holds_a_query_secret(
    tenant: Tenant, api: RestApi, loopback_allowed: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    secret = AWKWARD_SECRETS[0]
    secret_set(tenant=tenant, name="api", value=secret)
    http_tool(
        tenant,
        "reflect",
        {"url": api.base + "/reflect/json/200", "auth": {"type": "query", "name": "key", "secret": "api"}},
    )
    assert "isError" not in call(tenant, "reflect")
    assert "HTTP Request: GET " + api.base + "/reflect/json/200" in caplog.text
    assert not [s for s in secret_spellings(secret) if s in caplog.text]


# ---- values that cannot be sent -----------------------------------------------------------------------------


def test_a_non_ascii_header_argument_is_a_clear_error(tenant: Tenant, api: RestApi, loopback_allowed: None) -> None:
    http_tool(tenant, "traced", {"url": api.base + "/pets", "headers": {"X-Trace": "trace"}}, {"trace": {}})
    result = call(tenant, "traced", {"trace": "café"})
    assert result["isError"] is True
    assert text(result) == (
        "the argument 'trace' cannot be sent as the header X-Trace: it holds a character outside ASCII"
    )


@pytest.mark.parametrize("kind", ["header", "bearer"])
def test_a_header_secret_that_cannot_be_a_header_value_is_reported_without_its_value(
    tenant: Tenant, api: RestApi, loopback_allowed: None, kind: str
) -> None:
    auth = {"type": kind, "secret": "api", **({"name": "X-API-Key"} if kind == "header" else {})}
    http_tool(tenant, "guarded", {"url": api.base + "/pets", "auth": auth})
    secret_set(tenant=tenant, name="api", value=NON_ASCII_SECRET)
    result = call(tenant, "guarded")
    assert result["isError"] is True
    assert (
        text(result)
        == "HTTP tool 'guarded' cannot send the secret 'api' in a header: it holds a character outside ASCII"
    )
    assert not leaked(result, NON_ASCII_SECRET)
    for character in NON_ASCII_SECRET:
        if not character.isascii():
            assert character not in text(result)

"""HTTP tools against a real REST API process: requests built from arguments, each kind of authentication,
results, errors, limits and refusals, through ``tools/call`` as a client makes it."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
from asgiref.sync import async_to_sync
from django.core.exceptions import ValidationError

from mcp_core.env import Env, ServerIdentity
from mcp_core.features.tools import call_tool
from mcp_infra.outbound import outbound_clients_close
from tenants import outbound_auth, services
from tenants.catalog import TenantCatalog
from tenants.models import Tenant, Tool
from tenants.openapi.document import OpenApiError
from tenants.openapi.fetching import document_fetch_once
from tenants.secrets import secret_set
from tests import rest_api
from tests.rest_api import RestApi, start_rest_api
from tests.support import RecordingOutbound

pytestmark = pytest.mark.django_db

JSONObject = dict[str, Any]


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestApi]:
    with ExitStack() as stack:
        yield start_rest_api(stack, Path(tmp_path_factory.mktemp("rest-api")))


@pytest.fixture
def loopback_allowed(settings: Any) -> None:
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "OUTBOUND_ALLOWED_NETWORKS": ["127.0.0.1/32"]}


@pytest.fixture(autouse=True)
def _no_cached_tokens() -> Iterator[None]:
    outbound_auth._tokens.clear()
    yield
    outbound_auth._tokens.clear()


def http_tool(tenant: Tenant, name: str, config: JSONObject, properties: JSONObject | None = None) -> Tool:
    schema: JSONObject = {"type": "object"} if properties is None else {"type": "object", "properties": properties}
    return services.tool_create(tenant=tenant, name=name, backend="http", config=config, input_schema=schema)


def call(tenant: Tenant, name: str, arguments: JSONObject | None = None) -> JSONObject:
    """``tools/call`` as the 2025-11-25 dispatcher runs it, on an event loop of its own (closed with its clients)."""

    async def run() -> JSONObject:
        env = Env(
            version="2025-11-25",
            catalog=TenantCatalog(tenant),
            outbound=RecordingOutbound(),
            server=ServerIdentity("t", "1"),
        )
        try:
            return await call_tool({"name": name, "arguments": arguments or {}}, env)
        finally:
            await outbound_clients_close()

    return async_to_sync(run)()


def text(result: JSONObject) -> str:
    return "\n".join(item["text"] for item in result["content"] if item["type"] == "text")


# ---- requests from arguments -------------------------------------------------------------------------------


def test_get_with_path_and_query_from_arguments(tenant: Tenant, api: RestApi, loopback_allowed: None) -> None:
    http_tool(
        tenant,
        "get_pet",
        {"method": "GET", "url": api.base + "/pets/{pet_id}{?verbose,tags*}", "query": {"limit": "max"}},
        {"pet_id": {"type": "string"}, "verbose": {"type": "boolean"}, "tags": {"type": "array"}, "max": {}},
    )
    result = call(tenant, "get_pet", {"pet_id": "rex 1", "verbose": True, "tags": ["a", "b"], "max": 5})

    assert "isError" not in result
    echoed = result["structuredContent"]
    assert echoed["path_params"] == {"pet_id": "rex 1"}
    assert echoed["query"] == [["verbose", "true"], ["tags", "a"], ["tags", "b"], ["limit", "5"]]
    assert json.loads(text(result)) == echoed


def test_absent_optional_arguments_are_left_out(tenant: Tenant, api: RestApi, loopback_allowed: None) -> None:
    http_tool(
        tenant,
        "list_pets",
        {"url": api.base + "/pets{?kind}", "query": {"limit": "max"}, "headers": {"X-Trace": "trace"}},
        {"kind": {"type": "string"}, "max": {"type": "integer"}, "trace": {"type": "string"}},
    )
    echoed = call(tenant, "list_pets", {})["structuredContent"]
    assert echoed["query"] == []
    assert "x-trace" not in echoed["headers"]


def test_post_with_a_json_body_of_several_arguments(tenant: Tenant, api: RestApi, loopback_allowed: None) -> None:
    http_tool(
        tenant,
        "add_pet",
        {"method": "POST", "url": api.base + "/pets", "body": {"arguments": ["name", "age", "tags"]}},
        {"name": {"type": "string"}, "age": {"type": "integer"}, "tags": {"type": "array"}},
    )
    result = call(tenant, "add_pet", {"name": "Rex", "age": 3, "tags": ["good"]})
    assert result["structuredContent"]["method"] == "POST"
    assert result["structuredContent"]["body"] == {"name": "Rex", "age": 3, "tags": ["good"]}


def test_put_with_one_argument_as_the_whole_body(tenant: Tenant, api: RestApi, loopback_allowed: None) -> None:
    http_tool(
        tenant,
        "replace_pet",
        {"method": "PUT", "url": api.base + "/pets/{id}", "body": {"argument": "pet"}},
        {"id": {"type": "integer"}, "pet": {"type": "object"}},
    )
    result = call(tenant, "replace_pet", {"id": 7, "pet": {"name": "Rex"}})
    assert result["structuredContent"]["path_params"] == {"pet_id": "7"}
    assert result["structuredContent"]["body"] == {"name": "Rex"}


def test_header_arguments_and_static_headers_are_sent(tenant: Tenant, api: RestApi, loopback_allowed: None) -> None:
    http_tool(
        tenant,
        "traced",
        {"url": api.base + "/pets", "headers": {"X-Request-Id": "request_id"}, "static_headers": {"X-Client": "mcp"}},
        {"request_id": {"type": "string"}},
    )
    headers = call(tenant, "traced", {"request_id": "abc-123"})["structuredContent"]["headers"]
    assert headers["x-request-id"] == "abc-123"
    assert headers["x-client"] == "mcp"


def test_a_line_break_in_a_header_argument_is_refused_not_sent(
    tenant: Tenant, api: RestApi, loopback_allowed: None
) -> None:
    http_tool(tenant, "traced", {"url": api.base + "/pets", "headers": {"X-Trace": "trace"}}, {"trace": {}})
    result = call(tenant, "traced", {"trace": "a\r\nX-Injected: yes"})
    assert result["isError"] is True
    assert text(result) == (
        "the argument 'trace' cannot be sent as the header X-Trace: it holds a line break or another control character"
    )


# ---- authentication from secrets ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "auth", "value"),
    [
        ("/auth/bearer", {"type": "bearer"}, rest_api.BEARER_TOKEN),
        ("/auth/header", {"type": "header", "name": "X-API-Key"}, rest_api.API_KEY),
        ("/auth/query", {"type": "query", "name": "api_key"}, rest_api.API_KEY),
        ("/auth/basic", {"type": "basic"}, rest_api.BASIC),
    ],
)
def test_each_kind_of_key_is_taken_from_the_tenants_secret(
    tenant: Tenant, api: RestApi, loopback_allowed: None, path: str, auth: JSONObject, value: str
) -> None:
    http_tool(tenant, "guarded", {"url": api.base + path, "auth": {**auth, "secret": "api"}})
    secret_set(tenant=tenant, name="api", value="wrong-value")
    refused = call(tenant, "guarded")
    assert refused["isError"] is True
    assert text(refused).startswith("HTTP 401 Unauthorized from GET " + api.base + path)

    secret_set(tenant=tenant, name="api", value=value)
    accepted = call(tenant, "guarded")
    assert "isError" not in accepted, accepted
    assert value not in str(accepted)


def test_client_credentials_fetch_a_token_once_and_reuse_it(
    tenant: Tenant, api: RestApi, loopback_allowed: None
) -> None:
    auth = {
        "type": "client_credentials",
        "secret": "oauth",
        "client_id": rest_api.CLIENT_ID,
        "token_url": api.base + "/oauth/token",
        "scope": "pets:read",
    }
    http_tool(tenant, "oauth_pets", {"url": api.base + "/auth/oauth", "auth": auth})
    secret_set(tenant=tenant, name="oauth", value=rest_api.CLIENT_SECRET)
    issued_before = httpx.get(api.base + "/oauth/stats").json()["issued"]

    assert all("isError" not in call(tenant, "oauth_pets") for _ in range(3))
    assert httpx.get(api.base + "/oauth/stats").json()["issued"] == issued_before + 1

    httpx.post(api.base + "/oauth/revoke-all")  # the API drops its tokens early: one fresh token, same call
    assert "isError" not in call(tenant, "oauth_pets")
    assert httpx.get(api.base + "/oauth/stats").json()["issued"] == issued_before + 2


def test_a_wrong_client_secret_is_reported_without_the_secret(
    tenant: Tenant, api: RestApi, loopback_allowed: None
) -> None:
    auth = {"type": "client_credentials", "secret": "oauth", "client_id": "x", "token_url": api.base + "/oauth/token"}
    http_tool(tenant, "oauth_pets", {"url": api.base + "/auth/oauth", "auth": auth})
    secret_set(tenant=tenant, name="oauth", value="not-the-client-secret")
    result = call(tenant, "oauth_pets")
    assert result["isError"] is True
    assert text(result) == f"could not get an access token from {api.base}/oauth/token: HTTP 401"


def test_a_missing_secret_is_named(tenant: Tenant, api: RestApi, loopback_allowed: None) -> None:
    http_tool(tenant, "guarded", {"url": api.base + "/auth/bearer", "auth": {"type": "bearer", "secret": "absent"}})
    result = call(tenant, "guarded")
    assert result["isError"] is True
    assert text(result) == "HTTP tool 'guarded' needs the secret 'absent', which this tenant does not have"


def test_a_secret_is_in_no_result_error_or_log_line_even_when_the_api_echoes_it(
    tenant: Tenant, api: RestApi, loopback_allowed: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for kind, name in (("bearer", None), ("header", "X-API-Key")):
        auth = {"type": kind, "secret": "api", **({"name": name} if name else {})}
        http_tool(tenant, f"echo_{kind}", {"url": api.base + "/echo-authorization", "auth": auth})
    http_tool(tenant, "failing", {"url": api.base + "/status/500", "auth": {"type": "bearer", "secret": "api"}})
    secret_set(tenant=tenant, name="api", value=rest_api.API_KEY)

    results = [call(tenant, "echo_bearer"), call(tenant, "echo_header"), call(tenant, "failing")]

    assert "you sent: Bearer [secret]" in text(results[0])
    assert "[secret]" in text(results[1])
    for result in results:
        assert rest_api.API_KEY not in str(result)
    assert rest_api.API_KEY not in caplog.text


def test_a_key_header_does_not_follow_a_redirect_to_another_origin(tenant: Tenant, api: RestApi, settings: Any) -> None:
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "OUTBOUND_ALLOWED_NETWORKS": ["127.0.0.1/32", "::1/128"]}
    port = httpx.URL(api.base).port
    same = f"{api.base}/pets"
    other = f"http://localhost:{port}/pets"
    auth = {"type": "header", "name": "X-API-Key", "secret": "api"}
    for name, target in (("same_origin", same), ("other_origin", other)):
        http_tool(tenant, name, {"url": f"{api.base}/redirect?to={target}", "auth": auth})
    secret_set(tenant=tenant, name="api", value=rest_api.API_KEY)

    # The API echoes the key it got; the result shows it arrived, redacted.
    assert call(tenant, "same_origin")["structuredContent"]["headers"]["x-api-key"] == "[secret]"
    assert "x-api-key" not in call(tenant, "other_origin")["structuredContent"]["headers"]


# ---- results and failures ----------------------------------------------------------------------------------


def test_a_non_2xx_status_is_an_error_naming_the_status_with_an_excerpt(
    tenant: Tenant, api: RestApi, loopback_allowed: None
) -> None:
    http_tool(tenant, "teapot", {"url": api.base + "/status/418"})
    result = call(tenant, "teapot")
    assert result["isError"] is True
    message = text(result)
    assert message.startswith(f"HTTP 418 I'm a Teapot from GET {api.base}/status/418: the API says no (418): detail")
    assert len(message) < 1200


def test_an_over_size_body_is_cut_with_a_note(
    tenant: Tenant, api: RestApi, loopback_allowed: None, settings: Any
) -> None:
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "HTTP_TOOL_MAX_RESULT_BYTES": 1000}
    http_tool(tenant, "big", {"url": api.base + "/big?n=5000"})
    result = call(tenant, "big")
    assert "isError" not in result
    assert result["content"][0]["text"] == "x" * 1000
    assert result["content"][1]["text"] == "[response cut: the body is longer than 1000 bytes; the first 1000 shown]"


def test_an_image_becomes_image_content(tenant: Tenant, api: RestApi, loopback_allowed: None) -> None:
    http_tool(tenant, "picture", {"url": api.base + "/image"})
    assert call(tenant, "picture")["content"][0]["mimeType"] == "image/png"


def test_a_timeout_is_an_error_with_a_clear_message(tenant: Tenant, api: RestApi, loopback_allowed: None) -> None:
    http_tool(tenant, "silent", {"url": api.base + "/silent", "timeout": 0.5})
    result = call(tenant, "silent")
    assert result["isError"] is True
    assert text(result) == f"GET {api.base}/silent timed out after 0.5 s"


def test_the_timeout_bounds_the_whole_call_not_each_read_of_a_dripping_body(
    tenant: Tenant, api: RestApi, loopback_allowed: None
) -> None:
    # One byte every 0.4 s: each read returns well within the 1 s timeout, so only a deadline on the call ends it.
    http_tool(tenant, "drip", {"url": api.base + "/drip?every=0.4", "timeout": 1})
    started = time.monotonic()
    result = call(tenant, "drip")
    elapsed = time.monotonic() - started
    assert result["isError"] is True
    assert text(result) == f"GET {api.base}/drip timed out after 1 s"
    assert elapsed < 3, elapsed


def test_the_timeout_bounds_the_token_fetch_of_client_credentials_too(
    tenant: Tenant, api: RestApi, loopback_allowed: None
) -> None:
    auth = {
        "type": "client_credentials",
        "secret": "oauth",
        "client_id": "x",
        "token_url": api.base + "/drip?every=0.4",
    }
    http_tool(tenant, "oauth_drip", {"url": api.base + "/auth/oauth", "auth": auth, "timeout": 1})
    secret_set(tenant=tenant, name="oauth", value=rest_api.CLIENT_SECRET)
    started = time.monotonic()
    result = call(tenant, "oauth_drip")
    elapsed = time.monotonic() - started
    assert result["isError"] is True
    assert text(result) == f"GET {api.base}/auth/oauth timed out after 1 s"
    assert elapsed < 3, elapsed


def test_an_openapi_document_that_drips_is_given_up_after_the_outbound_timeout(
    tenant: Tenant, api: RestApi, settings: Any
) -> None:
    settings.MCP_PLATFORM = {
        **settings.MCP_PLATFORM,
        "OUTBOUND_ALLOWED_NETWORKS": ["127.0.0.1/32"],
        "OUTBOUND_READ_TIMEOUT": 1.0,
    }
    started = time.monotonic()
    with pytest.raises(OpenApiError, match=r"/drip\?every=0.4: timed out after 1 s"):
        async_to_sync(document_fetch_once)(api.base + "/drip?every=0.4", tenant_id=tenant.pk)
    assert time.monotonic() - started < 3


def test_a_refused_address_is_an_error_naming_the_refusal(tenant: Tenant, api: RestApi) -> None:
    http_tool(tenant, "local", {"url": api.base + "/pets"})
    http_tool(tenant, "metadata", {"url": "http://169.254.169.254/latest/meta-data/"})
    assert text(call(tenant, "local")) == (
        f"GET {api.base}/pets was not sent: refused: 127.0.0.1 (loopback) is not an allowed network"
    )
    assert "refused: 169.254.169.254 (link-local)" in text(call(tenant, "metadata"))


def test_a_staff_widened_tenant_reaches_its_network(tenant: Tenant, api: RestApi) -> None:
    services.tenant_update(tenant=tenant, data={"outbound_allowed_networks": ["127.0.0.0/8"]})
    http_tool(tenant, "local", {"url": api.base + "/pets"})
    assert "isError" not in call(tenant, "local")


# ---- config validation ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "problem"),
    [
        ({"url": "ftp://x/{a}"}, "must start with http:// or https://"),
        ({"url": "https://x/{a"}, "malformed {expression}"),
        ({"url": "https://x/", "method": "FETCH"}, '"method" must be one of'),
        ({"url": "https://x/", "body": {"argument": "a"}}, "A GET request has no body"),
        ({"url": "https://x/", "method": "POST", "body": {"everything": True}}, '"body" must be null'),
        ({"url": "https://x/", "auth": {"type": "magic", "secret": "s"}}, '"type" is one of'),
        ({"url": "https://x/", "auth": {"type": "header", "secret": "s"}}, 'needs "name"'),
        ({"url": "https://x/", "auth": {"type": "client_credentials", "secret": "s"}}, 'needs "client_id"'),
        ({"url": "https://x/", "headers": {"Host": "a"}}, "not a header a tool may set"),
        ({"url": "https://x/", "static_headers": {"X-A": "a\r\nX-B: b"}}, "has a line break"),
        ({"url": "https://x/", "static_headers": {"X-A": "café"}}, "cannot be sent as a header: it holds a character"),
        ({"url": "https://x/", "timeout": 0}, '"timeout" must be a number'),
        ({"url": "https://x/{undeclared}"}, "'undeclared' is used by the request but is not a property"),
        ({"url": "https://x/", "surprise": 1}, "Unknown key 'surprise'"),
    ],
)
def test_a_bad_http_config_is_refused_on_save(tenant: Tenant, config: JSONObject, problem: str) -> None:
    with pytest.raises(ValidationError) as refused:
        http_tool(tenant, "bad", config, {"a": {"type": "string"}})
    assert any(problem in message for message in refused.value.message_dict["config"]), refused.value
    assert not Tool.objects.filter(name="bad").exists()


def test_level_4_templates_are_accepted(tenant: Tenant) -> None:
    names = ("base", "path", "q", "list", "frag")
    http_tool(
        tenant, "fine", {"url": "https://api.example/{+base}/x{/path*}{?q:3,list*}{#frag}"}, {key: {} for key in names}
    )
    http_tool(tenant, "undeclared_schema", {"url": "https://api.example/{anything}"})


def test_the_tool_admin_adds_an_http_tool_and_shows_config_problems(admin_client: Any, tenant: Tenant) -> None:
    from django.urls import reverse

    from tests.tenants.admin.test_service_backed import tool_form

    config = {"method": "GET", "url": "https://api.example/pets/{id}", "auth": {"type": "bearer", "secret": "api"}}
    schema = json.dumps({"type": "object", "properties": {"id": {"type": "integer"}}})
    form = tool_form(tenant, name="get_pet", backend="http", input_schema=schema, config=json.dumps(config))
    missing = admin_client.post(reverse("admin:tenants_tool_add"), form)
    assert missing.status_code == 200
    assert "There is no secret &#x27;api&#x27;" in missing.content.decode(), "a secret it names must exist"
    secret_set(tenant=tenant, name="api", value="s3cret-token")
    added = admin_client.post(reverse("admin:tenants_tool_add"), form)
    assert added.status_code == 302
    assert Tool.objects.get(tenant=tenant, name="get_pet").config == config

    bad = {**config, "url": "https://api.example/pets/{id"}
    refused = admin_client.post(reverse("admin:tenants_tool_add"), {**form, "name": "x", "config": json.dumps(bad)})
    assert refused.status_code == 200
    assert "the URL template has a malformed {expression}" in refused.content.decode()

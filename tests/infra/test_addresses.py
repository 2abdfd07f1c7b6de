"""Endpoint URLs of a tenant's default server and of its named servers: made, parsed back, and the audiences each
endpoint accepts."""

from __future__ import annotations

import pytest

from mcp_infra.addresses import (
    EndpointAddress,
    accepted_audiences,
    address_of,
    endpoint_url,
    is_tenant_endpoint,
    metadata_url,
    path_tenant_and_server,
    tenant_slug_of,
)

BASE = "https://mcp.example.com"


def test_a_named_servers_urls_sit_under_its_tenant() -> None:
    assert endpoint_url(BASE, "acme") == f"{BASE}/t/acme/mcp"
    assert endpoint_url(BASE, "acme", "sse", "reader") == f"{BASE}/t/acme/s/reader/sse"
    assert metadata_url(BASE, "acme", "messages", "reader") == (
        f"{BASE}/.well-known/oauth-protected-resource/t/acme/s/reader/sse"
    )
    assert metadata_url(BASE, "acme") == f"{BASE}/.well-known/oauth-protected-resource/t/acme/mcp"


@pytest.mark.parametrize(
    ("resource", "address"),
    [
        (f"{BASE}/t/acme/mcp", EndpointAddress("acme", "", "mcp")),
        (f"{BASE}/t/acme/s/reader/messages", EndpointAddress("acme", "reader", "messages")),
        ("http://other.example/t/acme/s/reader/mcp", EndpointAddress("acme", "reader", "mcp")),
        (f"{BASE}/t/acme/s/reader/mcp/", None),
        (f"{BASE}/t/acme/s/reader", None),
        (f"{BASE}/t/acme/x/reader/mcp", None),
        (f"{BASE}/t/acme/s//mcp", None),
        (f"{BASE}/t/acme/other", None),
    ],
)
def test_an_endpoint_url_is_parsed_back_to_what_it_names(resource: str, address: EndpointAddress | None) -> None:
    assert address_of(resource) == address
    assert tenant_slug_of(resource) == (address.tenant if address else None)


def test_an_endpoint_of_a_tenant_is_its_exact_url_at_this_origin() -> None:
    assert is_tenant_endpoint(f"{BASE}/t/acme/s/reader/mcp", BASE, "acme")
    assert is_tenant_endpoint(f"{BASE}/t/acme/sse", BASE, "acme")
    assert not is_tenant_endpoint(f"{BASE}/t/globex/s/reader/mcp", BASE, "acme")
    assert not is_tenant_endpoint("https://evil.example/t/acme/mcp", BASE, "acme")
    assert not is_tenant_endpoint(f"{BASE}//t/acme/mcp", BASE, "acme")


def test_a_servers_endpoints_accept_that_servers_tokens_only() -> None:
    reader = {endpoint_url(BASE, "acme", e, "reader") for e in ("mcp", "sse", "messages")}
    assert accepted_audiences(BASE, "acme", "mcp", "reader") == {f"{BASE}/t/acme/s/reader/mcp"}
    assert accepted_audiences(BASE, "acme", "sse", "reader") == reader
    assert accepted_audiences(BASE, "acme", "mcp") == {f"{BASE}/t/acme/mcp"}


@pytest.mark.parametrize(
    ("path", "found"),
    [
        ("/t/acme/mcp", ("acme", "")),
        ("/t/acme/s/reader/mcp", ("acme", "reader")),
        ("/t/acme/s/reader", ("acme", "reader")),
        ("/t/acme/s", ("acme", "")),
        ("/t//mcp", (None, "")),
        ("/admin/", (None, "")),
    ],
)
def test_a_request_path_names_its_tenant_and_server(path: str, found: tuple[str | None, str]) -> None:
    assert path_tenant_and_server(path) == found

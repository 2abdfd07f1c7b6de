"""Client ID Metadata Documents: an https client_id is fetched under SSRF guards, checked, cached and used."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

import pytest
from django.test import Client
from django.utils import timezone
from oauth2_provider.cimd import CIMDError

from mcp_platform.oauth.authorize import UNKNOWN_CLIENT
from mcp_platform.oauth.cimd import resolve_fetchable
from mcp_platform.oauth.models import TenantApplication
from tests.https_documents import Reply
from tests.oauth.flow import HOST, REDIRECT, Pkce, authorize_query, consent, exchange, redirect_params

DOCUMENT = "/oauth/client.json"


def _authorize_page(browser: Client, client_id: str) -> Any:
    return browser.get(f"/oauth/authorize/?{urlencode(authorize_query(client_id, Pkce.new()))}", HTTP_HOST=HOST)


def _refused_as_unknown(page: Any) -> None:
    assert page.status_code == 400
    assert UNKNOWN_CLIENT.replace("'", "&#x27;") in page.content.decode()


def test_metadata_document_client_is_fetched_and_gets_a_token(acme, browser, documents, loopback_documents_trusted):
    client_id = documents.client_document(DOCUMENT, [REDIRECT], client_name="Claude Code")
    page = _authorize_page(browser, client_id)
    assert page.status_code == 200, page.content
    html = page.content.decode()
    assert "Claude Code" in html and f"Described by its metadata document at {client_id}" in html
    application = TenantApplication.objects.get(client_id=client_id)
    assert application.registration_source == "cimd"
    assert application.client_type == "public"
    pkce = Pkce.new()
    code = redirect_params(consent(browser, authorize_query(client_id, pkce)))["code"]
    response = exchange(Client(), client_id=client_id, code=code, verifier=pkce.verifier)
    assert response.status_code == 200, response.content
    assert response.json()["token_type"] == "Bearer"
    assert documents.hits[DOCUMENT] == 1


def test_loopback_documents_are_refused_by_default(acme, browser, documents):
    client_id = documents.client_document(DOCUMENT, [REDIRECT])
    _refused_as_unknown(_authorize_page(browser, client_id))
    assert documents.hits[DOCUMENT] == 0, "nothing may be fetched from a private address"
    assert not TenantApplication.objects.filter(client_id=client_id).exists()


@pytest.mark.parametrize(
    "address",
    ["127.0.0.1", "10.0.0.7", "172.16.0.1", "192.168.1.1", "169.254.169.254", "::1", "fe80::1", "224.0.0.1", "0.0.0.0"],
)
def test_private_loopback_link_local_multicast_and_reserved_addresses_are_refused(address, settings):
    with pytest.raises(CIMDError, match="non-public"):
        resolve_fetchable(address, 443)


def test_the_allow_list_opens_only_the_networks_it_names(settings):
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "CIMD_ALLOWED_NETWORKS": ["127.0.0.1/32"]}
    assert resolve_fetchable("127.0.0.1", 443) == ["127.0.0.1"]
    with pytest.raises(CIMDError):
        resolve_fetchable("127.0.0.2", 443)


def test_the_outbound_allow_list_opens_the_same_networks_to_the_fetch(settings):
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "CIMD_ALLOWED_NETWORKS": [], "OUTBOUND_ALLOWED_NETWORKS": []}
    with pytest.raises(CIMDError, match=r"non-public address \(refused: ::1 \(loopback\)"):
        resolve_fetchable("::1", 443)
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "OUTBOUND_ALLOWED_NETWORKS": ["::1/128"]}
    assert resolve_fetchable("::1", 443) == ["::1"]


def test_document_must_name_its_own_url(acme, browser, documents, loopback_documents_trusted):
    client_id = documents.url(DOCUMENT)
    documents.publish(
        DOCUMENT, {"client_id": documents.url("/other.json"), "redirect_uris": [REDIRECT], "client_name": "Liar"}
    )
    _refused_as_unknown(_authorize_page(browser, client_id))
    assert not TenantApplication.objects.filter(client_id=client_id).exists()


@pytest.mark.parametrize(
    "extra",
    [
        {"client_secret": "s3cret"},
        {"token_endpoint_auth_method": "client_secret_basic"},
        {"grant_types": ["client_credentials"]},
        {"redirect_uris": ["javascript:alert(1)"]},
        {"redirect_uris": ["http://attacker.example/callback"]},
        {"redirect_uris": [f"http://127.0.0.1/{n}" for n in range(11)]},
        {"redirect_uris": []},
        {"client_name": "x" * 101},
    ],
)
def test_documents_are_held_to_the_registration_rules(acme, browser, documents, loopback_documents_trusted, extra):
    metadata = dict(extra)
    client_id = documents.client_document(DOCUMENT, metadata.pop("redirect_uris", [REDIRECT]), **metadata)
    _refused_as_unknown(_authorize_page(browser, client_id))
    assert not TenantApplication.objects.filter(client_id=client_id).exists()


def test_redirects_are_not_followed(acme, browser, documents, loopback_documents_trusted):
    target = documents.client_document("/elsewhere.json", [REDIRECT])
    documents.replies[DOCUMENT] = Reply(b"", status=302, headers={"Location": target})
    _refused_as_unknown(_authorize_page(browser, documents.url(DOCUMENT)))
    assert documents.hits["/elsewhere.json"] == 0


def test_oversized_documents_are_refused(acme, browser, documents, loopback_documents_trusted):
    client_id = documents.client_document(DOCUMENT, [REDIRECT], client_uri="https://app.example/" + "a" * 9000)
    _refused_as_unknown(_authorize_page(browser, client_id))


def test_a_document_that_drips_is_given_up_at_the_fetch_deadline(
    acme, browser, documents, loopback_documents_trusted, settings
):
    # One byte every 0.2 s: each read returns within the read timeout; only a deadline on the fetch ends it.
    client_id = documents.client_document(DOCUMENT, [REDIRECT])
    documents.replies[DOCUMENT].drip = 0.2
    started = time.monotonic()
    _refused_as_unknown(_authorize_page(browser, client_id))
    assert time.monotonic() - started < settings.OAUTH2_PROVIDER["CIMD_FETCH_TIMEOUT_SECONDS"] + 2


def test_plain_http_client_ids_are_not_documents(acme, browser):
    _refused_as_unknown(_authorize_page(browser, "http://127.0.0.1:9/client.json"))


@pytest.mark.parametrize(
    ("cache_control", "lifetime"),
    [("max-age=600", 600), ("max-age=99999999", 24 * 3600), ("no-store", 300), (None, 24 * 3600)],
)
def test_documents_are_cached_as_cache_control_says_within_bounds(
    acme, browser, documents, loopback_documents_trusted, cache_control, lifetime
):
    headers = {"Cache-Control": cache_control} if cache_control else {}
    url = documents.url(DOCUMENT)
    document = {"client_id": url, "redirect_uris": [REDIRECT], "client_name": "Cached"}
    documents.publish(DOCUMENT, document, **headers)
    before = timezone.now()
    assert _authorize_page(browser, url).status_code == 200
    assert _authorize_page(browser, url).status_code == 200
    assert documents.hits[DOCUMENT] == 1
    expires = TenantApplication.objects.get(client_id=url).cimd_expires_at
    assert before + timedelta(seconds=lifetime - 5) <= expires <= timezone.now() + timedelta(seconds=lifetime)


def test_a_stale_document_is_fetched_again(acme, browser, documents, loopback_documents_trusted):
    client_id = documents.client_document(DOCUMENT, [REDIRECT], client_name="First name")
    assert _authorize_page(browser, client_id).status_code == 200
    TenantApplication.objects.filter(client_id=client_id).update(cimd_expires_at=timezone.now() - timedelta(seconds=1))
    documents.client_document(DOCUMENT, [REDIRECT], client_name="Second name")
    assert "Second name" in _authorize_page(browser, client_id).content.decode()
    assert documents.hits[DOCUMENT] == 2


def test_first_sights_are_limited_per_client_address(acme, browser, documents, loopback_documents_trusted, settings):
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "DCR_PER_ADDRESS_PER_HOUR": 2}
    urls = [documents.client_document(f"/client-{n}.json", [REDIRECT]) for n in range(3)]
    assert [_authorize_page(browser, url).status_code for url in urls] == [200, 200, 400]
    assert documents.hits["/client-2.json"] == 0


def test_token_endpoint_fetches_an_unseen_document_too(acme, documents, loopback_documents_trusted):
    client_id = documents.client_document(DOCUMENT, [REDIRECT])
    response = exchange(Client(), client_id=client_id, code="not-a-code", verifier=Pkce.new().verifier)
    # The client is now known (the document was fetched); the code is not.
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_grant"
    assert TenantApplication.objects.filter(client_id=client_id, registration_source="cimd").exists()

"""Self-registered clients: limits by real client address, their lifetime, and ``invalid_client`` when unknown."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

import pytest
from django.test import Client
from django.utils import timezone

from mcp_platform.oauth.authorize import UNKNOWN_CLIENT
from mcp_platform.oauth.models import TenantApplication
from mcp_platform.oauth.registration import dcr_clients_purge_unused
from mcp_platform.oauth.tasks import oauth_purge_expired
from mcp_platform.oauth.throttling import client_address, client_groups, registration_refused
from tests.factories import access_token_create
from tests.oauth.conftest import ACME_MCP
from tests.oauth.flow import HOST, REDIRECT, Pkce, authorize_query, consent, exchange, redirect_params, register


@pytest.fixture
def behind_proxy(settings: Any) -> None:
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "TRUSTED_PROXIES": ["10.0.0.0/8"], "DCR_PER_ADDRESS_PER_HOUR": 2}


# ---- the client's address ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("remote", "forwarded", "expected"),
    [
        ("203.0.113.9", "198.51.100.1", "203.0.113.9"),  # not a trusted proxy: its header means nothing
        ("10.0.0.2", "198.51.100.1", "198.51.100.1"),
        ("10.0.0.2", "6.6.6.6, 198.51.100.1", "198.51.100.1"),  # the client wrote the left part itself
        ("10.0.0.2", "198.51.100.1, 10.0.0.3", "198.51.100.1"),  # two proxies
        ("10.0.0.2", "garbage, 10.0.0.3", "10.0.0.3"),
        ("10.0.0.2", "", "10.0.0.2"),
        ("", "198.51.100.1", "unknown"),
    ],
)
def test_client_address_believes_only_trusted_proxies(behind_proxy, remote, forwarded, expected):
    assert client_address({"REMOTE_ADDR": remote, "HTTP_X_FORWARDED_FOR": forwarded}) == expected


def test_registrations_are_counted_per_real_client_behind_the_proxy(client, db, behind_proxy):
    def register_from(address: str) -> int:
        meta = {"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": address}
        return int(register(client, meta=meta).status_code)

    assert [register_from("198.51.100.1") for _ in range(3)] == [201, 201, 429]
    assert register_from("198.51.100.2") == 201, "another client behind the same proxy has its own budget"


def test_a_forged_forwarded_for_does_not_buy_more_registrations(client, db, settings):
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "DCR_PER_ADDRESS_PER_HOUR": 2}
    statuses = [register(client, meta={"HTTP_X_FORWARDED_FOR": f"198.51.100.{n}"}).status_code for n in range(3)]
    assert statuses == [201, 201, 429]


# ---- who shares a budget ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "client", "network"),
    [
        ("198.51.100.7", "198.51.100.7", "198.51.100.0/24"),
        ("2001:db8:1:2:3::9", "2001:db8:1:2::/64", "2001:db8:1::/56"),
        ("2001:db8:1:ff:3::9", "2001:db8:1:ff::/64", "2001:db8:1::/56"),
        ("::ffff:198.51.100.7", "198.51.100.7", "198.51.100.0/24"),
        ("unknown", "unknown", "unknown"),
    ],
)
def test_a_client_is_an_ipv4_address_or_ipv6_64_and_a_network_a_24_or_56(address, client, network):
    assert client_groups(address) == (client, network)


def _limits(settings: Any, **limits: int) -> None:
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, **limits}


def _register_from(client: Client, address: str) -> Any:
    return register(client, meta={"REMOTE_ADDR": address})


def test_addresses_of_one_network_share_its_budget(client, db, settings):
    _limits(settings, DCR_PER_ADDRESS_PER_HOUR=2, DCR_PER_NETWORK_PER_HOUR=3)
    statuses = [_register_from(client, f"198.51.100.{n}").status_code for n in range(1, 5)]
    assert statuses == [201, 201, 201, 429]
    assert _register_from(client, "198.51.101.1").status_code == 201, "the next /24 is another network"


def test_an_ipv6_client_cannot_rotate_addresses_within_its_prefix(client, db, settings):
    _limits(settings, DCR_PER_ADDRESS_PER_HOUR=2, DCR_PER_NETWORK_PER_HOUR=4)
    same_64 = [_register_from(client, f"2001:db8:1:2::{n:x}").status_code for n in range(1, 4)]
    assert same_64 == [201, 201, 429]  # refused attempts count against the network too
    other_64s_same_56 = [_register_from(client, f"2001:db8:1:{n:x}::1").status_code for n in range(3, 5)]
    assert other_64s_same_56 == [201, 429]


def test_a_flood_from_many_networks_cannot_lock_out_a_new_one(client, db, settings):
    """The platform-wide figure is 10 here: five attacking networks reach it; people elsewhere still register."""
    _limits(
        settings,
        DCR_PER_ADDRESS_PER_HOUR=2,
        DCR_PER_NETWORK_PER_HOUR=2,
        DCR_PLATFORM_PER_HOUR=10,
        DCR_PER_NETWORK_UNDER_LOAD=1,
    )
    attack = [_register_from(client, f"203.0.{n}.{k}").status_code for n in range(8) for k in (1, 2, 3)]
    # Each network gets its two, until the platform is under load; then a network's first one only.
    assert attack.count(201) == 10 + 3
    assert _register_from(client, "198.51.100.1").status_code == 201
    assert _register_from(client, "2001:db8:5::1").status_code == 201
    assert _register_from(client, "203.0.0.4").status_code == 429, "a network that flooded stays refused"


def test_the_limit_is_a_429_with_retry_after_until_the_hour_ends_and_an_rfc_error_body(client, db, settings):
    _limits(settings, DCR_PER_ADDRESS_PER_HOUR=1)
    assert _register_from(client, "198.51.100.1").status_code == 201
    refused = _register_from(client, "198.51.100.1")
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 3600
    body = refused.json()
    # RFC 7591 §3.2.2 has no code for a limit; RFC 6749's temporarily_unavailable says what it is.
    assert body["error"] == "temporarily_unavailable"
    assert "try again in" in body["error_description"]


def test_retry_after_is_the_time_left_in_the_clock_hour(db, settings):
    _limits(settings, DCR_PER_ADDRESS_PER_HOUR=1)
    meta = {"REMOTE_ADDR": "198.51.100.1"}
    hour = 3600 * 500_000
    assert registration_refused(meta, "dcr", now=hour + 100) is None
    assert registration_refused(meta, "dcr", now=hour + 3000) == 600
    assert registration_refused(meta, "dcr", now=hour + 3600) is None, "a new hour, a new budget"


# ---- what a registration may become ------------------------------------------------------------------


def test_a_registration_update_is_held_to_the_same_rules(client, db):
    registered = register(client).json()
    response = client.put(
        f"/oauth/register/{registered['client_id']}/",
        {"redirect_uris": [REDIRECT], "grant_types": ["client_credentials"], "token_endpoint_auth_method": "none"},
        content_type="application/json",
        HTTP_HOST=HOST,
        HTTP_AUTHORIZATION=f"Bearer {registered['registration_access_token']}",
    )
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_client_metadata"
    assert TenantApplication.objects.get(client_id=registered["client_id"]).authorization_grant_type == (
        "authorization-code"
    )


# ---- lifetime of unused registrations ----------------------------------------------------------------


def _age(client_id: str, seconds: int) -> None:
    TenantApplication.objects.filter(client_id=client_id).update(created=timezone.now() - timedelta(seconds=seconds))


def test_unused_registrations_are_purged_after_their_lifetime(client, acme, member):
    unused_old = register(client).json()["client_id"]
    unused_new = register(client).json()["client_id"]
    used_old = register(client).json()["client_id"]
    access_token_create(user=member, application=TenantApplication.objects.get(client_id=used_old), resource=[ACME_MCP])
    for client_id in (unused_old, used_old):
        _age(client_id, 2 * 24 * 3600)
    assert dcr_clients_purge_unused(older_than=timedelta(days=1)) == 1
    remaining = set(TenantApplication.objects.values_list("client_id", flat=True))
    assert remaining == {unused_new, used_old}


def test_a_client_whose_tokens_expired_and_were_cleared_is_purged_too(client, acme, member):
    client_id = register(client).json()["client_id"]
    application = TenantApplication.objects.get(client_id=client_id)
    access_token_create(user=member, application=application, resource=[ACME_MCP], expires_in=-10)
    _age(client_id, 2 * 24 * 3600)
    assert oauth_purge_expired() == {"unused_clients": 1, "consumed_codes": 0, "connect_links": 0}
    assert not TenantApplication.objects.filter(client_id=client_id).exists()


def test_admin_registered_clients_are_never_purged(acme, client_app):
    _age(client_app.client_id, 365 * 24 * 3600)
    assert dcr_clients_purge_unused(older_than=timedelta(days=1)) == 0


# ---- an unknown client_id is invalid_client everywhere -----------------------------------------------


def test_unknown_client_at_the_authorization_endpoint_is_shown_not_redirected(acme, member):
    browser = Client()
    browser.force_login(member)
    page = browser.get(f"/oauth/authorize/?{urlencode(authorize_query('gone', Pkce.new()))}", HTTP_HOST=HOST)
    assert page.status_code == 400
    assert "Location" not in page
    assert "connect again" in page.content.decode()
    assert UNKNOWN_CLIENT.startswith("This app is not registered here")


@pytest.mark.parametrize(
    "data",
    [
        {"grant_type": "authorization_code", "code": "c", "redirect_uri": REDIRECT, "code_verifier": "v" * 43},
        {"grant_type": "refresh_token", "refresh_token": "r"},
        {"grant_type": "client_credentials", "client_secret": "s"},
    ],
)
def test_unknown_client_at_the_token_endpoint_is_invalid_client(db, data):
    response = Client().post("/oauth/token/", {**data, "client_id": "gone"}, HTTP_HOST=HOST)
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_client"


def test_unknown_client_at_the_revocation_endpoint_is_invalid_client(db):
    response = Client().post("/oauth/revoke/", {"token": "t", "client_id": "gone"}, HTTP_HOST=HOST)
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_client"


def test_purged_client_gets_invalid_client_and_can_register_again(client, acme, member):
    client_id = register(client).json()["client_id"]
    _age(client_id, 2 * 24 * 3600)
    dcr_clients_purge_unused(older_than=timedelta(days=1))
    stale = Client().post(
        "/oauth/token/", {"grant_type": "refresh_token", "refresh_token": "r", "client_id": client_id}, HTTP_HOST=HOST
    )
    assert stale.json()["error"] == "invalid_client"
    fresh = register(client).json()["client_id"]
    browser = Client()
    browser.force_login(member)
    pkce = Pkce.new()
    code = redirect_params(consent(browser, authorize_query(fresh, pkce)))["code"]
    assert exchange(Client(), client_id=fresh, code=code, verifier=pkce.verifier).status_code == 200

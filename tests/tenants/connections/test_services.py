"""People's credentials as rows: sealed and bound to their row, used at the moment of use, refreshed once however
many calls need it at the same moment, asked for again after a refused refresh; connect links are single use."""

from __future__ import annotations

import asyncio
import base64
import io
import os
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone

from tenants.connections import events, services
from tenants.connections.events import ConnectionEvent
from tenants.connections.oauth_client import RefreshRefused, TokenSet
from tenants.connections.signals import connection_event
from tenants.models import PersonalCredential
from tenants.secrets import SecretUnreadable
from tests.factories import TenantFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = "gho_access-TOKEN-never-in-a-row"
REFRESH = "ghr_refresh-TOKEN-never-in-a-row"


@pytest.fixture
def heard() -> list[ConnectionEvent]:
    found: list[ConnectionEvent] = []

    def receiver(sender: object, *, event: ConnectionEvent, **kwargs: object) -> None:
        found.append(event)

    connection_event.connect(receiver, dispatch_uid="test-heard")
    yield found
    connection_event.disconnect(dispatch_uid="test-heard")


def _connected(*, expires_in: float | None = 3600, refresh: str | None = REFRESH) -> PersonalCredential:
    tenant, person = TenantFactory(), UserFactory()
    return services.credential_store_oauth(
        tenant_id=tenant.pk,
        user_id=person.pk,
        target="upstream:7",
        access_token=TOKEN,
        refresh_token=refresh,
        expires_in=expires_in,
        scope="repo",
        issuer="https://as.example",
    )


def test_tokens_are_sealed_and_bound_to_their_row(heard: list[ConnectionEvent]) -> None:
    credential = _connected()
    stored = PersonalCredential.objects.get(pk=credential.pk)
    assert TOKEN not in stored.sealed and REFRESH not in stored.sealed
    assert services.credential_values(stored) == {"access_token": TOKEN, "refresh_token": REFRESH}
    # Copied to another person's row, the ciphertext no longer decrypts.
    other = UserFactory()
    copied = PersonalCredential(
        tenant_id=stored.tenant_id,
        user=other,
        target=stored.target,
        kind="oauth",
        sealed=stored.sealed,
        key_id=stored.key_id,
    )
    with pytest.raises(SecretUnreadable):
        services.credential_values(copied)
    assert [e.action for e in heard] == [events.CONNECTED]


async def _never(credential: PersonalCredential, refresh_token: str) -> TokenSet:
    raise AssertionError("no refresh was due")


def test_a_live_token_is_used_as_it_is_and_its_use_recorded_once(heard: list[ConnectionEvent]) -> None:
    credential = _connected()

    async def twice() -> list[str | None]:
        return [
            await services.aaccess(
                tenant_id=credential.tenant_id, user_id=credential.user_id, target="upstream:7", refresher=_never
            )
            for _ in range(2)
        ]

    assert asyncio.run(twice()) == [TOKEN, TOKEN]
    assert [e.action for e in heard] == [events.CONNECTED, events.USED]


def test_a_token_about_to_expire_is_refreshed_once_for_many_calls_at_the_same_moment() -> None:
    credential = _connected(expires_in=10)
    refreshes: list[str] = []

    async def refresher(row: PersonalCredential, refresh_token: str) -> TokenSet:
        refreshes.append(refresh_token)
        await asyncio.sleep(0.3)
        return TokenSet("new-access", "new-refresh", 3600, None)

    async def many() -> list[str | None]:
        calls = [
            services.aaccess(
                tenant_id=credential.tenant_id, user_id=credential.user_id, target="upstream:7", refresher=refresher
            )
            for _ in range(6)
        ]
        return list(await asyncio.gather(*calls))

    assert asyncio.run(many()) == ["new-access"] * 6
    assert refreshes == [REFRESH]
    stored = PersonalCredential.objects.get(pk=credential.pk)
    assert services.credential_values(stored) == {"access_token": "new-access", "refresh_token": "new-refresh"}
    assert stored.refresh_claimed_until is None and stored.expires_at > timezone.now() + timedelta(minutes=50)


def test_a_refused_refresh_asks_for_the_person_again(heard: list[ConnectionEvent]) -> None:
    credential = _connected(expires_in=0)

    async def refused(row: PersonalCredential, refresh_token: str) -> TokenSet:
        raise RefreshRefused("invalid_grant: the refresh token was revoked")

    found = asyncio.run(
        services.aaccess(
            tenant_id=credential.tenant_id, user_id=credential.user_id, target="upstream:7", refresher=refused
        )
    )
    assert found is None
    stored = PersonalCredential.objects.get(pk=credential.pk)
    assert stored.status == PersonalCredential.Status.NEEDS_PERSON
    assert "invalid_grant" in stored.last_error and REFRESH not in stored.last_error
    assert [e.action for e in heard][-1] == events.REFRESH_FAILED
    # Asked again on the next call, without another refresh.
    again = asyncio.run(
        services.aaccess(
            tenant_id=credential.tenant_id, user_id=credential.user_id, target="upstream:7", refresher=_never
        )
    )
    assert again is None


def test_a_failed_refresh_leaves_the_connection_for_the_next_call() -> None:
    credential = _connected(expires_in=0)

    async def down(row: PersonalCredential, refresh_token: str) -> TokenSet:
        raise services.CredentialUnusable("could not refresh the connection: HTTP 503")

    with pytest.raises(services.CredentialUnusable):
        asyncio.run(
            services.aaccess(
                tenant_id=credential.tenant_id, user_id=credential.user_id, target="upstream:7", refresher=down
            )
        )
    stored = PersonalCredential.objects.get(pk=credential.pk)
    assert stored.status == PersonalCredential.Status.ACTIVE and stored.refresh_claimed_until is None


def test_an_expired_token_without_a_refresh_token_needs_the_person() -> None:
    credential = _connected(expires_in=0, refresh=None)
    found = asyncio.run(
        services.aaccess(
            tenant_id=credential.tenant_id, user_id=credential.user_id, target="upstream:7", refresher=_never
        )
    )
    assert found is None


def test_personal_keys_are_checked_sealed_and_replaced(heard: list[ConnectionEvent]) -> None:
    tenant, person = TenantFactory(), UserFactory()
    for bad in ("", "   ", "two\nlines", "é" * 3, "x" * (services.KEY_LIMIT + 1)):
        with pytest.raises(ValueError) as refused:
            services.credential_store_key(tenant_id=tenant.pk, user_id=person.pk, target="tool:3", key=bad)
        assert bad.strip() == "" or bad not in str(refused.value)
    services.credential_store_key(tenant_id=tenant.pk, user_id=person.pk, target="tool:3", key="key-one")
    credential = services.credential_store_key(tenant_id=tenant.pk, user_id=person.pk, target="tool:3", key="key-two")
    assert PersonalCredential.objects.filter(user=person).count() == 1
    assert "key-two" not in credential.sealed
    found = asyncio.run(services.aaccess(tenant_id=tenant.pk, user_id=person.pk, target="tool:3", refresher=_never))
    assert found == "key-two"
    assert services.credential_remove(credential=credential) == {"key": "key-two"}
    assert not PersonalCredential.objects.filter(user=person).exists()
    assert [e.action for e in heard] == [events.KEY_STORED, events.KEY_STORED, events.USED, events.KEY_REMOVED]


def test_connect_links_are_single_use_short_lived_and_bound_to_the_person() -> None:
    tenant, person, other = TenantFactory(), UserFactory(), UserFactory()
    token = services.connect_link_create(
        tenant_id=tenant.pk, user_id=person.pk, target="upstream:1", elicitation_id="e1"
    )
    link = services.connect_link_get(token=token)
    assert link is not None and link.user_id == person.pk
    assert token not in link.token_digest
    state = services.connect_link_begin(link=link, verifier="the-verifier")
    assert "the-verifier" not in link.sealed
    assert services.connect_link_finish(state=state, user_id=other.pk) is None
    finished = services.connect_link_finish(state=state, user_id=person.pk)
    assert finished is not None and finished[1] == "the-verifier"
    assert services.connect_link_finish(state=state, user_id=person.pk) is None
    assert services.connect_link_get(token=token) is None
    late = services.connect_link_create(
        tenant_id=tenant.pk, user_id=person.pk, target="upstream:1", elicitation_id="e2"
    )
    type(link).objects.filter(token_digest=services._digest(late)).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert services.connect_link_get(token=late) is None
    assert services.connect_links_purge() == 1


def test_a_key_rotation_reseals_peoples_tokens_under_the_new_key(settings: Any) -> None:
    old, new = base64.b64encode(os.urandom(32)).decode(), base64.b64encode(os.urandom(32)).decode()
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "SECRET_KEYS": [old]}
    credential = _connected()
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "SECRET_KEYS": [new, old]}
    out = io.StringIO()
    call_command("secrets_reencrypt", stdout=out)
    assert "Re-encrypted 1 of people's own tokens and keys." in out.getvalue()
    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "SECRET_KEYS": [new]}
    stored = PersonalCredential.objects.get(pk=credential.pk)
    assert services.credential_values(stored) == {"access_token": TOKEN, "refresh_token": REFRESH}

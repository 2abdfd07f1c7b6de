"""The upstream admin against a real SDK upstream process: adding connects and mirrors before the form is accepted,
failures stay on the form and store nothing, health is shown, secrets are referred to by name only."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import override_settings
from django.urls import reverse
from django.utils import timezone

from tenants.models import Backend, Tenant, Tool, Upstream
from tenants.secrets import secret_set
from tests.e2e.upstreams import UpstreamServer, upstream_server

pytestmark = pytest.mark.django_db

# The outbound door refuses loopback unless a deployment allows it; these tests do, explicitly.
LOOPBACK_ALLOWED = override_settings(
    MCP_PLATFORM={**settings.MCP_PLATFORM, "OUTBOUND_ALLOWED_NETWORKS": ["127.0.0.1/32"]},
)


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UpstreamServer]:
    with ExitStack() as stack:
        yield upstream_server(stack, Path(tmp_path_factory.mktemp("admin-upstream")))


def upstream_form(tenant: Tenant, url: str, **overrides: Any) -> dict[str, Any]:
    data = {
        "tenant": tenant.pk,
        "name": "docs",
        "url": url,
        "prefix": "",
        "enabled": "on",
        "excluded": "[]",
        "auth_type": "",
        "auth_secret": "",
        "auth_header": "",
        "client_id": "",
        "token_url": "",
        "scope": "",
    }
    data.update(overrides)
    return data


@LOOPBACK_ALLOWED
def test_adding_an_upstream_in_the_admin_mirrors_its_catalog(
    admin_client: Any, tenant: Tenant, upstream: UpstreamServer
) -> None:
    response = admin_client.post(reverse("admin:tenants_upstream_add"), upstream_form(tenant, upstream.url))

    assert response.status_code == 302, re.findall(r"errorlist[^>]*>(.*?)</ul>", response.content.decode(), re.S)
    added = Upstream.objects.get(tenant=tenant, name="docs")
    assert added.prefix == "docs_" and added.transport == "streamable-http" and added.last_ok_at is not None
    echo = Tool.objects.get(tenant=tenant, name="docs_echo")
    assert echo.backend == Backend.UPSTREAM and echo.upstream == added
    assert echo.config["remote"]["name"] == "echo"
    assert tenant.prompts.filter(name="docs_greet").exists()
    assert tenant.resources.filter(uri="notes://readme", upstream=added).exists()


@LOOPBACK_ALLOWED
def test_an_unreachable_upstream_is_refused_on_the_form_and_nothing_is_stored(
    admin_client: Any, tenant: Tenant
) -> None:
    response = admin_client.post(reverse("admin:tenants_upstream_add"), upstream_form(tenant, "http://127.0.0.1:9/mcp"))

    assert response.status_code == 200
    assert "Could not add the upstream" in response.content.decode()
    assert not Upstream.objects.exists() and not Tool.objects.exists()


def test_a_loopback_upstream_is_refused_when_no_network_is_allowed(
    admin_client: Any, tenant: Tenant, upstream: UpstreamServer
) -> None:
    response = admin_client.post(reverse("admin:tenants_upstream_add"), upstream_form(tenant, upstream.url))

    assert response.status_code == 200
    assert "not an allowed network" in response.content.decode()
    assert not Upstream.objects.exists()


@LOOPBACK_ALLOWED
def test_a_missing_secret_is_named_and_a_stored_one_is_never_shown(
    admin_client: Any, tenant: Tenant, upstream: UpstreamServer
) -> None:
    form = upstream_form(tenant, upstream.url, auth_type="bearer", auth_secret="docs-token")
    missing = admin_client.post(reverse("admin:tenants_upstream_add"), form)
    assert missing.status_code == 200
    assert "docs-token" in missing.content.decode() and not Upstream.objects.exists()

    value = "v4lue-" + os.urandom(8).hex()
    secret_set(tenant=tenant, name="docs-token", value=value)
    added = admin_client.post(reverse("admin:tenants_upstream_add"), form)
    assert added.status_code == 302
    stored = Upstream.objects.get(tenant=tenant)
    page = admin_client.get(reverse("admin:tenants_upstream_change", args=[stored.pk])).content.decode()
    assert "docs-token" in page and value not in page
    assert stored.auth == {"type": "bearer", "secret": "docs-token"}


def test_the_list_shows_each_upstreams_health_and_last_error(admin_client: Any, tenant: Tenant) -> None:
    Upstream.objects.create(tenant=tenant, name="fine", url="https://fine.example/mcp", last_ok_at=timezone.now())
    Upstream.objects.create(
        tenant=tenant,
        name="dead",
        url="https://dead.example/mcp",
        consecutive_failures=3,
        last_error="upstream 'dead': ConnectError: connection refused",
        circuit_open_until=timezone.now() + timezone.timedelta(seconds=30),
    )

    page = admin_client.get(reverse("admin:tenants_upstream_changelist")).content.decode()

    assert "circuit open: upstream &#x27;dead&#x27;: ConnectError: connection refused" in page
    assert '<td class="field-health">ok</td>' in page


@LOOPBACK_ALLOWED
def test_a_new_prefix_saved_in_the_admin_renames_the_mirrored_items_at_once(
    admin_client: Any, tenant: Tenant, upstream: UpstreamServer
) -> None:
    admin_client.post(reverse("admin:tenants_upstream_add"), upstream_form(tenant, upstream.url))
    stored = Upstream.objects.get(tenant=tenant)
    form = upstream_form(tenant, upstream.url, prefix="kb.", excluded='["tools:fail"]')
    del form["tenant"]

    response = admin_client.post(reverse("admin:tenants_upstream_change", args=[stored.pk]), form)

    assert response.status_code == 302
    names = set(Tool.objects.filter(tenant=tenant).values_list("name", flat=True))
    assert "kb.echo" in names and "docs_echo" not in names and "kb.fail" not in names
    assert tenant.prompts.filter(name="kb.greet").exists()


@LOOPBACK_ALLOWED
def test_the_session_mode_and_session_tools_are_chosen_in_the_admin(
    admin_client: Any, tenant: Tenant, upstream: UpstreamServer
) -> None:
    response = admin_client.post(
        reverse("admin:tenants_upstream_add"), upstream_form(tenant, upstream.url, session_mode="session")
    )
    assert response.status_code == 302, re.findall(r"errorlist[^>]*>(.*?)</ul>", response.content.decode(), re.S)
    stored = Upstream.objects.get(tenant=tenant)
    assert stored.session_mode == "session" and stored.protocol_version == "2025-11-25"
    revision = stored.revision
    form = upstream_form(tenant, upstream.url, session_mode="auto", session_tools='["ask_name_now"]')
    del form["tenant"]

    response = admin_client.post(reverse("admin:tenants_upstream_change", args=[stored.pk]), form)

    assert response.status_code == 302, re.findall(r"errorlist[^>]*>(.*?)</ul>", response.content.decode(), re.S)
    stored.refresh_from_db()
    assert (stored.session_mode, stored.session_tools) == ("auto", ["ask_name_now"])
    assert stored.revision == revision + 1, "a new mode is a new connection"
    form["session_tools"] = '{"not": "a list"}'
    response = admin_client.post(reverse("admin:tenants_upstream_change", args=[stored.pk]), form)
    assert response.status_code == 200 and "list of tool names" in response.content.decode()

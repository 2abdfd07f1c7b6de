"""An upstream (a real SDK process) that lists a resource whose URI does not parse: adding it, refreshing it from
the admin and ``manage.py upstream_refresh`` skip that item and say why, and mirror the rest."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from tenants.models import Prompt, Resource, ResourceTemplate, Tenant, Tool, Upstream
from tests.e2e.upstreams import UpstreamServer, upstream_server
from tests.factories import MembershipFactory, UserFactory
from tests.tenants.admin.test_upstreams import LOOPBACK_ALLOWED, upstream_form

pytestmark = pytest.mark.django_db

BRACKETED = "x://[x]"
SKIPPED = "The upstream's resource 'x://[x]' cannot be added: uri: 'x://[x]' is not a URI"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UpstreamServer]:
    with ExitStack() as stack:
        directory = Path(tmp_path_factory.mktemp("hostile-upstream"))
        yield upstream_server(stack, directory, resources=(BRACKETED,))


@pytest.fixture
def owner(tenant: Tenant) -> Client:
    user = UserFactory(username="olivia")
    MembershipFactory(tenant=tenant, user=user, role="owner")
    browser = Client(raise_request_exception=False)
    browser.force_login(user)
    return browser


def assert_mirrored_but_the_bracketed_resource(tenant: Tenant) -> None:
    assert tenant.tools.filter(name="docs_echo").exists() and tenant.prompts.filter(name="docs_greet").exists()
    uris = set(tenant.resources.values_list("uri", flat=True))
    assert "notes://readme" in uris and not any("[" in uri for uri in uris), uris


@LOOPBACK_ALLOWED
def test_adding_the_upstream_skips_the_item_saying_why_and_mirrors_the_rest(
    owner: Client, tenant: Tenant, hostile: UpstreamServer
) -> None:
    response = owner.post(reverse("admin:tenants_upstream_add"), upstream_form(tenant, hostile.url), follow=True)

    assert response.status_code == 200
    assert any(SKIPPED in str(m) and "1 skipped" in str(m) for m in get_messages(response.wsgi_request))
    assert_mirrored_but_the_bracketed_resource(tenant)


@LOOPBACK_ALLOWED
def test_refreshing_from_the_admin_skips_the_item_saying_why(
    owner: Client, tenant: Tenant, hostile: UpstreamServer
) -> None:
    upstream = Upstream.objects.create(tenant=tenant, name="docs", url=hostile.url, prefix="docs_")

    response = owner.post(
        reverse("admin:tenants_upstream_changelist"),
        {"action": "refresh_now", "_selected_action": [upstream.pk]},
        follow=True,
    )

    assert response.status_code == 200
    warnings = [str(m) for m in get_messages(response.wsgi_request) if m.level_tag == "warning"]
    assert any(SKIPPED in m for m in warnings), warnings
    assert_mirrored_but_the_bracketed_resource(tenant)
    upstream.refresh_from_db()
    assert SKIPPED in upstream.last_error


@LOOPBACK_ALLOWED
def test_the_refresh_command_reports_the_skipped_item(tenant: Tenant, hostile: UpstreamServer) -> None:
    Upstream.objects.create(tenant=tenant, name="docs", url=hostile.url, prefix="docs_")
    out: Any = StringIO()

    call_command("upstream_refresh", tenant.slug, stdout=out, stderr=out)

    assert_mirrored_but_the_bracketed_resource(tenant)
    mirrored = sum(model.objects.filter(tenant=tenant).count() for model in (Tool, Resource, ResourceTemplate, Prompt))
    assert f"docs: {mirrored} added, 0 updated, 0 removed, 1 skipped" in out.getvalue() and SKIPPED in out.getvalue()

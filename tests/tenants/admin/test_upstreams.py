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
from django.forms import CheckboxInput
from django.test import override_settings
from django.urls import reverse
from django.utils import timezone

from tenants.models import Backend, Tenant, Tool, Upstream
from tenants.secrets import secret_set
from tests.e2e.upstreams import UpstreamServer, upstream_server
from tests.factories import MembershipFactory, UserFactory

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


@LOOPBACK_ALLOWED
def test_an_upstream_that_acts_as_each_person_is_added_with_machine_clients_credentials(
    admin_client: Any, tenant: Tenant, upstream: UpstreamServer
) -> None:
    secret_set(tenant=tenant, name="docs-token", value="robot-" + os.urandom(8).hex())
    form = upstream_form(
        tenant,
        upstream.url,
        acts_as="user_oauth",
        person_client="metadata_document",
        person_scope="notes.read",
        machine="shared",
        auth_type="bearer",
        auth_secret="docs-token",
    )

    response = admin_client.post(reverse("admin:tenants_upstream_add"), form)

    assert response.status_code == 302, re.findall(r"errorlist[^>]*>(.*?)</ul>", response.content.decode(), re.S)
    added = Upstream.objects.get(tenant=tenant, name="docs")
    assert added.auth == {
        "type": "user_oauth",
        "client": "metadata_document",
        "scope": "notes.read",
        "machine": {"type": "bearer", "secret": "docs-token"},
    }
    assert Tool.objects.filter(tenant=tenant, name="docs_echo", upstream=added).exists()


def test_the_secret_is_picked_from_the_upstreams_tenants_secret_names_and_a_missing_one_is_refused(
    client: Any, admin_client: Any, tenant: Tenant, other_tenant: Tenant
) -> None:
    secret_set(tenant=tenant, name="docs-token", value="never-shown-ours")
    secret_set(tenant=other_tenant, name="other-token", value="never-shown-theirs")
    auth = {"type": "bearer", "secret": "docs-token"}
    stored = Upstream.objects.create(
        tenant=tenant, name="docs", url="https://docs.example/mcp", enabled=False, auth=auth
    )
    change = reverse("admin:tenants_upstream_change", args=[stored.pk])
    owner = UserFactory(username="olivia")
    MembershipFactory(tenant=tenant, user=owner, role="owner")
    client.force_login(owner)

    add_page = client.get(reverse("admin:tenants_upstream_add")).content.decode()
    change_page = admin_client.get(change).content.decode()  # platform staff: still the upstream's tenant's only
    refused = client.post(change, change_form(client, stored, auth_secret="gone"))

    assert '<option value="docs-token">docs-token</option>' in add_page and "other-token" not in add_page
    assert '<option value="docs-token" selected>docs-token</option>' in change_page
    assert "other-token" not in change_page and "never-shown" not in add_page + change_page
    page = refused.content.decode()
    assert refused.status_code == 200 and "There is no secret &#x27;gone&#x27; in acme" in page
    assert '<option value="gone" selected>gone (no such secret)</option>' in page, "what was sent stays chosen"
    stored.refresh_from_db()
    assert stored.auth == auth


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

    Upstream.objects.create(tenant=tenant, name="new", url="https://new.example/mcp")
    Upstream.objects.create(
        tenant=tenant,
        name="flaky",
        url="https://flaky.example/mcp",
        last_ok_at=timezone.now(),
        consecutive_failures=1,
        last_error="upstream 'flaky': ReadTimeout",
        last_error_at=timezone.now() - timezone.timedelta(minutes=5),
    )

    page = admin_client.get(reverse("admin:tenants_upstream_changelist")).content.decode()

    circuit = '<span class="upstream-health upstream-health-circuit">Circuit open</span>'
    assert f'{circuit} <span class="upstream-health-error">upstream &#x27;dead&#x27;: ConnectError' in page
    assert '<span class="upstream-health upstream-health-ok">OK</span>' in page
    assert '<span class="upstream-health upstream-health-never">Never connected</span>' in page
    failing = '<span class="upstream-health upstream-health-failing">Failing</span>'
    assert f'{failing} <span class="upstream-health-error">upstream &#x27;flaky&#x27;: ReadTimeout</span>' in page
    assert '<span class="upstream-health-when">5\xa0minutes ago</span>' in page
    # "Enabled" stays a column of its own: a failing upstream is still enabled.
    assert page.count('class="field-enabled"') == 4


@LOOPBACK_ALLOWED
def test_a_new_prefix_saved_in_the_admin_renames_the_mirrored_items_at_once(
    admin_client: Any, tenant: Tenant, upstream: UpstreamServer
) -> None:
    admin_client.post(reverse("admin:tenants_upstream_add"), upstream_form(tenant, upstream.url))
    stored = Upstream.objects.get(tenant=tenant)
    form = change_form(admin_client, stored, prefix="kb.")
    form[item_field(form, "tools:fail", "served")] = ""

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


# ---- the upstream's page: its items, refresh and test ---------------------------------------------------------


def change_form(client: Any, upstream: Upstream, **overrides: Any) -> dict[str, Any]:
    """What the upstream's page posts when saved as it was shown (with ``overrides`` of its main fields)."""
    page = client.get(reverse("admin:tenants_upstream_change", args=[upstream.pk]))
    assert page.status_code == 200
    form = page.context["adminform"].form
    data: dict[str, Any] = {}
    for name, field in form.fields.items():
        if name == "tenant":
            continue
        value = form[name].value()
        if isinstance(field.widget, CheckboxInput):
            if value:
                data[name] = "on"
        else:
            data[name] = "" if value is None else field.widget.format_value(value) or ""
    items = form.items
    data.update({f"items-{k}": v for k, v in items.management_form.initial.items()})
    for number, item_form in enumerate(items.forms):
        initial = item_form.initial
        data[f"items-{number}-key"] = initial["key"]
        data[f"items-{number}-name"] = initial["name"]
        data[f"items-{number}-description"] = initial["description"]
        if initial["served"]:
            data[f"items-{number}-served"] = "on"
    data.update(overrides)
    return data


def item_field(data: dict[str, Any], key: str, field: str) -> str:
    [number] = [k.split("-")[1] for k, v in data.items() if k.endswith("-key") and v == key]
    return f"items-{number}-{field}"


@pytest.fixture
def added(admin_client: Any, tenant: Tenant, upstream: UpstreamServer) -> Upstream:
    with LOOPBACK_ALLOWED:
        response = admin_client.post(reverse("admin:tenants_upstream_add"), upstream_form(tenant, upstream.url))
    assert response.status_code == 302
    return Upstream.objects.get(tenant=tenant, name="docs")


def test_the_page_lists_every_mirrored_item_with_the_upstreams_values_beside_the_boxes(
    admin_client: Any, added: Upstream
) -> None:
    page = admin_client.get(reverse("admin:tenants_upstream_change", args=[added.pk])).content.decode()

    echo = Tool.objects.get(name="docs_echo")
    assert (
        f'<a href="{reverse("admin:tenants_tool_change", args=[echo.pk])}">served as <code>docs_echo</code></a>' in page
    )
    assert 'placeholder="docs_echo" aria-label="Name of echo"' in page
    for remote in ("greet", "notes://readme"):
        assert f"<code>{remote}</code>" in page
    assert "Refresh now" in page and "Test the connection" in page


@LOOPBACK_ALLOWED
def test_a_rename_and_a_description_typed_on_the_page_are_served_and_kept_by_a_refresh(
    admin_client: Any, added: Upstream, tenant: Tenant
) -> None:
    form = change_form(admin_client, added)
    form[item_field(form, "tools:echo", "name")] = "say"
    form[item_field(form, "prompts:greet", "description")] = "Greets <b>someone</b>."

    response = admin_client.post(reverse("admin:tenants_upstream_change", args=[added.pk]), form, follow=True)

    assert "Items of docs: 0 added, 2 updated, 0 removed." in response.content.decode()
    assert Tool.objects.get(tenant=tenant, config__remote__name="echo").name == "say"
    refreshed = admin_client.post(reverse("admin:tenants_upstream_refresh", args=[added.pk]), follow=True)
    assert "Refreshed docs: 0 added, 0 updated, 0 removed." in refreshed.content.decode()
    assert Tool.objects.get(tenant=tenant, config__remote__name="echo").name == "say"
    assert tenant.prompts.get(name="docs_greet").description == "Greets <b>someone</b>."
    page = admin_client.get(reverse("admin:tenants_upstream_change", args=[added.pk])).content.decode()
    assert "Greets &lt;b&gt;someone&lt;/b&gt;." in page and "<b>someone</b>" not in page


@LOOPBACK_ALLOWED
def test_a_rename_on_the_page_is_a_version_by_its_admin_and_restoring_the_first_undoes_it(
    admin_client: Any, added: Upstream, tenant: Tenant
) -> None:
    form = change_form(admin_client, added)
    form[item_field(form, "tools:echo", "name")] = "say"
    admin_client.post(reverse("admin:tenants_upstream_change", args=[added.pk]), form)
    history = admin_client.get(reverse("admin:tenants_upstream_history", args=[added.pk]))
    versions = history.context["versions"]
    assert [(v["changed"], v["who"]) for v in versions] == [("Overrides", "admin"), ("Created", "admin")]

    restored = admin_client.post(versions[-1]["url"], follow=True)

    assert "Restored upstream docs to version 1" in restored.content.decode()
    assert "Refreshed docs" in restored.content.decode(), "refreshed at once, as after a save"
    assert Tool.objects.get(tenant=tenant, config__remote__name="echo").name == "docs_echo"
    added.refresh_from_db()
    assert added.overrides == {}


@LOOPBACK_ALLOWED
def test_a_taken_name_is_refused_on_its_row_keeping_everything_typed(
    admin_client: Any, added: Upstream, tenant: Tenant
) -> None:
    form = change_form(admin_client, added)
    form[item_field(form, "tools:echo", "name")] = "docs_fail"
    form[item_field(form, "prompts:greet", "description")] = "Typed, and kept."

    response = admin_client.post(reverse("admin:tenants_upstream_change", args=[added.pk]), form)

    assert response.status_code == 200
    page = response.content.decode()
    assert "The name &#x27;docs_fail&#x27; is taken by the tool &#x27;docs_fail&#x27; of this upstream" in page
    assert 'value="docs_fail"' in page and "Typed, and kept." in page
    added.refresh_from_db()
    assert added.overrides == {} and tenant.tools.filter(name="docs_echo").exists()


@LOOPBACK_ALLOWED
def test_an_item_left_out_goes_and_comes_back_when_served_again(
    admin_client: Any, added: Upstream, tenant: Tenant
) -> None:
    form = change_form(admin_client, added)
    del form[item_field(form, "tools:echo", "served")]
    admin_client.post(reverse("admin:tenants_upstream_change", args=[added.pk]), form)
    assert not tenant.tools.filter(name="docs_echo").exists()
    added.refresh_from_db()
    assert added.excluded == ["tools:echo"]

    form = change_form(admin_client, added)
    form[item_field(form, "tools:echo", "served")] = "on"
    response = admin_client.post(reverse("admin:tenants_upstream_change", args=[added.pk]), form, follow=True)

    assert "Refreshed docs: 1 added, 0 updated, 0 removed." in response.content.decode()
    assert tenant.tools.filter(name="docs_echo").exists()


@LOOPBACK_ALLOWED
def test_the_test_button_reports_the_connection_and_a_dead_upstream_turns_red(
    admin_client: Any, added: Upstream, upstream: UpstreamServer
) -> None:
    test_url = reverse("admin:tenants_upstream_test", args=[added.pk])
    assert admin_client.get(test_url).status_code == 405

    page = admin_client.post(test_url, follow=True).content.decode()
    assert re.search(r"Test of docs: connected over Streamable HTTP, protocol 2026-07-28, round trip \d+ ms\.", page)

    try:
        upstream.kill()
        page = admin_client.post(test_url, follow=True).content.decode()
    finally:
        upstream.start()
    assert "Test of docs failed: upstream &#x27;docs&#x27;:" in page
    assert '<span class="upstream-health upstream-health-failing">Failing</span>' in page
    added.refresh_from_db()
    assert added.consecutive_failures == 1 and added.last_error.startswith("upstream 'docs':")


@LOOPBACK_ALLOWED
def test_a_resources_description_taken_back_is_the_upstreams_again(
    admin_client: Any, added: Upstream, tenant: Tenant
) -> None:
    change = reverse("admin:tenants_upstream_change", args=[added.pk])
    form = change_form(admin_client, added)
    form[item_field(form, "resources:notes://readme", "description")] = "Ours."
    admin_client.post(change, form)
    assert tenant.resources.get(uri="notes://readme").description == "Ours."

    form = change_form(admin_client, added)
    assert form[item_field(form, "resources:notes://readme", "description")] == "Ours."
    form[item_field(form, "resources:notes://readme", "description")] = ""
    admin_client.post(change, form)

    assert tenant.resources.get(uri="notes://readme").description == "The readme."

"""Restoring a version goes back through the services: their validation runs, clients hear ``list_changed``, and the
restore is itself the newest version. A version that cannot go back (a secret it names is gone, its kind is changed
only by importing again, it is the current one) is refused with the reason, and nothing changes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from reversion.models import Version

from tenants import services
from tenants.federation.mirror import mirror_apply
from tenants.federation.services import upstream_items_update, upstream_update
from tenants.history.restore import restore_plan, version_restore
from tenants.models import OpenApiSource, Server, Tenant, Tool, Upstream
from tenants.openapi.document import document_parse
from tenants.openapi.importing import openapi_import
from tenants.openapi.translate import ImportOptions
from tenants.secrets import secret_delete, secret_set
from tenants.servers import server_create, server_update
from tests.factories import UserFactory
from tests.tenants.federation.test_mirror import listing
from tests.tenants.openapi.test_openapi_import import LOCATION, petstore

pytestmark = pytest.mark.django_db

TEXT = {"content": [{"type": "text", "text": "hi"}]}
TOOLS_CHANGED = {"type": "catalog.changed", "kind": "tools"}


def versions_of(model: type[Any], pk: Any) -> list[Version]:
    return list(Version.objects.get_for_object_reference(model, pk).select_related("revision").order_by("pk"))


def http_tool(tenant: Tenant, secret: str) -> Tool:
    config = {"method": "GET", "url": "https://api.example/", "auth": {"type": "bearer", "secret": secret}}
    return services.tool_create(tenant=tenant, name="call", backend="http", config=config)


def test_a_restore_goes_through_the_services_and_is_the_newest_version(
    tenant: Tenant, listen: Any, django_capture_on_commit_callbacks: Any
) -> None:
    tool = services.tool_create(tenant=tenant, name="weather", description="Sunny.", config=TEXT)
    services.tool_update(tool=tool, data={"description": "Rainy.", "input_schema": {"type": "object", "x": 1}})
    first = versions_of(Tool, tool.pk)[0]
    listener = listen(tenant)
    alice = UserFactory(username="alice")

    with django_capture_on_commit_callbacks(execute=True):
        version_restore(version=first, user=alice)

    tool.refresh_from_db()
    assert (tool.description, tool.input_schema) == ("Sunny.", {"type": "object"})
    assert listener.receive() == TOOLS_CHANGED
    newest = versions_of(Tool, tool.pk)[-1]
    assert len(versions_of(Tool, tool.pk)) == 3
    assert newest.revision.user == alice
    assert newest.revision.comment.startswith("Restored tool weather to version 1 of ")
    assert newest.revision.comment.endswith("(description, input schema)")


def test_a_version_whose_secret_is_gone_is_refused_and_nothing_changes(tenant: Tenant) -> None:
    secret_set(tenant=tenant, name="old-key", value="one")
    secret_set(tenant=tenant, name="new-key", value="two")
    tool = http_tool(tenant, "old-key")
    services.tool_update(tool=tool, data={"config": {**tool.config, "auth": {"type": "bearer", "secret": "new-key"}}})
    secret_delete(tenant=tenant, name="old-key")
    first = versions_of(Tool, tool.pk)[0]

    with pytest.raises(ValidationError) as refused:
        version_restore(version=first)

    assert refused.value.messages == [
        "This version uses the secret 'old-key', which acme no longer has: add it under Secrets first (with its "
        "value), then restore. Nothing was changed."
    ]
    assert Tool.objects.get(pk=tool.pk).config["auth"]["secret"] == "new-key"
    assert len(versions_of(Tool, tool.pk)) == 2


def test_values_the_services_refuse_are_refused_and_nothing_changes(tenant: Tenant) -> None:
    tool = services.tool_create(tenant=tenant, name="weather", config=TEXT)
    services.tool_update(tool=tool, data={"name": "forecast"})
    services.tool_create(tenant=tenant, name="weather", config=TEXT)  # the first version's name is taken now
    first = versions_of(Tool, tool.pk)[0]

    with pytest.raises(ValidationError):
        version_restore(version=first)

    assert Tool.objects.get(pk=tool.pk).name == "forecast"
    assert len(versions_of(Tool, tool.pk)) == 2


def test_the_current_version_is_not_restored_again(tenant: Tenant) -> None:
    tool = services.tool_create(tenant=tenant, name="weather", config=TEXT)

    plan = restore_plan(version=versions_of(Tool, tool.pk)[0])

    assert plan.problem == "This version is the current one: there is nothing to restore."
    assert plan.changes == []


def test_a_deleted_tool_is_recovered_from_its_last_version(tenant: Tenant) -> None:
    tool = services.tool_create(tenant=tenant, name="weather", description="Sunny.", config=TEXT)
    pk = tool.pk
    services.tool_delete(tool=tool)
    last = versions_of(Tool, pk)[-1]

    recovered = version_restore(version=last)

    assert isinstance(recovered, Tool) and recovered.pk != pk
    assert (recovered.name, recovered.description) == ("weather", "Sunny.")
    first, newest = versions_of(Tool, recovered.pk)
    assert first == last, "its history goes on where it stopped"
    assert newest.revision.comment.startswith("Recovered tool weather to version 1 of ")
    assert not Version.objects.get_deleted(Tool).exists()


def test_an_imported_tool_is_brought_back_by_importing_again_not_from_its_history(tenant: Tenant) -> None:
    document = document_parse(json.dumps(petstore()).encode(), location=LOCATION)
    openapi_import(tenant=tenant, document=document, options=ImportOptions())
    tool = Tool.objects.get(name="listPets")
    pk = tool.pk
    tool.delete()

    plan = restore_plan(version=versions_of(Tool, pk)[-1])
    source_plan = restore_plan(version=Version.objects.get_for_model(OpenApiSource).get())

    assert plan.problem == "This tool was made by an OpenAPI import: import its source again to bring it back."
    assert source_plan.problem.startswith("A source changes by importing it again")


def test_an_upstreams_overrides_and_settings_are_restored_without_connecting(tenant: Tenant) -> None:
    upstream = Upstream.objects.create(tenant=tenant, name="up", url="https://up.example/mcp", prefix="up_")
    mirror_apply(upstream=upstream, listing=listing())
    upstream_items_update(upstream=upstream, excluded=[], overrides={"tools:echo": {"name": "say"}})
    upstream_items_update(upstream=upstream, excluded=["tools:weather"], overrides={"tools:echo": {"name": "shout"}})
    upstream_update(upstream=upstream, data={"url": "https://elsewhere.example/mcp"})
    first = versions_of(Upstream, upstream.pk)[0]

    version_restore(version=first)

    upstream.refresh_from_db()
    assert (upstream.url, upstream.excluded) == ("https://up.example/mcp", [])
    assert upstream.overrides == {"tools:echo": {"name": "say"}}
    assert set(Tool.objects.filter(upstream=upstream).values_list("name", flat=True)) == {"say"}, (
        "weather comes back at the next refresh, which reads it from the upstream"
    )


def test_a_tenants_settings_are_restored(tenant: Tenant) -> None:
    services.tenant_update(tenant=tenant, data={"instructions": "Be brief."})
    services.tenant_update(tenant=tenant, data={"instructions": "Be thorough.", "cache_ttl_ms": 1000})
    first = versions_of(Tenant, tenant.pk)[0]

    version_restore(version=first)

    tenant.refresh_from_db()
    assert (tenant.instructions, tenant.cache_ttl_ms) == ("Be brief.", None)


def test_a_server_edited_twice_is_restored_to_its_first_version_through_its_services(
    tenant: Tenant, django_capture_on_commit_callbacks: Any
) -> None:
    upstream = Upstream.objects.create(tenant=tenant, name="up", url="https://up.example/mcp", enabled=False)
    server = server_create(tenant=tenant, slug="reader", title="Reader", selection=[f"upstream:{upstream.pk}"])
    server_update(server=server, data={"title": "Readers", "selection": ["tools:search"]})
    server_update(server=server, data={"enabled": False})
    first = versions_of(Server, server.pk)[0]

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        version_restore(version=first)

    server.refresh_from_db()
    assert (server.title, server.selection, server.enabled) == ("Reader", [f"upstream:{upstream.pk}"], True)
    assert callbacks, "the servers' caches and streams are told, as after any change"
    assert versions_of(Server, server.pk)[-1].revision.comment.startswith("Restored server reader to version 1 of ")
    server_update(server=server, data={"selection": []})
    gone = upstream.pk
    upstream.delete()
    with pytest.raises(ValidationError) as refused:
        version_restore(version=first)
    assert refused.value.messages == [f"upstream:{gone} is no source of this tenant."]
    server.refresh_from_db()
    assert server.selection == [], "nothing changed"

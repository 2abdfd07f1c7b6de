"""Every path that changes a tenant's catalog leaves versions, grouped into one revision per change with who and
what: the services on their own, an outer ``catalog_revision`` around several of them, an OpenAPI import, a built-in
catalog load, a server's services. What must not flood the history does not: an upstream's mirrored rows, a write
that failed, a row saved as it was."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from reversion.models import Revision, Version

from tenants import services
from tenants.federation.mirror import mirror_apply
from tenants.federation.services import upstream_items_update
from tenants.history.models import RevisionTenant
from tenants.history.revisions import catalog_revision, history_record, revision_comment
from tenants.models import OpenApiSource, Prompt, Resource, ResourceTemplate, Secret, Server, Tenant, Tool, Upstream
from tenants.openapi.document import document_parse
from tenants.openapi.importing import openapi_import
from tenants.openapi.translate import ImportOptions
from tenants.secrets import secret_set
from tenants.servers import server_create, server_delete, server_update
from tests.factories import UserFactory
from tests.tenants.federation.test_mirror import listing
from tests.tenants.openapi.test_openapi_import import LOCATION, petstore

pytestmark = pytest.mark.django_db

TEXT = {"content": [{"type": "text", "text": "hi"}]}


def versions_of(obj: Any) -> list[Version]:
    return list(Version.objects.get_for_object(obj).select_related("revision").order_by("pk"))


def test_each_service_call_is_a_revision_saying_what_it_did(tenant: Tenant) -> None:
    tool = services.tool_create(tenant=tenant, name="weather", description="Sunny.", config=TEXT)
    services.tool_update(tool=tool, data={"description": "Rainy.", "title": "Weather"})
    services.tool_update(tool=tool, data={"description": "Rainy."})  # changed nothing: no version

    first, second = versions_of(tool)
    assert first.revision.comment == "Added tool weather"
    assert second.revision.comment == "Changed tool weather: description, title"
    assert second.field_dict["description"] == "Rainy."
    assert first.revision.user is None, "no person: a command or the shell"
    assert list(RevisionTenant.objects.filter(revision=second.revision).values_list("tenant", flat=True)) == [tenant.pk]


def test_an_outer_revision_groups_the_services_inside_with_its_person_and_comment(tenant: Tenant) -> None:
    alice = UserFactory(username="alice")
    with catalog_revision(user=alice, comment="Applied acme.yaml"):
        tool = services.tool_create(tenant=tenant, name="weather", config=TEXT)
        services.tool_update(tool=tool, data={"description": "Sunny."})
        resource = services.resource_create(tenant=tenant, uri="notes://a", name="a", text="A")

    [revision] = Revision.objects.all()
    assert (revision.user, revision.comment) == (alice, "Applied acme.yaml")
    assert {v.object_id for v in revision.version_set.all()} == {str(tool.pk), str(resource.pk)}
    assert versions_of(tool)[0].field_dict["description"] == "Sunny.", "the row as the change left it"


def test_without_a_comment_the_notes_of_the_services_are_the_comment(tenant: Tenant) -> None:
    with catalog_revision():
        services.tool_create(tenant=tenant, name="a", config=TEXT)
        services.tool_create(tenant=tenant, name="b", config=TEXT)

    assert Revision.objects.get().comment == "Added tool a; Added tool b"
    long = revision_comment("", [f"Added tool t{n:03d}" for n in range(100)])
    listed = long.count("Added tool")
    assert len(long) <= 500 and long.endswith(f"; and {100 - listed} more") and listed > 20


def test_a_refused_change_leaves_no_version(tenant: Tenant) -> None:
    tool = services.tool_create(tenant=tenant, name="weather", config=TEXT)
    with pytest.raises(ValidationError):
        services.tool_update(tool=tool, data={"input_schema": {"type": "array"}})

    def half_an_apply() -> None:
        with catalog_revision(comment="half an apply"):
            services.tool_update(tool=tool, data={"description": "Changed."})
            services.tool_create(tenant=tenant, name="weather", config=TEXT)  # the name is taken

    with pytest.raises(ValidationError):
        half_an_apply()

    assert len(versions_of(tool)) == 1
    assert Tool.objects.get(pk=tool.pk).description == ""


def test_an_upstream_refresh_adds_no_version_of_its_mirrored_rows(tenant: Tenant) -> None:
    upstream = Upstream.objects.create(tenant=tenant, name="up", url="https://up.example/mcp", prefix="up_")
    with catalog_revision():
        mirror_apply(upstream=upstream, listing=listing())
    mirror_apply(upstream=upstream, listing=listing(tools=[]))

    assert Tool.objects.filter(upstream=upstream).count() == 0
    assert not Version.objects.exists()
    mirror_apply(upstream=upstream, listing=listing())
    upstream_items_update(upstream=upstream, excluded=["tools:weather"], overrides={"tools:echo": {"name": "say"}})

    [version] = versions_of(upstream)
    assert version.field_dict["overrides"] == {"tools:echo": {"name": "say"}}
    assert version.field_dict["excluded"] == ["tools:weather"]
    assert version.revision.comment == "Changed upstream up: excluded, overrides"
    assert Version.objects.count() == 1, "the renamed and removed mirrored tools are not versioned"


def test_an_upstreams_health_is_not_versioned(tenant: Tenant) -> None:
    upstream = Upstream.objects.create(tenant=tenant, name="up", url="https://up.example/mcp")
    with catalog_revision():
        upstream.save()
        upstream.last_error, upstream.consecutive_failures = "refused", 3
        upstream.save()

    [version] = versions_of(upstream)
    assert "last_error" not in version.field_dict and "consecutive_failures" not in version.field_dict


def test_an_openapi_import_is_one_revision_of_the_source_and_its_tools(tenant: Tenant) -> None:
    def run(data: dict[str, Any]) -> None:
        document = document_parse(json.dumps(data).encode(), location=LOCATION)
        openapi_import(tenant=tenant, document=document, options=ImportOptions(prefix="pets_"))

    run(petstore())
    run(petstore(**{"paths|/pets|get|summary": "List every pet"}))

    first, second = Revision.objects.order_by("pk")
    tools = Tool.objects.filter(tenant=tenant).count()
    source = OpenApiSource.objects.get()
    assert first.version_set.count() == tools + 1
    assert first.comment.startswith(f"Imported OpenAPI source {source.name}: {tools} created")
    assert sorted(v.object_repr for v in second.version_set.all()) == [source.name, "pets_listPets"]
    assert first.comment.endswith("(system)")


def test_a_built_in_catalog_load_is_one_revision_and_a_reload_that_changes_nothing_adds_none() -> None:
    call_command("load_demo_tenant", verbosity=0)
    call_command("load_demo_tenant", verbosity=0)

    [revision] = Revision.objects.all()
    demo = Tenant.objects.get(slug="demo")
    items = sum(model.objects.filter(tenant=demo).count() for model in (Tool, Resource, ResourceTemplate, Prompt))
    assert revision.comment == "Loaded the built-in catalog demo"
    assert revision.version_set.count() == items + 1, "the tenant's settings and each of its items"


def test_secrets_are_never_versioned(tenant: Tenant) -> None:
    with catalog_revision():
        secret_set(tenant=tenant, name="api-key", value="s3cr3t-value")
        services.tool_create(
            tenant=tenant,
            name="call",
            backend="http",
            config={"method": "GET", "url": "https://api.example/", "auth": {"type": "bearer", "secret": "api-key"}},
        )

    assert Secret.objects.count() == 1
    assert not Version.objects.filter(serialized_data__contains="s3cr3t").exists()
    assert [v.object_repr for v in Version.objects.all()] == ["call"]


def test_deleting_a_tenant_deletes_its_history(tenant: Tenant, other_tenant: Tenant) -> None:
    services.tool_create(tenant=tenant, name="ours", config=TEXT)
    services.tool_create(tenant=other_tenant, name="theirs", config=TEXT)
    services.tenant_update(tenant=tenant, data={"instructions": "Be brief."})

    services.tenant_delete(tenant=tenant)

    assert [v.object_repr for v in Version.objects.all()] == ["theirs"]
    assert Revision.objects.count() == 1


def test_a_servers_changes_are_revisions_saying_what_changed(tenant: Tenant) -> None:
    server = server_create(tenant=tenant, slug="reader", selection=["tag:read-only"])
    server_update(server=server, data={"title": "Reader", "selection": ["tag:read-only", "tools:search"]})
    server_update(server=server, data={"title": "Reader"})  # changed nothing: no version

    first, second = versions_of(server)
    assert first.revision.comment == "Added server reader"
    assert second.revision.comment == "Changed server reader: selection, title"
    assert second.field_dict["selection"] == ["tag:read-only", "tools:search"]
    server_delete(server=server)
    assert [v.object_repr for v in Version.objects.get_deleted(Server)] == ["reader"], "it can be recovered"


def test_a_row_saved_unchanged_adds_no_version_but_a_decision_recorded_on_it_does(tenant: Tenant) -> None:
    upstream = Upstream.objects.create(tenant=tenant, name="up", url="https://up.example/mcp")
    with catalog_revision():
        upstream.save()
    with catalog_revision():
        upstream.save()  # its kept fields as the last version has them
    assert len(versions_of(upstream)) == 1

    with catalog_revision(comment="Approved held changes of upstream up: weather (changed definition)"):
        history_record(upstream, always=True)

    assert [v.revision.comment for v in versions_of(upstream)][1:] == [
        "Approved held changes of upstream up: weather (changed definition)"
    ]

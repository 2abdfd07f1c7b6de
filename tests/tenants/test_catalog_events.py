"""Catalog writes nudge the tenant's channel-layer group, only once the transaction has committed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import BaseChannelLayer
from django.db import transaction

from tenants import events, services
from tenants.models import Tenant
from tests.factories import PromptFactory, ResourceFactory, ToolFactory

TEXT_RESULT = {"content": [{"type": "text", "text": "hi"}], "isError": False}
TOOLS_CHANGED = {"type": "catalog.changed", "kind": "tools"}
RESOURCES_CHANGED = {"type": "catalog.changed", "kind": "resources"}


def test_catalog_group_is_scoped_by_tenant() -> None:
    assert events.catalog_group(42) == "catalog.42"


@pytest.mark.django_db
def test_tool_create_publishes_only_after_commit(
    tenant: Tenant, listen: Any, django_capture_on_commit_callbacks: Any
) -> None:
    listener = listen(tenant)

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        services.tool_create(tenant=tenant, name="t", config=TEXT_RESULT)
    assert listener.nothing_pending()

    for callback in callbacks:
        callback()

    assert listener.receive() == TOOLS_CHANGED
    assert listener.nothing_pending()


@pytest.mark.django_db
def test_rolled_back_write_publishes_nothing(
    tenant: Tenant, listen: Any, django_capture_on_commit_callbacks: Any
) -> None:
    listener = listen(tenant)

    def create_then_abort() -> None:
        with transaction.atomic():
            services.tool_create(tenant=tenant, name="t", config=TEXT_RESULT)
            raise RuntimeError("abort")

    with django_capture_on_commit_callbacks(execute=True) as callbacks, pytest.raises(RuntimeError):
        create_then_abort()

    assert callbacks == []
    assert listener.nothing_pending()


@pytest.mark.django_db
def test_other_tenants_hear_nothing(
    tenant: Tenant, other_tenant: Tenant, listen: Any, django_capture_on_commit_callbacks: Any
) -> None:
    ours, theirs = listen(tenant), listen(other_tenant)

    with django_capture_on_commit_callbacks(execute=True):
        services.tool_create(tenant=tenant, name="t", config=TEXT_RESULT)

    assert ours.receive() == TOOLS_CHANGED
    assert theirs.nothing_pending()


@pytest.mark.django_db
def test_each_kind_of_entry_names_its_list(
    tenant: Tenant, listen: Any, django_capture_on_commit_callbacks: Any
) -> None:
    listener = listen(tenant)

    with django_capture_on_commit_callbacks(execute=True):
        services.resource_create(tenant=tenant, uri="docs://a", name="a", text="x")
        services.resource_template_create(tenant=tenant, name="t", uri_template="docs://{p}", config={"text": "{p}"})
        services.prompt_create(
            tenant=tenant, name="p", messages=[{"role": "user", "content": {"type": "text", "text": "x"}}]
        )

    assert [listener.receive() for _ in range(3)] == [
        RESOURCES_CHANGED,
        RESOURCES_CHANGED,
        {"type": "catalog.changed", "kind": "prompts"},
    ]


@pytest.mark.django_db
def test_resource_content_change_tells_subscribers_not_the_list(
    tenant: Tenant, listen: Any, django_capture_on_commit_callbacks: Any
) -> None:
    resource = ResourceFactory(tenant=tenant, uri="docs://a", text="old")
    listener = listen(tenant)

    with django_capture_on_commit_callbacks(execute=True):
        services.resource_update(resource=resource, data={"text": "new"})

    assert listener.receive() == {"type": "resource.updated", "uri": "docs://a"}
    assert listener.nothing_pending()


@pytest.mark.django_db
def test_resource_title_change_is_a_list_change(
    tenant: Tenant, listen: Any, django_capture_on_commit_callbacks: Any
) -> None:
    resource = ResourceFactory(tenant=tenant)
    listener = listen(tenant)

    with django_capture_on_commit_callbacks(execute=True):
        services.resource_update(resource=resource, data={"title": "Renamed"})

    assert listener.receive() == RESOURCES_CHANGED
    assert listener.nothing_pending()


@pytest.mark.django_db
def test_changes_invisible_in_lists_publish_nothing(
    tenant: Tenant, listen: Any, django_capture_on_commit_callbacks: Any
) -> None:
    tool = ToolFactory(tenant=tenant, description="same")
    prompt = PromptFactory(tenant=tenant)
    listener = listen(tenant)

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        services.tool_update(tool=tool, data={"description": "same"})
        services.tool_update(tool=tool, data={"config": {"content": [], "isError": False}})
        services.prompt_update(prompt=prompt, data={"completions": {"topic": ["x"]}})

    assert callbacks == []
    assert listener.nothing_pending()


@pytest.mark.django_db
def test_tool_delete_publishes(tenant: Tenant, listen: Any, django_capture_on_commit_callbacks: Any) -> None:
    tool = ToolFactory(tenant=tenant)
    listener = listen(tenant)

    with django_capture_on_commit_callbacks(execute=True):
        services.tool_delete(tool=tool)

    assert listener.receive() == TOOLS_CHANGED


@pytest.mark.django_db(transaction=True)
def test_publishing_from_a_running_event_loop_schedules_the_send(
    channel_layer: BaseChannelLayer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only code allowed to touch the ORM inside a loop reaches on_commit there; it must not block the loop.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

    async def scenario() -> dict[str, Any]:
        channel = await channel_layer.new_channel()
        await channel_layer.group_add(events.catalog_group(7), channel)
        events.catalog_changed(tenant_id=7, kind="prompts")
        return await asyncio.wait_for(channel_layer.receive(channel), 2)

    assert async_to_sync(scenario)() == {"type": "catalog.changed", "kind": "prompts", "group": "catalog.7"}


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown catalog kind 'widgets'"):
        events.catalog_changed(tenant_id=1, kind="widgets")  # type: ignore[arg-type]

"""The tenant's overrides of an upstream's items (``upstream_items_update``): names and descriptions served instead
of the upstream's and kept by every refresh, items left out and served again, and names refused when they break the
catalog's rule or are taken."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError

from tenants import services
from tenants.federation.mirror import mirror_apply
from tenants.federation.overrides import upstream_items
from tenants.federation.services import upstream_items_update
from tenants.models import Prompt, Resource, Tenant, Tool, Upstream
from tests.tenants.federation.test_mirror import listing, tool

pytestmark = pytest.mark.django_db

TOOLS_CHANGED = {"type": "catalog.changed", "kind": "tools"}


@pytest.fixture
def upstream(tenant: Tenant) -> Upstream:
    stored = Upstream.objects.create(tenant=tenant, name="up", url="https://up.example/mcp", prefix="up_")
    mirror_apply(upstream=stored, listing=listing())
    return stored


def test_a_rename_and_a_description_apply_at_once_and_survive_refreshes(
    upstream: Upstream, listen: Any, django_capture_on_commit_callbacks: Any
) -> None:
    listener = listen(upstream.tenant)
    with django_capture_on_commit_callbacks(execute=True):
        report = upstream_items_update(
            upstream=upstream,
            excluded=[],
            overrides={
                "tools:echo": {"name": "say", "description": "Ours."},
                "resources:notes://readme": {"description": "Our notes."},
                "prompts:greet": {"name": "", "description": ""},  # empty: follows the upstream, not stored
            },
        )

    assert (report.created, report.updated, report.removed) == (0, 2, 0)
    assert listener.receive() == TOOLS_CHANGED, "clients hear of the new name"
    upstream.refresh_from_db()
    assert upstream.overrides == {
        "tools:echo": {"name": "say", "description": "Ours."},
        "resources:notes://readme": {"description": "Our notes."},
    }
    assert Tool.objects.get(upstream=upstream, name="say").description == "Ours."
    changed = listing(tools=[tool("echo", "Say it back, louder."), tool("weather", "Hourly now.")])
    mirror_apply(upstream=upstream, listing=changed)
    mirror_apply(upstream=upstream, listing=changed)

    say = Tool.objects.get(upstream=upstream, config__remote__name="echo")
    assert (say.name, say.description) == ("say", "Ours.")
    assert say.config["remote"]["description"] == "Say it back, louder.", "the upstream's definition is kept"
    assert Tool.objects.get(name="up_weather").description == "Hourly now."
    assert Resource.objects.get(uri="notes://readme").description == "Our notes."


def test_an_emptied_override_and_an_edit_on_the_items_page_follow_the_upstream_again(upstream: Upstream) -> None:
    upstream_items_update(upstream=upstream, excluded=[], overrides={"tools:echo": {"name": "say"}})
    services.tool_update(tool=Tool.objects.get(name="up_weather"), data={"description": "Edited on its page."})
    [weather] = [item for item in upstream_items(upstream) if item.remote == "weather"]
    assert (weather.description, weather.default_description) == ("Edited on its page.", "The weather.")

    upstream_items_update(upstream=upstream, excluded=[], overrides={})

    assert Tool.objects.get(config__remote__name="echo").name == "up_echo"
    assert Tool.objects.get(name="up_weather").description == "The weather."


def test_a_left_out_item_goes_keeping_its_override_and_comes_back_under_it(upstream: Upstream) -> None:
    upstream_items_update(upstream=upstream, excluded=["tools:echo"], overrides={"tools:echo": {"name": "say"}})

    assert not Tool.objects.filter(config__remote__name="echo").exists()
    left_out = [item for item in upstream_items(upstream) if not item.served]
    assert [(item.kind, item.remote, item.override_name) for item in left_out] == [("tools", "echo", "say")]

    upstream_items_update(upstream=upstream, excluded=[], overrides=upstream.overrides)
    mirror_apply(upstream=upstream, listing=listing())  # the refresh that brings it back

    assert Tool.objects.get(config__remote__name="echo").name == "say"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"tools:echo": {"name": "two words"}}, "no spaces"),
        ({"tools:echo": {"name": "x" * 129}}, "at most 128 characters"),
        ({"tools:echo": {"name": "mine"}}, "'mine' is taken by the tool 'mine' of this tenant"),
        ({"tools:echo": {"name": "up_weather"}}, "taken by the tool 'up_weather' of this upstream"),
        ({"tools:echo": {"name": "same"}, "tools:weather": {"name": "same"}}, "also the new name of 'echo'"),
        ({"prompts:greet": {"name": "theirs_greet"}}, "the prompt 'theirs_greet' of the upstream 'theirs'"),
        ({"tools:echo": {"title": "Nope"}}, "a name and a description, nothing else"),
        ({"nonsense": {"name": "x"}}, 'as "tools:<name>"'),
    ],
)
def test_a_name_that_breaks_the_rule_or_is_taken_is_refused_and_nothing_changes(
    upstream: Upstream, tenant: Tenant, overrides: dict[str, Any], message: str
) -> None:
    services.tool_create(tenant=tenant, name="mine", backend="static", config={"content": []})
    theirs = Upstream.objects.create(tenant=tenant, name="theirs", url="https://theirs.example/mcp", prefix="theirs_")
    mirror_apply(upstream=theirs, listing=listing())

    with pytest.raises(ValidationError) as refused:
        upstream_items_update(upstream=upstream, excluded=[], overrides=overrides)

    assert message in " ".join(refused.value.messages)
    upstream.refresh_from_db()
    assert upstream.overrides == {}
    assert Tool.objects.filter(upstream=upstream, name="up_echo").exists()
    assert Prompt.objects.filter(upstream=upstream, name="up_greet").exists()


def test_a_left_out_item_may_keep_a_name_another_item_now_holds(upstream: Upstream) -> None:
    upstream_items_update(
        upstream=upstream,
        excluded=["tools:echo"],
        overrides={"tools:echo": {"name": "up_weather"}},
    )

    assert Tool.objects.get(name="up_weather").config["remote"]["name"] == "weather"

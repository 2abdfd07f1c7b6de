"""Prompt backends: static prompts fill in stored messages, Python prompts run a registered function with the
same context tools get; both are stored, validated and rendered through the services and ``TenantCatalog``."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.core.exceptions import ValidationError

from mcp_core.context import ToolContext
from mcp_core.env import Env, ServerIdentity
from mcp_core.features.prompts import get_prompt
from tenants import services
from tenants.backends.python_grants import python_functions_grant
from tenants.backends.registry import python_prompt
from tenants.catalog import TenantCatalog
from tenants.models import Backend, Prompt, Tenant
from tests.support import RecordingOutbound

pytestmark = pytest.mark.django_db

seen_arguments: list[dict[str, str]] = []


@python_prompt("tests.tenants.brief")
async def brief(ctx: ToolContext, topic: str, tone: str = "plain") -> str:
    seen_arguments.append({"topic": topic, "tone": tone})
    await ctx.report_progress(1, 1, "rendered")
    return f"Brief me on {topic}, {tone}."


@python_prompt("tests.tenants.ask_audience")
async def ask_audience(ctx: ToolContext) -> dict[str, Any]:
    answer = await ctx.elicit("Audience?", {"type": "object", "properties": {"who": {"type": "string"}}})
    who = answer["content"]["who"]
    return {"messages": [{"role": "assistant", "content": {"type": "text", "text": f"For {who}."}}], "description": who}


@python_prompt("tests.tenants.malformed")
async def malformed(ctx: ToolContext) -> Any:
    return [{"role": "system", "content": {"type": "text", "text": "x"}}]


@pytest.fixture(autouse=True)
def granted(tenant: Tenant, other_tenant: Tenant) -> None:
    """Staff allowed both tenants the test prompt functions (which functions a tenant may bind is tested in
    test_python_grants)."""
    for each in (tenant, other_tenant):
        python_functions_grant(
            tenant=each, functions=["tests.tenants.brief", "tests.tenants.ask_audience", "tests.tenants.malformed"]
        )


def python_prompt_create(tenant: Tenant, function: str, **fields: Any) -> Prompt:
    return services.prompt_create(
        tenant=tenant, name=fields.pop("name", "p"), backend=Backend.PYTHON, config={"function": function}, **fields
    )


def render(tenant: Tenant, name: str, arguments: dict[str, str], ctx: Any) -> dict[str, Any]:
    catalog = TenantCatalog(tenant)
    definition = async_to_sync(catalog.get_prompt)(name)
    assert definition is not None
    return async_to_sync(catalog.render_prompt)(definition, arguments, ctx)


def test_a_python_prompt_gets_the_declared_arguments_the_client_sent(tenant: Tenant, make_context: Any) -> None:
    python_prompt_create(
        tenant, "tests.tenants.brief", arguments=[{"name": "topic", "required": True}, {"name": "tone"}]
    )
    ctx, outbound = make_context(progress_token="p1")
    seen_arguments.clear()

    rendered = render(tenant, "p", {"topic": "owls", "undeclared": "dropped"}, ctx)

    assert rendered == {"messages": [{"role": "user", "content": {"type": "text", "text": "Brief me on owls, plain."}}]}
    assert seen_arguments == [{"topic": "owls", "tone": "plain"}]
    assert outbound.notifications == [
        ("notifications/progress", {"progressToken": "p1", "progress": 1, "total": 1, "message": "rendered"})
    ]


def test_a_python_prompt_asks_a_handshake_client_through_prompts_get(tenant: Tenant) -> None:
    python_prompt_create(tenant, "tests.tenants.ask_audience", description="Stored description")
    outbound = RecordingOutbound({"elicitation/create": {"action": "accept", "content": {"who": "pilots"}}})
    env = Env(
        version="2025-11-25",
        catalog=TenantCatalog(tenant),
        outbound=outbound,
        server=ServerIdentity("t", "1"),
        client_capabilities={"elicitation": {}},
    )

    result = async_to_sync(get_prompt)({"name": "p"}, env)

    assert [method for method, _ in outbound.requests] == ["elicitation/create"]
    assert result == {
        "messages": [{"role": "assistant", "content": {"type": "text", "text": "For pilots."}}],
        "description": "pilots",
    }


def test_a_malformed_return_names_the_function(tenant: Tenant, make_context: Any) -> None:
    python_prompt_create(tenant, "tests.tenants.malformed")
    ctx, _ = make_context()

    with pytest.raises(TypeError, match=r"'tests.tenants.malformed' returned a malformed prompt: messages\[0\].role"):
        render(tenant, "p", {}, ctx)


def test_static_prompts_render_their_stored_messages(tenant: Tenant) -> None:
    services.prompt_create(
        tenant=tenant,
        name="s",
        arguments=[{"name": "topic"}],
        messages=[{"role": "user", "content": {"type": "text", "text": "About {{topic}}"}}],
    )

    rendered = render(tenant, "s", {"topic": "owls"}, None)

    assert rendered == {"messages": [{"role": "user", "content": {"type": "text", "text": "About owls"}}]}
    assert Prompt.objects.get(name="s").backend == Backend.STATIC


def test_a_prompt_of_another_tenant_is_never_rendered(tenant: Tenant, other_tenant: Tenant, make_context: Any) -> None:
    python_prompt_create(other_tenant, "tests.tenants.brief", arguments=[{"name": "topic"}])
    theirs = async_to_sync(TenantCatalog(other_tenant).get_prompt)("p")
    assert theirs is not None
    ctx, _ = make_context()

    with pytest.raises(ValueError, match="does not belong to tenant 'acme'"):
        async_to_sync(TenantCatalog(tenant).render_prompt)(theirs, {"topic": "x"}, ctx)


@pytest.mark.parametrize(
    ("fields", "errors"),
    [
        (
            {"config": {}},
            {"config": ['A Python backend needs config {"function": "<registered name>"} and nothing else.']},
        ),
        (
            {"config": {"function": "demo.echo"}},
            {"config": ["No Python prompt function named 'demo.echo' is registered"]},
        ),
        (
            {
                "config": {"function": "tests.tenants.brief"},
                "messages": [{"role": "user", "content": {"type": "text", "text": "x"}}],
            },
            {"messages": ["A Python prompt's messages come from its function: leave them empty."]},
        ),
        ({"backend": "java", "config": {}}, {"backend": ["Value 'java' is not a valid choice."]}),
    ],
)
def test_python_prompts_are_validated_before_they_are_stored(
    tenant: Tenant, fields: dict[str, Any], errors: dict[str, list[str]]
) -> None:
    with pytest.raises(ValidationError) as caught:
        services.prompt_create(tenant=tenant, name="p", **{"backend": Backend.PYTHON, **fields})

    found = caught.value.message_dict
    for field, messages in errors.items():
        assert [m[: len(e)] for m, e in zip(found[field], messages, strict=True)] == messages
    assert not Prompt.objects.exists()


def test_switching_a_prompts_backend_does_not_change_the_list(
    tenant: Tenant, listen: Any, django_capture_on_commit_callbacks: Any
) -> None:
    prompt = services.prompt_create(
        tenant=tenant, name="p", messages=[{"role": "user", "content": {"type": "text", "text": "x"}}]
    )
    listener = listen(tenant)

    with django_capture_on_commit_callbacks(execute=True):
        services.prompt_update(
            prompt=prompt,
            data={"backend": Backend.PYTHON, "config": {"function": "tests.tenants.brief"}, "messages": []},
        )

    assert Prompt.objects.get(pk=prompt.pk).backend == Backend.PYTHON
    assert listener.nothing_pending()

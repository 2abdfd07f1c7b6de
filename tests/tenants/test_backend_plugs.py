"""The backend registry: every ``Backend`` choice has a backend, each backend checks its own configuration (taking a
good one, refusing a bad one with a message on the field at fault), the dispatcher finds backends only through the
registry, and the admin's catalog forms carry each backend's admin form.

The cases are built from ``Backend`` and what each backend says it serves: a new backend is tested here as soon as
it is registered, and ``GOOD_CONFIG`` must say what a working entry of it looks like.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db import models

from mcp_core.context import ToolContext
from tenants import backends, validation
from tenants.backends.base import PROMPTS, TEMPLATES, TOOLS, CatalogBackend
from tenants.backends.plugs import BACKENDS, UnknownBackend, admin_forms
from tenants.backends.python import PythonBackend
from tenants.backends.registry import PythonRegistry, python_prompt, python_resource_template, python_tool
from tenants.models import Backend, Prompt, PythonFunctionGrant, ResourceTemplate, Tenant, Tool, Upstream

JSONObject = dict[str, Any]
KINDS = (TOOLS, TEMPLATES, PROMPTS)
MODEL_OF_KIND: dict[str, type[models.Model]] = {TOOLS: Tool, TEMPLATES: ResourceTemplate, PROMPTS: Prompt}
MESSAGES = [{"role": "user", "content": {"type": "text", "text": "Hello."}}]


# The Python backend of these tests binds functions of their own registry, not the platform's.
functions = PythonRegistry()


@python_tool("tests.plugs.echo", registry=functions)
async def echo(ctx: ToolContext, text: str = "") -> str:
    return text


@python_resource_template("tests.plugs.page", registry=functions)
async def page(ctx: ToolContext, uri: str, n: str) -> list[JSONObject]:
    return [{"uri": uri, "text": n}]


@python_prompt("tests.plugs.brief", registry=functions)
async def brief(ctx: ToolContext) -> str:
    return "Brief."


@pytest.fixture(autouse=True)
def python_backend_of_these_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(BACKENDS, Backend.PYTHON, PythonBackend(functions))


# A configuration each backend takes, for each kind of entry it serves.
GOOD_CONFIG: dict[tuple[str, str], Any] = {
    (Backend.STATIC, TOOLS): {"content": [{"type": "text", "text": "fixed"}]},
    (Backend.STATIC, TEMPLATES): {"text": "page {n}"},
    (Backend.STATIC, PROMPTS): {},
    (Backend.PYTHON, TOOLS): {"function": "tests.plugs.echo"},
    (Backend.PYTHON, TEMPLATES): {"function": "tests.plugs.page"},
    (Backend.PYTHON, PROMPTS): {"function": "tests.plugs.brief"},
    (Backend.HTTP, TOOLS): {"url": "https://api.example/pets/{id}"},
    (Backend.UPSTREAM, TOOLS): {"remote": {"name": "fetch"}, "mirrored": {}},
    (Backend.UPSTREAM, TEMPLATES): {"remote": {"name": "page"}, "mirrored": {}},
    (Backend.UPSTREAM, PROMPTS): {"remote": {"name": "brief"}, "mirrored": {}},
}
# The messages a static prompt is made of; any other prompt's come from elsewhere and must be left empty.
PROMPT_MESSAGES: dict[str, list[JSONObject]] = {Backend.STATIC: MESSAGES}

SERVED = [(choice, kind) for choice in Backend.values for kind in KINDS if kind in BACKENDS[choice].serves]
NOT_SERVED = [(choice, kind) for choice in Backend.values for kind in KINDS if kind not in BACKENDS[choice].serves]


def _entry(tenant: Tenant, choice: str, kind: str, config: Any) -> models.Model:
    upstream = None
    if choice == Backend.UPSTREAM:  # mirrored entries name their upstream; made here without connecting to one
        upstream, _ = Upstream.objects.get_or_create(tenant=tenant, name="up", url="https://upstream.example/mcp")
    common = {"tenant": tenant, "backend": choice, "config": config, "upstream": upstream}
    if kind == TOOLS:
        return Tool(name="entry", input_schema={"type": "object", "properties": {"id": {"type": "string"}}}, **common)
    if kind == TEMPLATES:
        return ResourceTemplate(name="entry", uri_template="page://{n}", **common)
    return Prompt(name="entry", messages=PROMPT_MESSAGES.get(choice, []), **common)


def _errors(entry: models.Model) -> dict[str, list[str]]:
    validate = {
        Tool: validation.tool_validate,
        ResourceTemplate: validation.resource_template_validate,
        Prompt: validation.prompt_validate,
    }[type(entry)]
    try:
        validate(entry)  # type: ignore[operator]
    except ValidationError as exc:
        return exc.message_dict
    return {}


def test_every_backend_choice_has_one_backend_registered_under_it() -> None:
    assert set(BACKENDS) == set(Backend.values)
    for choice, backend in BACKENDS.items():
        assert isinstance(backend, CatalogBackend)
        assert backend.choice == choice
        assert backend.serves and set(backend.serves) <= set(KINDS)
    assert len({backend.title for backend in BACKENDS.values()}) == len(BACKENDS)


@pytest.mark.parametrize("choice", Backend.values)
def test_a_backend_implements_what_it_serves_and_nothing_else(choice: str) -> None:
    implementation = type(BACKENDS[choice])
    methods = {
        TOOLS: ("tool_invoke", "tool_config_errors"),
        TEMPLATES: ("template_read", "template_config_errors"),
        PROMPTS: ("prompt_render", "prompt_config_errors"),
    }
    for kind, names in methods.items():
        for name in names:
            overridden = getattr(implementation, name) is not getattr(CatalogBackend, name)
            assert overridden == (kind in BACKENDS[choice].serves), (choice, name)


@pytest.mark.django_db
@pytest.mark.parametrize(("choice", "kind"), SERVED)
def test_each_backend_takes_a_good_config_and_refuses_a_bad_one_on_the_config(
    tenant: Tenant, choice: str, kind: str
) -> None:
    for function in functions.names():
        PythonFunctionGrant.objects.create(tenant=tenant, function=function)
    assert _errors(_entry(tenant, choice, kind, GOOD_CONFIG[choice, kind])) == {}

    errors = _errors(_entry(tenant, choice, kind, "not an object"))

    assert set(errors) == {"config"}, errors
    for message in errors["config"]:
        assert message.endswith(".") and len(message) > 20, message


@pytest.mark.django_db
@pytest.mark.parametrize(("choice", "kind"), NOT_SERVED)
def test_an_entry_of_a_kind_its_backend_does_not_serve_is_refused_on_the_backend(
    tenant: Tenant, choice: str, kind: str
) -> None:
    backend = BACKENDS[choice]

    errors = _errors(_entry(tenant, choice, kind, {}))

    served = " and ".join(backend.serves)
    assert errors == {"backend": [f"The {backend.title} backend serves no {kind}: it is for {served}."]}


def test_a_template_of_a_backend_that_serves_none_is_not_read() -> None:
    template = ResourceTemplate(tenant_id=1, name="page", uri_template="page://{n}", backend=Backend.HTTP)

    with pytest.raises(ValueError, match="The HTTP backend serves no resource templates"):
        asyncio.run(backends.template_read(template, "page://1", {"n": "1"}, ctx=None))  # type: ignore[arg-type]


def test_an_entry_whose_backend_is_not_registered_is_not_run() -> None:
    tool = Tool(tenant_id=1, name="carried", backend="carrier-pigeon")
    prompt = Prompt(tenant_id=1, name="said", backend="smoke-signal")

    with pytest.raises(UnknownBackend, match="tool 'carried' has unknown backend 'carrier-pigeon'"):
        asyncio.run(backends.tool_invoke(tool, {}, ctx=None))  # type: ignore[arg-type]
    with pytest.raises(UnknownBackend, match="prompt 'said' has unknown backend 'smoke-signal'"):
        asyncio.run(backends.prompt_render(prompt, {}, ctx=None))  # type: ignore[arg-type]
    assert backends.tool_continues_as_task(tool) is False


def test_the_admin_catalog_forms_carry_each_backends_admin_form() -> None:
    forms = admin_forms()
    assert forms, "the Python backend's function select is an admin form"
    for model in (Tool, ResourceTemplate, Prompt):
        form = admin.site.get_model_admin(model).form
        for backend_form in forms:
            assert issubclass(form, backend_form), (model, backend_form)

"""The console's pages as people reach them: a tenant's owner or admin (by membership) runs the tenant's tools,
another tenant's tool is a 404 on every console URL, members and strangers have no console, POSTs need the CSRF
token, and oversized or malformed requests are refused before anything runs."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from mcp_platform.console.models import ConsoleRunRecord
from mcp_platform.console.runs import MAX_ARGUMENT_BYTES
from mcp_platform.quotas.services import rate_limit_create
from tenants.models import Membership, TaskSupport, Tool
from tests.factories import MembershipFactory, TenantFactory, ToolFactory, UserFactory

pytestmark = pytest.mark.django_db

VIEWS = ("console", "console_run", "console_answer", "console_cancel")
User = get_user_model()


@pytest.fixture(autouse=True)
def _fast_hashing(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def url(view: str, tool: Tool) -> str:
    return reverse(f"admin:tenants_tool_{view}", args=[tool.pk])


def signed_in(role: str, tool: Tool, *, enforce_csrf: bool = False) -> Client:
    membership = MembershipFactory(tenant=tool.tenant, role=role)
    client = Client(enforce_csrf_checks=enforce_csrf)
    client.force_login(membership.user)
    return client


def post_json(client: Client, target: str, body: Any, **extra: Any) -> Any:
    return client.post(target, json.dumps(body), content_type="application/json", **extra)


@pytest.mark.parametrize("role", [Membership.Role.OWNER, Membership.Role.ADMIN])
def test_an_owner_or_admin_opens_the_console_of_their_tenants_tool(role: str) -> None:
    tool = ToolFactory(input_schema={"type": "object", "properties": {"order": {"type": "string"}}})
    client = signed_in(role, tool)

    page = client.get(url("console", tool))

    assert page.status_code == 200
    config = page.context["console"]
    assert config["inputSchema"] == tool.input_schema
    assert config["urls"]["run"] == url("console_run", tool)
    assert 'id="console-config"' in page.content.decode()
    change = client.get(reverse("admin:tenants_tool_change", args=[tool.pk])).content.decode()
    assert url("console", tool) in change  # the tool's page links to it


@pytest.mark.parametrize("role", [Membership.Role.OWNER, Membership.Role.ADMIN])
def test_another_tenants_tool_is_a_404_on_every_console_url(role: str) -> None:
    ours = ToolFactory()
    theirs = ToolFactory(tenant=TenantFactory())
    client = signed_in(role, ours)

    for view in VIEWS:
        assert client.get(url(view, theirs)).status_code == 404, view
        assert post_json(client, url(view, theirs), {"arguments": {}, "runId": "x"}).status_code == 404, view
        assert client.get(reverse(f"admin:tenants_tool_{view}", args=[987654])).status_code == 404, view


def test_a_member_has_no_console() -> None:
    tool = ToolFactory()
    client = signed_in(Membership.Role.MEMBER, tool)

    for view in VIEWS:
        response = post_json(client, url(view, tool), {"arguments": {}, "runId": "x"})
        assert response.status_code == 302 and "/admin/login/" in response["Location"], view


def test_a_stranger_has_no_console() -> None:
    tool = ToolFactory()

    response = Client().get(url("console", tool))

    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_platform_staff_open_any_tenants_console() -> None:
    tool = ToolFactory()
    client = Client()
    client.force_login(UserFactory(is_staff=True, is_superuser=True))

    assert client.get(url("console", tool)).status_code == 200


def test_console_posts_need_the_csrf_token() -> None:
    tool = ToolFactory()
    client = signed_in(Membership.Role.OWNER, tool, enforce_csrf=True)
    page = client.get(url("console", tool))
    token = page.context["csrf_token"]

    for view in ("console_run", "console_answer", "console_cancel"):
        assert post_json(client, url(view, tool), {"runId": "x", "requestId": "y"}).status_code == 403, view
    answered = post_json(client, url("console_cancel", tool), {"runId": "x"}, HTTP_X_CSRFTOKEN=str(token))
    assert answered.status_code == 204


def test_the_run_refuses_arguments_over_the_cap_and_non_objects() -> None:
    tool = ToolFactory()
    client = signed_in(Membership.Role.ADMIN, tool)

    big = post_json(client, url("console_run", tool), {"arguments": {"text": "x" * MAX_ARGUMENT_BYTES}})
    listed = post_json(client, url("console_run", tool), {"arguments": [1, 2]})
    broken = client.post(url("console_run", tool), b"{", content_type="application/json")

    assert big.status_code == 413 and "KiB" in big.json()["error"]
    assert listed.status_code == 400 and listed.json() == {"error": "arguments must be a JSON object."}
    assert broken.status_code == 400


def test_console_actions_are_posts_only() -> None:
    tool = ToolFactory()
    client = signed_in(Membership.Role.ADMIN, tool)

    for view in ("console_run", "console_answer", "console_cancel"):
        assert client.get(url(view, tool)).status_code == 405, view


def test_answers_need_a_run_and_a_request() -> None:
    tool = ToolFactory()
    client = signed_in(Membership.Role.ADMIN, tool)

    assert post_json(client, url("console_answer", tool), {"runId": "x"}).status_code == 400
    assert post_json(client, url("console_answer", tool), {"requestId": "y"}).status_code == 400
    assert post_json(client, url("console_cancel", tool), {}).status_code == 400


def test_the_page_offers_a_task_only_where_the_tool_allows_a_choice() -> None:
    optional = ToolFactory(task_support=TaskSupport.OPTIONAL)
    required = ToolFactory(tenant=optional.tenant, task_support=TaskSupport.REQUIRED)
    client = signed_in(Membership.Role.ADMIN, optional)

    assert 'id="console-as-task"' in client.get(url("console", optional)).content.decode()
    page = client.get(url("console", required)).content.decode()
    assert 'id="console-as-task"' not in page and "runs only as a task" in page


def kept_run(tool: Tool, user: Any, **fields: Any) -> ConsoleRunRecord:
    values: dict[str, Any] = {
        "run_id": f"run-{ConsoleRunRecord.objects.count()}",
        "started_at": timezone.now(),
        "duration_ms": 12.5,
        "outcome": ConsoleRunRecord.Outcome.OK,
        "arguments": {"order": "A-1", "api_key": "[redacted]"},
        "result": {"content": [{"type": "text", "text": "done"}], "isError": False},
        "exchange": [{"direction": "sent", "message": {"jsonrpc": "2.0", "id": "r", "method": "tools/call"}}],
        **fields,
    }
    return ConsoleRunRecord.objects.create(tenant=tool.tenant, tool=tool, user=user, **values)


def detail_url(tool: Tool, record: ConsoleRunRecord) -> str:
    return reverse("admin:tenants_tool_console_run_detail", args=[tool.pk, record.pk])


def test_the_page_lists_the_admins_own_runs_of_the_tool_newest_first() -> None:
    tool = ToolFactory()
    membership = MembershipFactory(tenant=tool.tenant, role=Membership.Role.ADMIN)
    older = kept_run(tool, membership.user, started_at=timezone.now() - dt.timedelta(minutes=5))
    newer = kept_run(tool, membership.user)
    kept_run(tool, MembershipFactory(tenant=tool.tenant, role=Membership.Role.ADMIN).user)  # a colleague's
    kept_run(ToolFactory(tenant=tool.tenant), membership.user)  # another tool's
    client = Client()
    client.force_login(membership.user)

    history = client.get(url("console", tool)).context["console"]["history"]

    assert [run["id"] for run in history] == [newer.pk, older.pk]
    assert history[0]["arguments"] == {"order": "A-1", "api_key": "[redacted]"}
    assert history[0]["rerunArguments"] == {"order": "A-1"}  # a secret is given anew


def test_a_run_opens_with_its_result_exchange_and_code_for_the_tenants_endpoint() -> None:
    tool = ToolFactory()
    membership = MembershipFactory(tenant=tool.tenant, role=Membership.Role.OWNER)
    record = kept_run(tool, membership.user)
    client = Client()
    client.force_login(membership.user)

    detail = client.get(detail_url(tool, record)).json()

    assert detail["result"]["content"][0]["text"] == "done"
    assert detail["exchange"][0]["message"]["method"] == "tools/call"
    endpoint = f"http://testserver/t/{tool.tenant.slug}/mcp"
    assert f"ENDPOINT = {endpoint!r}" in detail["code"]["python"]
    assert "ARGUMENTS = {'order': 'A-1'}" in detail["code"]["python"]
    assert endpoint in detail["code"]["curl"] and endpoint in detail["code"]["typescript"]


def test_another_admins_run_and_another_tenants_are_404s() -> None:
    tool = ToolFactory()
    theirs = ToolFactory(tenant=TenantFactory())
    colleague = MembershipFactory(tenant=tool.tenant, role=Membership.Role.ADMIN).user
    stranger = MembershipFactory(tenant=theirs.tenant, role=Membership.Role.OWNER).user
    client = signed_in(Membership.Role.ADMIN, tool)

    assert client.get(detail_url(tool, kept_run(tool, colleague))).status_code == 404
    assert client.get(detail_url(theirs, kept_run(theirs, stranger))).status_code == 404
    mine = kept_run(tool, User.objects.get(pk=client.session["_auth_user_id"]))
    assert client.get(detail_url(tool, mine)).status_code == 200
    assert client.get(detail_url(ToolFactory(tenant=tool.tenant), mine)).status_code == 404  # another tool's URL
    assert post_json(client, detail_url(tool, mine), {}).status_code == 405


def test_the_page_says_whether_rate_limits_apply_to_console_runs() -> None:
    tool = ToolFactory()
    client = signed_in(Membership.Role.OWNER, tool)

    unlimited = client.get(url("console", tool)).content.decode()
    rate_limit_create(tenant=tool.tenant, scope="client", client_id="admin-console", rate=10, period=60, burst=3)
    limited = client.get(url("console", tool)).content.decode()

    assert "Console runs are not rate limited" in unlimited
    assert "Console runs are rate limited: 10 per minute (at most 3 at once)" in limited

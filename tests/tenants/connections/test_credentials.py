"""Who a call acts as, where its target acts as the person: machine clients use the shared config the admin set or
are refused, anonymous callers are refused, and a person without a credential is asked through the era's question."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from mcp_core.context import RequestContext
from mcp_core.errors import ToolError, UrlElicitationRequired
from tenants.connections.acting import Caller
from tenants.connections.credentials import person_credentials
from tenants.models import ConnectLink
from tenants.secrets import secret_set
from tests.factories import TenantFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

TIMEOUT = httpx.Timeout(5.0)
KEY_AUTH: dict[str, Any] = {"type": "user_key", "placement": "header", "name": "X-Api-Key", "label": "Notes key"}


class Quiet:
    """A client connection that is never written to on these paths."""

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        raise AssertionError(f"nothing is sent: {method}")

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError(f"nothing is asked: {method}")

    async def release(self) -> None:
        return None


def _ctx(caller: Caller, capabilities: dict[str, Any] | None = None) -> RequestContext:
    return RequestContext(outbound=Quiet(), client_capabilities=capabilities or {}, arguments={}, caller=caller)


def _credentials(tenant_id: int, auth: dict[str, Any], ctx: RequestContext) -> Any:
    return asyncio.run(
        person_credentials(
            tenant_id=tenant_id, target="tool:1", title="The tool notes", auth=auth, ctx=ctx, timeout=TIMEOUT
        )
    )


def test_a_machine_client_is_refused_unless_the_admin_set_shared_credentials() -> None:
    tenant = TenantFactory()
    with pytest.raises(ToolError, match="machine client"):
        _credentials(tenant.pk, KEY_AUTH, _ctx(Caller(None, "nightly-job")))
    secret_set(tenant=tenant, name="shared-notes-key", value="SHARED-1234")
    shared = {**KEY_AUTH, "machine": {"type": "header", "name": "X-Api-Key", "secret": "shared-notes-key"}}
    found = _credentials(tenant.pk, shared, _ctx(Caller(None, "nightly-job")))
    assert found.headers == {"X-Api-Key": "SHARED-1234"} and "SHARED-1234" in found.sensitive


def test_an_anonymous_caller_is_refused() -> None:
    with pytest.raises(ToolError, match="anonymous caller"):
        _credentials(TenantFactory().pk, KEY_AUTH, _ctx(Caller(None, "")))


def test_a_person_without_a_key_gets_a_link_of_their_own_in_the_eras_question() -> None:
    tenant, person = TenantFactory(), UserFactory()
    caller = Caller(person.pk, "claude", base_url="https://mcp.example")
    with pytest.raises(UrlElicitationRequired) as asked:
        _credentials(tenant.pk, KEY_AUTH, _ctx(caller, {"elicitation": {"url": {}}}))
    (question,) = asked.value.data["elicitations"]
    assert question["url"].startswith("https://mcp.example/connect/") and "Notes key" in question["message"]
    link = ConnectLink.objects.get()
    assert (link.user_id, link.tenant_id, link.target, link.elicitation_id) == (
        person.pk,
        tenant.pk,
        "tool:1",
        question["elicitationId"],
    )
    # A client that cannot be sent to a page gets the link in a failed result.
    with pytest.raises(ToolError, match=r"https://mcp\.example/connect/"):
        _credentials(tenant.pk, KEY_AUTH, _ctx(caller))

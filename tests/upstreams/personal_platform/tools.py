"""The Python tools of the personal upstream's tenant: ``personal.whoami`` answers whom the call acts for, as the
instance's gateway tells a tool (``tenants.connections.acting.caller_of``)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model

from mcp_core.context import ToolContext
from tenants.backends.registry import python_tool
from tenants.connections.acting import caller_of

WHOAMI = "personal.whoami"


@python_tool(WHOAMI)
async def whoami(ctx: ToolContext) -> dict[str, Any]:
    """``{"username": ..., "client_id": ...}``: the person's username (None for a machine client or an anonymous
    call) and the OAuth client's id ("" when anonymous)."""
    caller = caller_of(ctx)
    username = None
    if caller.user_id is not None:
        people = get_user_model().objects.filter(pk=caller.user_id)
        username = await people.values_list("username", flat=True).afirst()
    return {"username": username, "client_id": caller.client_id}

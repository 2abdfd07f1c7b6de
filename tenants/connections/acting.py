"""Who a call acts as: the person behind the client, a machine client on its own, or the signed-in admin in the
console. The shell puts a ``Caller`` in the request's context; backends that act as the person read it here."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from mcp_core.context import ToolContext

CONSOLE_CLIENT = "admin-console"
# "user:<id> client:<id>" (a person through a client), "client:<id>" (a machine client), "user:<id>" (a person in the
# console, whose runs name no client).
_LABEL = re.compile(r"^(?:user:(?P<user>\d+)(?: client:(?P<client>\S+))?|client:(?P<machine>\S+))$")


@dataclass(frozen=True, slots=True)
class Caller:
    """``user_id``: the person (None for a machine client or an anonymous caller); ``client_id``: the OAuth client
    ("" when anonymous, ``CONSOLE_CLIENT`` in the console); ``token_id``: the caller's access token row where the
    request carried one (token exchange starts from it)."""

    user_id: int | None
    client_id: str
    token_id: int | None = None
    # The platform's address as the client reached it: where the links of questions to the person point.
    base_url: str = ""

    @property
    def is_machine(self) -> bool:
        return self.user_id is None and bool(self.client_id)

    @classmethod
    def from_label(cls, label: str, *, base_url: str = "") -> Caller:
        """The caller a principal label names (``user:<id> client:<id>``, ``client:<id>``, ``user:<id>`` in the
        console, or ``anonymous``), as requests and task runs record it."""
        return _from_label(label, base_url)

    @classmethod
    def _parse(cls, label: str, base_url: str) -> Caller:
        found = _LABEL.match(label)
        if found is None:
            return Caller(None, "", base_url=base_url)
        user = found.group("user")
        if user is None:
            return cls(None, found.group("machine"), base_url=base_url)
        return cls(int(user), found.group("client") or CONSOLE_CLIENT, base_url=base_url)


ANONYMOUS = Caller(None, "")


# Built for every request from its principal label; the same few callers ask again and again.
@functools.lru_cache(maxsize=4096)
def _from_label(label: str, base_url: str) -> Caller:
    return Caller._parse(label, base_url)


def caller_of(ctx: ToolContext) -> Caller:
    """The caller of the call ``ctx`` belongs to; anonymous where the shell named none."""
    caller = getattr(ctx, "caller", None)
    return caller if isinstance(caller, Caller) else ANONYMOUS

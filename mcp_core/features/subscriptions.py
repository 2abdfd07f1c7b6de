"""``subscriptions/listen`` (2026-07-28): what a listener asked for, what this server honours, and the
notifications it is owed. The shell holds the stream open and feeds it catalog events.

Honoured: tools/prompts/resources list changes and updates of named resources. ``taskIds`` belongs to the tasks
extension, which this server does not offer yet, so it is left out of the acknowledgement.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from mcp_core.errors import InvalidParams

JSONObject = dict[str, Any]

LISTEN_METHOD: Final = "subscriptions/listen"
SUBSCRIPTION_ID_KEY: Final = "io.modelcontextprotocol/subscriptionId"
ACKNOWLEDGED: Final = "notifications/subscriptions/acknowledged"
MAX_RESOURCE_SUBSCRIPTIONS: Final = 1000

# Catalog kind → the notification that its list changed (both eras); and a resource's content changed.
LIST_CHANGED: Final[dict[str, str]] = {
    "tools": "notifications/tools/list_changed",
    "prompts": "notifications/prompts/list_changed",
    "resources": "notifications/resources/list_changed",
}
RESOURCE_UPDATED: Final = "notifications/resources/updated"

# Filter flag → (catalog kind, notification method).
LIST_FLAGS: Final[dict[str, tuple[str, str]]] = {
    "toolsListChanged": ("tools", LIST_CHANGED["tools"]),
    "promptsListChanged": ("prompts", LIST_CHANGED["prompts"]),
    "resourcesListChanged": ("resources", LIST_CHANGED["resources"]),
}


@dataclass(frozen=True)
class Subscription:
    """One listen stream: its id (the request's JSON-RPC id), the list kinds and the resource URIs it follows."""

    subscription_id: str | int
    kinds: frozenset[str]
    resource_uris: frozenset[str]
    # The honoured filter in the client's own order, for the acknowledgement.
    honoured: JSONObject

    def _meta(self) -> JSONObject:
        return {SUBSCRIPTION_ID_KEY: self.subscription_id}

    def acknowledgement(self) -> tuple[str, JSONObject]:
        return ACKNOWLEDGED, {"_meta": self._meta(), "notifications": self.honoured}

    def on_catalog_changed(self, kind: str) -> tuple[str, JSONObject] | None:
        """The list-changed notification for a change of ``kind``, if this stream asked for it."""
        for flag_kind, method in LIST_FLAGS.values():
            if flag_kind == kind and kind in self.kinds:
                return method, {"_meta": self._meta()}
        return None

    def on_resource_updated(self, uri: str) -> tuple[str, JSONObject] | None:
        if uri not in self.resource_uris:
            return None
        return RESOURCE_UPDATED, {"_meta": self._meta(), "uri": uri}


def parse_listen(params: JSONObject | None, subscription_id: str | int) -> Subscription:
    """The subscription a ``subscriptions/listen`` asks for, cut down to what this server honours.

    Raises InvalidParams when ``notifications`` is not an object, a flag is not a boolean, or
    ``resourceSubscriptions`` is not a list of strings (at most ``MAX_RESOURCE_SUBSCRIPTIONS``).
    """
    wanted = (params or {}).get("notifications", {})
    if not isinstance(wanted, dict):
        raise InvalidParams("notifications must be an object")
    kinds: set[str] = set()
    uris: list[str] = []
    honoured: JSONObject = {}
    for field, value in wanted.items():
        if field in LIST_FLAGS:
            if not isinstance(value, bool):
                raise InvalidParams(f"notifications.{field} must be a boolean")
            if value:
                kinds.add(LIST_FLAGS[field][0])
                honoured[field] = True
        elif field == "resourceSubscriptions":
            if not isinstance(value, list) or not all(isinstance(uri, str) and uri for uri in value):
                raise InvalidParams("notifications.resourceSubscriptions must be a list of URIs")
            if len(value) > MAX_RESOURCE_SUBSCRIPTIONS:
                raise InvalidParams(f"at most {MAX_RESOURCE_SUBSCRIPTIONS} resourceSubscriptions per stream")
            uris = list(dict.fromkeys(value))
            if uris:
                honoured[field] = uris
    return Subscription(
        subscription_id=subscription_id, kinds=frozenset(kinds), resource_uris=frozenset(uris), honoured=honoured
    )

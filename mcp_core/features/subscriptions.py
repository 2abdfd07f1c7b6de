"""``subscriptions/listen`` (2026-07-28): what a listener asked for, what this server honours, and the
notifications it is owed. The shell holds the stream open and feeds it catalog events.

Honoured: tools/prompts/resources list changes, updates of named resources, and (tasks extension) the status of
the caller's own tasks: the shell narrows ``taskIds`` to those before acknowledging.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from mcp_core.errors import InvalidParams
from mcp_core.tasks import client_accepts_tasks, missing_tasks_extension

JSONObject = dict[str, Any]

LISTEN_METHOD: Final = "subscriptions/listen"
SUBSCRIPTION_ID_KEY: Final = "io.modelcontextprotocol/subscriptionId"
ACKNOWLEDGED: Final = "notifications/subscriptions/acknowledged"
MAX_RESOURCE_SUBSCRIPTIONS: Final = 1000
MAX_TASK_IDS: Final = 1000
TASK_STATUS: Final = "notifications/tasks"

# Catalog kind → the notification that its list changed (both eras); and a resource's content changed.
LIST_CHANGED: Final[dict[str, str]] = {
    "tools": "notifications/tools/list_changed",
    "prompts": "notifications/prompts/list_changed",
    "resources": "notifications/resources/list_changed",
}
RESOURCE_UPDATED: Final = "notifications/resources/updated"

# Filter flag → the catalog kind whose list changes it follows.
LIST_FLAGS: Final[dict[str, str]] = {
    "toolsListChanged": "tools",
    "promptsListChanged": "prompts",
    "resourcesListChanged": "resources",
}


@dataclass(frozen=True)
class Subscription:
    """One listen stream: its id (the request's JSON-RPC id), the list kinds and the resource URIs it follows."""

    subscription_id: str | int
    kinds: frozenset[str]
    resource_uris: frozenset[str]
    # The honoured filter in the client's own order, for the acknowledgement.
    honoured: JSONObject
    # Tasks whose status the stream carries (before the shell's narrowing: the ones asked for).
    task_ids: tuple[str, ...] = ()

    def _meta(self) -> JSONObject:
        return {SUBSCRIPTION_ID_KEY: self.subscription_id}

    def acknowledgement(self) -> tuple[str, JSONObject]:
        return ACKNOWLEDGED, {"_meta": self._meta(), "notifications": self.honoured}

    def on_catalog_changed(self, kind: str) -> tuple[str, JSONObject] | None:
        """The list-changed notification for a change of ``kind``, if this stream asked for it."""
        if kind not in self.kinds:
            return None
        return LIST_CHANGED[kind], {"_meta": self._meta()}

    def on_resource_updated(self, uri: str) -> tuple[str, JSONObject] | None:
        if uri not in self.resource_uris:
            return None
        return RESOURCE_UPDATED, {"_meta": self._meta(), "uri": uri}

    def honouring_tasks(self, followed: Iterable[str]) -> Subscription:
        """This subscription for the asked-for tasks the caller may follow only (acknowledged in its order)."""
        allowed = set(followed)
        kept = tuple(task_id for task_id in self.task_ids if task_id in allowed)
        honoured = {key: value for key, value in self.honoured.items() if key != "taskIds"}
        if kept:
            honoured["taskIds"] = list(kept)
        return replace(self, task_ids=kept, honoured=honoured)

    def on_task(self, task: JSONObject) -> tuple[str, JSONObject]:
        """``notifications/tasks``: the task as ``tasks/get`` shows it now (a ``DetailedTask``)."""
        return TASK_STATUS, {**task, "_meta": self._meta()}


def _distinct_strings(value: Any, field: str, what: str, limit: int) -> list[str]:
    """``notifications.<field>``, a list of at most ``limit`` non-empty strings, without repeats."""
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise InvalidParams(f"notifications.{field} must be a list of {what}")
    if len(value) > limit:
        raise InvalidParams(f"at most {limit} {field} per stream")
    return list(dict.fromkeys(value))


def parse_listen(
    params: JSONObject | None, subscription_id: str | int, client_capabilities: Mapping[str, Any] | None = None
) -> Subscription:
    """The subscription a ``subscriptions/listen`` asks for, cut down to what this server honours.

    Raises InvalidParams when ``notifications`` is not an object, a flag is not a boolean, or
    ``resourceSubscriptions`` or ``taskIds`` is not a list of strings (at most 1000 each), and
    MissingClientCapability for ``taskIds`` from a client that did not declare the tasks extension.
    """
    wanted = (params or {}).get("notifications", {})
    if not isinstance(wanted, dict):
        raise InvalidParams("notifications must be an object")
    kinds: set[str] = set()
    uris: list[str] = []
    task_ids: tuple[str, ...] = ()
    honoured: JSONObject = {}
    for field, value in wanted.items():
        if field in LIST_FLAGS:
            if not isinstance(value, bool):
                raise InvalidParams(f"notifications.{field} must be a boolean")
            if value:
                kinds.add(LIST_FLAGS[field])
                honoured[field] = True
        elif field == "resourceSubscriptions":
            uris = _distinct_strings(value, field, "URIs", MAX_RESOURCE_SUBSCRIPTIONS)
            if uris:
                honoured[field] = uris
        elif field == "taskIds":
            task_ids = tuple(_distinct_strings(value, field, "task ids", MAX_TASK_IDS))
            if task_ids and not client_accepts_tasks(client_capabilities or {}):
                raise missing_tasks_extension("Task status notifications")
    return Subscription(
        subscription_id=subscription_id,
        kinds=frozenset(kinds),
        resource_uris=frozenset(uris),
        honoured=honoured,
        task_ids=task_ids,
    )

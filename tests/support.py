"""Test peers shared by the test packages: real implementations of the protocol's seams, kept in memory."""

from __future__ import annotations

from typing import Any

JSONObject = dict[str, Any]


class RecordingOutbound:
    """An ``Outbound`` that keeps what was sent and answers requests from a table, like a client would."""

    def __init__(self, answers: dict[str, JSONObject] | None = None) -> None:
        self.sent: list[tuple[str, JSONObject]] = []
        self.notifications: list[tuple[str, JSONObject]] = []
        self.requests: list[tuple[str, JSONObject]] = []
        self.answers = answers or {}
        self.released = 0

    async def notify(self, method: str, params: JSONObject) -> None:
        self.sent.append((method, params))
        self.notifications.append((method, params))

    async def request(self, method: str, params: JSONObject) -> JSONObject:
        self.sent.append((method, params))
        self.requests.append((method, params))
        return self.answers[method]

    async def release(self) -> None:
        self.released += 1

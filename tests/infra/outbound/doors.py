"""The outbound door's clients behind one small interface, so one suite runs against each of them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import httpx2

from mcp_infra.conf import platform_settings
from mcp_infra.outbound import OutboundRefused, OutboundResponseTooLarge, Resolve, build_outbound_client, transport
from mcp_infra.outbound.httpx2 import outbound_httpx2_client
from mcp_infra.outbound.lean import LeanHttpClient, LeanHttpError


class Answers:
    """A resolver that answers from a script and counts its lookups."""

    def __init__(self, *answers: list[str]) -> None:
        self.answers = list(answers)
        self.lookups: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.lookups.append(host)
        return self.answers[min(len(self.lookups), len(self.answers)) - 1]


@dataclass
class Answer:
    status: int
    body: bytes
    headers: list[tuple[str, str]]  # every header line, lower-case names, in order
    joined: dict[str, str]  # a repeated header's values joined, as the client reads one by name

    def values(self, name: str) -> list[str]:
        return [value for key, value in self.headers if key == name]


@dataclass
class Door:
    """One client of the door, built as its callers build it, with what it raises for each failure."""

    kind: str
    resolve: Resolve | None = None
    refused: type[BaseException] = OutboundRefused  # the policy refused an address
    unreachable: type[BaseException] = httpx.ConnectError  # the name did not resolve
    bad_scheme: type[BaseException] = OutboundRefused
    too_large: type[BaseException] = OutboundResponseTooLarge
    timed_out: type[BaseException] = httpx.ReadTimeout
    follows_redirects: bool = False
    _client: Any = None
    _lean: dict[str, LeanHttpClient] = field(default_factory=dict)

    @classmethod
    def build(cls, kind: str, *, resolve: Resolve | None = None) -> Door:
        if kind == "httpx":
            return cls(kind, resolve, follows_redirects=True)
        if kind == "httpx2":
            return cls(
                kind,
                resolve,
                refused=httpx2.ConnectError,
                unreachable=httpx2.ConnectError,
                bad_scheme=httpx2.UnsupportedProtocol,
                too_large=httpx2.ReadError,
                timed_out=httpx2.ReadTimeout,
            )
        assert kind == "lean"
        return cls(
            kind,
            resolve,
            refused=LeanHttpError,
            unreachable=LeanHttpError,
            bad_scheme=LeanHttpError,
            too_large=LeanHttpError,
            timed_out=LeanHttpError,
        )

    def _httpx(self) -> Any:
        if self._client is None:
            if self.kind == "httpx":
                self._client = build_outbound_client(tenant_id=None, resolve=self.resolve)
            else:
                timeout = httpx2.Timeout(
                    platform_settings.OUTBOUND_READ_TIMEOUT, connect=platform_settings.OUTBOUND_CONNECT_TIMEOUT
                )
                self._client = outbound_httpx2_client(tenant_id=None, headers={}, timeout=timeout, resolve=self.resolve)
        return self._client

    def _lean_for(self, url: str) -> LeanHttpClient:
        if url not in self._lean:
            self._lean[url] = LeanHttpClient(
                url,
                tenant_id=None,
                headers={},
                connect_timeout=platform_settings.OUTBOUND_CONNECT_TIMEOUT,
                read_timeout=platform_settings.OUTBOUND_READ_TIMEOUT,
                max_connections=transport.MAX_CONNECTIONS,
                resolve=self.resolve,
            )
        return self._lean[url]

    async def post(self, url: str, body: bytes = b"{}") -> Answer:
        if self.kind == "lean":
            response = await self._lean_for(url).post(body, {"content-type": "application/json"})
            content = await response.read()
            return Answer(response.status, content, list(response.headers.raw), dict(response.headers))
        answer = await self._httpx().post(url, content=body, headers={"content-type": "application/json"})
        headers = [(name.decode("latin-1").lower(), value.decode("latin-1")) for name, value in answer.headers.raw]
        return Answer(answer.status_code, answer.content, headers, dict(answer.headers))

    async def stream(self, url: str) -> AsyncIterator[bytes]:
        """The body as it arrives; the response is never closed by this (running out must free its slot)."""
        if self.kind == "lean":
            response = await self._lean_for(url).post(b"{}", {})
            async for chunk in response.iter_bytes():
                yield chunk
            return
        client = self._httpx()
        response = await client.send(client.build_request("POST", url, content=b"{}"), stream=True)
        async for chunk in response.aiter_bytes():
            yield chunk

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
        for lean in self._lean.values():
            await lean.aclose()


DOORS = ["httpx", "httpx2", "lean"]

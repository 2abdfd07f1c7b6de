"""The health probes through the whole ASGI stack: ``/healthz`` answers, ``/readyz`` asks the database (and Redis
where configured) and says no while the process drains; both answer whatever host a probe names, and tell more than
a word only to loopback clients and holders of the metrics token."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from channels.testing import ApplicationCommunicator

from mcp_infra.serving.drain import process_drain
from mcp_platform.asgi import application

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

TOKEN = "probe-token-5be1"
# What a kubelet's probe looks like: the pod's address as the host, from an address that is not loopback.
POD_HOST = "10.1.2.3:8000"
PROBER = "10.1.0.1"


async def probe(
    path: str, *, method: str = "GET", client: str = PROBER, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    raw_headers = [(b"host", POD_HOST.encode())]
    raw_headers += [(name.lower().encode(), value.encode()) for name, value in (headers or {}).items()]
    scope = {
        "type": "http",
        "http_version": "1.1",
        "method": method,
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": raw_headers,
        "client": (client, 40000),
        "server": ("10.1.2.3", 8000),
    }
    communicator = ApplicationCommunicator(application, scope)
    await communicator.send_input({"type": "http.request", "body": b"", "more_body": False})
    start = await communicator.receive_output(5)
    body = await communicator.receive_output(5)
    await communicator.send_input({"type": "http.disconnect"})
    await communicator.wait(5)
    return start["status"], {k.decode(): v.decode() for k, v in start["headers"]}, body["body"]


@pytest.fixture
def draining(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process as it is right after its SIGTERM."""
    monkeypatch.setattr(process_drain, "started_at", time.monotonic())
    monkeypatch.setattr(process_drain, "deadline", time.monotonic() + 20)


async def test_a_public_probe_naming_the_pods_address_gets_one_word() -> None:
    for path, word in (("/healthz", b"ok\n"), ("/readyz", b"ready\n")):
        status, headers, body = await probe(path)
        assert (status, body) == (200, word), body
        assert headers["content-type"].startswith("text/plain")
        assert headers["cache-control"] == "no-store"
    status, _, body = await probe("/readyz", method="HEAD")
    assert (status, body) == (200, b"")
    status, headers, _ = await probe("/readyz", method="POST")
    assert status == 405 and headers["allow"] == "GET, HEAD"


async def test_loopback_clients_and_holders_of_the_token_see_what_answered_and_how_fast(settings: Any) -> None:
    status, headers, body = await probe("/readyz", client="127.0.0.1")
    details = json.loads(body)
    assert status == 200 and headers["content-type"] == "application/json"
    assert details["status"] == "ready" and details["draining"] is False
    expected = {"database", "redis"} if settings.REDIS_URL else {"database"}
    assert set(details["checks"]) == expected
    assert all(check["ok"] and 0 <= check["seconds"] < 1 for check in details["checks"].values()), details

    settings.MCP_PLATFORM = {**settings.MCP_PLATFORM, "METRICS_TOKEN": TOKEN}
    _, _, body = await probe("/readyz", headers={"Authorization": f"Bearer {TOKEN}"})
    assert json.loads(body)["checks"]["database"]["ok"] is True
    _, _, body = await probe("/readyz", headers={"Authorization": "Bearer not-the-token"})
    assert body == b"ready\n"
    # A client writing a loopback X-Forwarded-For is judged on its own address (no trusted proxy).
    _, _, body = await probe("/healthz", headers={"X-Forwarded-For": "127.0.0.1"})
    assert body == b"ok\n"


@pytest.mark.usefixtures("draining")
async def test_a_draining_process_is_alive_but_not_ready() -> None:
    status, _, body = await probe("/readyz")
    assert (status, body) == (503, b"draining\n")
    status, _, body = await probe("/healthz")
    assert (status, body) == (200, b"ok\n")
    status, _, body = await probe("/healthz", client="127.0.0.1")
    assert status == 200 and json.loads(body)["draining"] is True

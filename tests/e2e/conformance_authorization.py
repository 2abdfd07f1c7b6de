"""Run the official conformance suite's authorization-server scenarios against a live platform, headlessly.

``python -m tests.e2e.conformance_authorization <conformance command> [extra args]`` (``scripts/
conformance-authorization`` installs the suite and calls this). It starts the platform on embedded defaults,
creates a tenant that requires authorization and a member, and runs ``conformance authorization`` twice: with
an admin-registered public client, and with a client metadata document URL as the client id (served over
HTTPS on loopback with a CA the platform trusts). Both register the suite's callback,
``http://127.0.0.1:<port>/callback``. Where the suite asks a person to open the authorization URL, a
``Person`` signs in and consents through real HTTP requests and the final redirect is delivered to the
suite's callback server. Exits non-zero when any scenario fails.
"""

from __future__ import annotations

import re
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

import anyio
import httpx

from tests.e2e.live import LiveServer, embedded_server, free_port
from tests.e2e.oauth_person import Person
from tests.https_documents import DocumentServer

TENANT = "conformance-auth"
USERNAME, PASSWORD = "conformance", "conformance suite password 1"
RUN_TIMEOUT = 300.0
CALLBACK_TIMEOUT = 10.0

# Runs in ``manage.py shell -c``; prints the client id of an admin-registered public client.
SETUP_SCRIPT = """
from django.contrib.auth import get_user_model
from oauth2_provider.models import get_application_model
from tenants import services
tenant = services.tenant_create(slug={tenant!r}, name="Authorization conformance", requires_authorization=True)
user = get_user_model().objects.create_user({username!r}, password={password!r})
services.membership_add(tenant=tenant, user=user)
client = get_application_model().objects.create(
    name="MCP conformance suite", client_type="public", authorization_grant_type="authorization-code",
    redirect_uris={redirect!r}, tenant=tenant,
)
print(client.client_id)
"""


async def deliver(location: str) -> None:
    """GET the suite's callback URL, waiting (bounded) for its server to start listening."""
    with anyio.fail_after(CALLBACK_TIMEOUT):
        async with httpx.AsyncClient(timeout=CALLBACK_TIMEOUT) as http:
            while True:
                try:
                    (await http.get(location)).raise_for_status()
                    return
                except httpx.ConnectError:
                    await anyio.sleep(0.1)


async def run_suite(command: list[str], authorize_prefix: str) -> tuple[int, str]:
    """Run the suite, answering each authorization URL it prints; its exit status and its output."""
    output: list[str] = []
    async with Person(USERNAME, PASSWORD) as person, await anyio.open_process(command, stderr=None) as process:
        assert process.stdout is not None
        try:
            buffered = ""
            async for chunk in process.stdout:
                buffered += chunk.decode(errors="replace")
                *lines, buffered = buffered.split("\n")
                for line in lines:
                    print(line, flush=True)
                    output.append(line)
                    if line.startswith(authorize_prefix):
                        await deliver(await person.authorize(line.strip()))
        except BaseException:
            process.kill()  # the suite would wait minutes for a callback that is not coming
            raise
        status = await process.wait()
    return status, "\n".join(output)


def suite_command(conformance: str, server: LiveServer, client_id: str, port: int, extra: list[str]) -> list[str]:
    return [
        conformance,
        "authorization",
        "--url",
        server.web_urls[0],
        "--client-id",
        client_id,
        "--resource",
        server.endpoint(TENANT),
        "--port",
        str(port),
        *extra,
    ]


def main(argv: list[str]) -> int:
    conformance, extra = argv[0], argv[1:]
    results: list[tuple[str, int, str]] = []
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        server = embedded_server(stack, Path(tmp))
        port = free_port()
        redirect = f"http://127.0.0.1:{port}/callback"
        setup = SETUP_SCRIPT.format(tenant=TENANT, username=USERNAME, password=PASSWORD, redirect=redirect)
        registered = server.manage("shell", "-c", setup).strip().splitlines()[-1]
        documents = stack.enter_context(DocumentServer(server.pki.cert, server.pki.key))
        described = documents.client_document(
            "/conformance-client.json", [redirect], client_name="MCP conformance suite (metadata document)"
        )
        authorize_prefix = f"{server.web_urls[0]}/oauth/authorize/?"
        for label, client_id in (("admin-registered client", registered), ("client metadata document", described)):
            print(f"\n##### authorization conformance: {label} ({client_id})", flush=True)
            command = suite_command(conformance, server, client_id, port, extra)
            status, output = anyio.run(_bounded, command, authorize_prefix)
            total = re.findall(r"Total: (\d+) passed, (\d+) failed", output)
            results.append((label, status, f"{total[-1][0]} passed, {total[-1][1]} failed" if total else "no summary"))
        if any(status for _, status, _ in results):
            print(server.logs())
    print("\n##### authorization conformance summary")
    for label, status, tally in results:
        print(f"{'ok ' if status == 0 else 'FAIL'} {label}: {tally}")
    return 0 if all(status == 0 for _, status, _ in results) else 1


async def _bounded(command: list[str], authorize_prefix: str) -> tuple[int, str]:
    with anyio.fail_after(RUN_TIMEOUT):
        return await run_suite(command, authorize_prefix)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""daphne's channel (``mcp_infra.serving.daphne_channel``): requests are made without Twisted's form parsing."""

from __future__ import annotations

import subprocess
import sys
import textwrap

# In a process of its own: importing ``daphne.server`` installs Twisted's reactor for the whole process.
SCRIPT = textwrap.dedent(
    """
    import daphne.server  # noqa: F401  (first: it installs the reactor)
    from daphne.http_protocol import WebRequest
    from twisted.internet.task import Clock
    from twisted.internet.testing import StringTransport
    from twisted.web.http import Request

    from mcp_infra.serving.daphne_channel import channel_factory

    seen = []

    class Recording(Request):
        def process(self):
            seen.append((self.args, self.content.read()))
            self.finish()

    protocol = channel_factory(request_deadline=40.0, max_header_bytes=32768)()
    protocol._channel.callLater = Clock().callLater
    protocol.requestFactory = WebRequest  # as daphne's HTTPFactory.buildProtocol does
    assert protocol.requestFactory.func is WebRequest
    assert protocol.requestFactory.keywords == {"parsePOSTFormSubmission": False}
    protocol.requestFactory = Recording
    protocol.makeConnection(StringTransport())
    for content_type in (b"application/x-www-form-urlencoded", b"multipart/form-data; boundary=x"):
        body = b"a=1&b=2"
        protocol.dataReceived(
            b"POST /t/x/mcp?q=1 HTTP/1.1\\r\\nHost: h\\r\\nContent-Type: " + content_type
            + b"\\r\\nContent-Length: 7\\r\\n\\r\\n" + body
        )
    assert seen == [({b"q": [b"1"]}, b"a=1&b=2")] * 2, seen
    print("ok")
    """
)


def test_daphne_requests_keep_their_body_and_skip_form_parsing() -> None:
    """The query string is still parsed; a form body is left to the application, whole, and never parsed."""
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]

"""Twisted's HTTP channel for daphne with the bounds it lacks: a deadline on receiving a whole request, and header
limits that leave the exact 431 to the ASGI middleware.

daphne calls the application only once a request's body has fully arrived, so the ASGI body deadline
(``mcp_platform.gateway.limits``) never sees a slow body there, and Twisted's own timeout is an idle one that
each trickled byte resets. Here a request must arrive whole, headers and body, within ``request_deadline`` of
the connection opening or of the previous response ending: then 408 and the connection closes. Import only
after ``daphne.server`` (it installs the reactor this module's imports would otherwise install).
"""

from __future__ import annotations

import functools
from typing import Any

from twisted.internet.protocol import connectionDone
from twisted.python.failure import Failure
from twisted.web.http import HTTPChannel, Request, _GenericHTTPChannelProtocol

REQUEST_TIMEOUT_RESPONSE = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


class BoundedHTTPChannel(HTTPChannel):
    """Set ``request_deadline``, ``totalHeadersSize`` and ``MAX_LENGTH`` on a subclass (``channel_factory``)."""

    request_deadline: float = 40.0
    # A Twisted ``IDelayedCall`` (zope interfaces, which mypy cannot check).
    _deadline_call: Any = None
    _request_factory: Any = functools.partial(Request, parsePOSTFormSubmission=False)

    # daphne sets its request class here. Requests are made without Twisted's parsing of form submissions
    # (``parsePOSTFormSubmission``): it reads every POST's Content-Type through the ``email`` package, about a
    # quarter of daphne's CPU per request, to fill ``request.args``, which daphne never reads; and it would hold a
    # multipart body in memory a second time.
    @property  # type: ignore[override]
    def requestFactory(self) -> Any:
        return self._request_factory

    @requestFactory.setter
    def requestFactory(self, factory: Any) -> None:
        self._request_factory = functools.partial(factory, parsePOSTFormSubmission=False)

    def connectionMade(self) -> None:
        super().connectionMade()
        self._start_deadline()

    def allContentReceived(self) -> None:
        self._stop_deadline()
        super().allContentReceived()

    def requestDone(self, request: Any) -> None:
        super().requestDone(request)
        if self.persistent:
            self._start_deadline()

    def connectionLost(self, reason: Failure = connectionDone) -> None:
        self._stop_deadline()
        super().connectionLost(reason)

    def _start_deadline(self) -> None:
        self._stop_deadline()
        self._deadline_call = self.callLater(self.request_deadline, self._on_deadline)

    def _stop_deadline(self) -> None:
        if self._deadline_call is not None and self._deadline_call.active():
            self._deadline_call.cancel()
        self._deadline_call = None

    def _on_deadline(self) -> None:
        self._deadline_call = None
        transport: Any = self.transport
        transport.write(REQUEST_TIMEOUT_RESPONSE)
        self.loseConnection()


def channel_factory(*, request_deadline: float, max_header_bytes: int) -> Any:
    """A zero-argument protocol factory for daphne's ``HTTPFactory.protocol``, with these bounds.

    Header lines and header blocks up to twice ``max_header_bytes`` reach the application, which answers 431
    above ``max_header_bytes``; beyond, Twisted refuses them itself (400).
    """
    channel = type(
        "ConfiguredHTTPChannel",
        (BoundedHTTPChannel,),
        {
            "request_deadline": request_deadline,
            "totalHeadersSize": 2 * max_header_bytes,
            "MAX_LENGTH": 2 * max_header_bytes,
        },
    )
    return lambda: _GenericHTTPChannelProtocol(channel())

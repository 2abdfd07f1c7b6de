"""Static files on the ASGI server: WhiteNoise's middleware, answering ASGI requests with an asynchronous iterator.

WhiteNoise answers with a ``FileResponse`` over a synchronous file. Django's ASGI handler can only consume that by
reading the whole file into a list in a worker thread, and says so with the warning "StreamingHttpResponse must
consume synchronous iterators" on the first static file a process serves. Here an ASGI request gets the same file
read block by block in a worker thread, as an asynchronous iterator the handler streams; a WSGI request (the test
client) keeps WhiteNoise's own response.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import IO, Any

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, HttpResponseBase, StreamingHttpResponse
from whitenoise.middleware import WhiteNoiseMiddleware

BLOCK_SIZE = 64 * 1024


async def _blocks(file: IO[bytes] | None) -> AsyncIterator[bytes]:
    if file is None:  # HEAD, 304 Not Modified
        return
    read = sync_to_async(file.read, thread_sensitive=False)
    try:
        while block := await read(BLOCK_SIZE):
            yield block
    finally:
        file.close()


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    """``whitenoise.middleware.WhiteNoiseMiddleware`` (its settings, finders and headers), streaming asynchronously
    under ASGI."""

    @staticmethod
    def serve(static_file: Any, request: HttpRequest) -> HttpResponseBase:
        if not isinstance(request, ASGIRequest):
            return WhiteNoiseMiddleware.serve(static_file, request)
        response = static_file.get_response(request.method, request.META)
        streamed = StreamingHttpResponse(_blocks(response.file), status=int(response.status))
        del streamed["Content-Type"]  # WhiteNoise's headers name the file's own
        for key, value in response.headers:
            streamed[key] = value
        return streamed

"""A PostgreSQL wire proxy that counts the statements a web process sends: database queries per request.

The counted web process connects through it (its ``DATABASE_URL`` names the proxy's port); every frontend
message is forwarded unchanged and ``Query`` (simple protocol) and ``Execute`` (extended protocol) messages are
counted, as are new connections. Exact and immediate, unlike ``pg_stat_database`` (flushed up to 10 s late and
per transaction, not per statement) or ``pg_stat_statements`` (needs a server restart to preload).
The proxy answers ``SSLRequest``/``GSSENCRequest`` with "N" itself, so the counted connection stays readable.
"""

from __future__ import annotations

import asyncio
import struct
import threading
from dataclasses import dataclass

SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102


@dataclass
class Counts:
    statements: int = 0
    connections: int = 0


class StatementCounter:
    """Runs the proxy on its own event loop thread; ``counts`` is read and reset by the harness."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.counts = Counts()
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pg-statement-counter", daemon=True)
        self.port = 0

    def start(self) -> int:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the PostgreSQL counting proxy did not start")
        return self.port

    def stop(self) -> None:
        """Close the listener and every proxied connection, then end the thread."""
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        current = asyncio.current_task()
        tasks = [task for task in asyncio.all_tasks() if task is not current]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def snapshot(self) -> Counts:
        with self._lock:
            return Counts(self.counts.statements, self.counts.connections)

    def _add(self, statements: int = 0, connections: int = 0) -> None:
        with self._lock:
            self.counts.statements += statements
            self.counts.connections += connections

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            server_reader, server_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            client_writer.close()
            return
        self._add(connections=1)
        back = asyncio.create_task(self._pipe(server_reader, client_writer))
        try:
            await self._frontend(client_reader, client_writer, server_writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            server_writer.close()
            await asyncio.gather(back, return_exceptions=True)
            client_writer.close()

    async def _frontend(
        self, reader: asyncio.StreamReader, client: asyncio.StreamWriter, server: asyncio.StreamWriter
    ) -> None:
        # Untyped start-up packets first (length, code), until the StartupMessage itself.
        while True:
            header = await reader.readexactly(8)
            length, code = struct.unpack("!ii", header)
            rest = await reader.readexactly(length - 8)
            if code in (SSL_REQUEST, GSSENC_REQUEST):
                client.write(b"N")
                await client.drain()
                continue
            server.write(header + rest)
            if code == CANCEL_REQUEST:
                await server.drain()
                return
            break
        # Then typed messages: one type byte, then a length that counts itself.
        while True:
            kind = await reader.readexactly(1)
            length_bytes = await reader.readexactly(4)
            body = await reader.readexactly(struct.unpack("!i", length_bytes)[0] - 4)
            if kind in (b"Q", b"E"):
                self._add(statements=1)
            server.write(kind + length_bytes + body)
            await server.drain()
            if kind == b"X":
                return

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

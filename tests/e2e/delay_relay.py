"""The database's round trip on the multi-host topology: a TCP relay that listens on the data host's address and
holds every chunk it forwards, in both directions, for the one-way delay it is told (half the round trip).

The kernel here has no ``netem`` qdisc, so the delay cannot be put on the link; this relay puts it on the only
path to the database instead. It runs as a process of its own (``python -m tests.e2e.delay_relay``): its
listening socket is made inside the data host's network namespace, and it connects to the machine's PostgreSQL
from the namespace it was started in. Each direction of a connection is a reader thread and a writer thread: the
reader stamps each chunk with the time it is due, the writer sleeps until then (``clock_nanosleep``, precise to
tens of microseconds, where an event loop's timers round up to whole milliseconds) and sends it, so chunks keep
their order and overlap in flight as packets on a slow link do. A connection's bytes are never changed.

It also counts, per client address, the connections (made, and open now) and the statements (the wire
protocol's ``Query`` and ``Execute`` messages) it relays, as ``bench/pgcount.py`` does: exact and immediate. The
machine's PostgreSQL runs without TLS here; a server that accepted a client's ``SSLRequest`` would leave nothing
to count (the bytes are relayed all the same).

Control: a Unix socket; one line per command, one line back. ``delay <ms>`` sets the one-way delay from then on,
``counts`` answers the counts so far as JSON, ``ping`` answers ``ok`` once the relay listens.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import queue
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

CLONE_NEWNET = 0x40000000
CHUNK_BYTES = 65536
# Threads wait on sockets and sleeps, never on each other's bytecode: switch often, so a due chunk is not kept
# waiting for the interpreter lock (5 ms by default).
SWITCH_INTERVAL = 0.0002
# Untyped start-up packets that another start-up packet follows (the server answers them with one byte).
SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
STATEMENTS = frozenset(b"QE")


def _setns(fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))


def listening_socket(namespace: Path, host: str, port: int) -> socket.socket:
    """A TCP socket listening on ``host:port`` inside the network namespace ``namespace`` (its ``/run/netns``
    file); the calling thread is back in its own namespace when this returns."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(namespace, os.O_RDONLY)
    try:
        _setns(target)
        try:
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        finally:
            _setns(own)
    finally:
        os.close(target)
        os.close(own)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(128)
    return listener


@dataclass
class Counts:
    connections: int = 0
    open: int = 0
    statements: int = 0


class FrontendMessages:
    """Finds the message boundaries in what a client sends PostgreSQL, chunk by chunk, and counts statements."""

    def __init__(self) -> None:
        self._started = False
        self._header = bytearray()
        self._skip = 0

    def statements_in(self, data: bytes) -> int:
        count, at = 0, 0
        while at < len(data):
            if self._skip:
                taken = min(self._skip, len(data) - at)
                self._skip -= taken
                at += taken
                continue
            # A start-up packet's header is its length and its code; a message's, its type and its length.
            needed = 5 if self._started else 8
            taken = min(needed - len(self._header), len(data) - at)
            self._header += data[at : at + taken]
            at += taken
            if len(self._header) < needed:
                break
            if self._started:
                count += self._header[0] in STATEMENTS
                self._skip = struct.unpack("!i", self._header[1:5])[0] - 4
            else:
                length, code = struct.unpack("!ii", self._header)
                self._skip = length - 8
                self._started = code not in (SSL_REQUEST, GSSENC_REQUEST)
            self._header.clear()
        return count


class Relay:
    """Accepts connections and relays each to ``upstream`` with ``delay`` seconds added each way."""

    def __init__(self, listener: socket.socket, upstream: tuple[str, int]) -> None:
        self.listener = listener
        self.upstream = upstream
        self.delay = 0.0
        self._counts: dict[str, Counts] = {}
        self._lock = threading.Lock()

    def counts(self) -> dict[str, Any]:
        with self._lock:
            return {address: asdict(counts) for address, counts in self._counts.items()}

    def _count(self, address: str, *, connections: int = 0, closed: int = 0, statements: int = 0) -> None:
        with self._lock:
            counts = self._counts.setdefault(address, Counts())
            counts.connections += connections
            counts.open += connections - closed
            counts.statements += statements

    def serve_forever(self) -> None:
        while True:
            client, peer = self.listener.accept()
            threading.Thread(target=self._open, args=(client, peer[0]), daemon=True).start()

    def _open(self, client: socket.socket, address: str) -> None:
        try:
            upstream = socket.create_connection(self.upstream, timeout=10)
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        self._count(address, connections=1)
        for sock in (client, upstream):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pair = _Pair(client, upstream, lambda: self._count(address, closed=1))
        for source, target, tally in ((client, upstream, address), (upstream, client, None)):
            chunks: queue.SimpleQueue[tuple[float, bytes]] = queue.SimpleQueue()
            threading.Thread(target=self._read, args=(source, chunks, tally), daemon=True).start()
            threading.Thread(target=self._write, args=(target, chunks, pair), daemon=True).start()

    def _read(self, source: socket.socket, chunks: queue.SimpleQueue[tuple[float, bytes]], tally: str | None) -> None:
        """Stamp each chunk with when it is due; an empty chunk (the end of the stream) too. With ``tally`` (the
        client's address) the stream is the client's, whose statements are counted."""
        messages = FrontendMessages()
        while True:
            try:
                data = source.recv(CHUNK_BYTES)
            except OSError:
                data = b""
            chunks.put((time.monotonic() + self.delay, data))
            if not data:
                return
            if tally is not None:
                statements = messages.statements_in(data)
                if statements:
                    self._count(tally, statements=statements)

    def _write(self, target: socket.socket, chunks: queue.SimpleQueue[tuple[float, bytes]], pair: _Pair) -> None:
        while True:
            due, data = chunks.get()
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            try:
                if not data:
                    target.shutdown(socket.SHUT_WR)
                    break
                target.sendall(data)
            except OSError:
                pair.abort()
                break
        pair.finished()


class _Pair:
    """The two sockets of a relayed connection, closed once both directions have ended."""

    def __init__(self, client: socket.socket, upstream: socket.socket, closed: Callable[[], None]) -> None:
        self.sockets = (client, upstream)
        self._closed = closed
        self._lock = threading.Lock()
        self._ended = 0

    def abort(self) -> None:
        """A send failed: end both directions (their readers see the end of their streams)."""
        for sock in self.sockets:
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def finished(self) -> None:
        with self._lock:
            self._ended += 1
            done = self._ended == 2
        if done:
            for sock in self.sockets:
                sock.close()
            self._closed()


def serve_control(path: Path, relay: Relay) -> None:
    control = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    control.bind(str(path))
    control.listen(4)
    while True:
        connection, _ = control.accept()
        with connection, connection.makefile("rw") as lines:
            for line in lines:
                command, _, argument = line.strip().partition(" ")
                if command == "delay":
                    relay.delay = float(argument) / 1000
                    lines.write("ok\n")
                elif command == "counts":
                    lines.write(f"ok {json.dumps(relay.counts())}\n")
                elif command == "ping":
                    lines.write("ok\n")
                else:
                    lines.write(f"unknown command {command!r}\n")
                lines.flush()


class RelayControl:
    """The test's side of the control socket."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def send(self, line: str) -> str:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(5)
            connection.connect(str(self.path))
            with connection.makefile("rw") as lines:
                lines.write(line + "\n")
                lines.flush()
                answer = lines.readline().strip()
        status, _, rest = answer.partition(" ")
        if status != "ok":
            raise RuntimeError(f"the delay relay answered {answer!r} to {line!r}")
        return rest

    def ready(self) -> bool:
        try:
            self.send("ping")
        except OSError:
            return False
        return True

    def set_delay(self, one_way_ms: float) -> None:
        self.send(f"delay {one_way_ms}")

    def counts(self) -> dict[str, Counts]:
        """Connections and statements relayed so far, by client address."""
        return {address: Counts(**counts) for address, counts in json.loads(self.send("counts")).items()}


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A TCP relay that adds a one-way delay to every chunk, both ways.")
    parser.add_argument("--namespace", type=Path, required=True, help="the /run/netns file to listen in")
    parser.add_argument("--listen", type=_address, required=True, help="ADDRESS:PORT inside that namespace")
    parser.add_argument("--upstream", type=_address, required=True, help="HOST:PORT to relay to")
    parser.add_argument("--control", type=Path, required=True, help="the Unix socket to take commands on")
    args = parser.parse_args(argv)
    sys.setswitchinterval(SWITCH_INTERVAL)
    relay = Relay(listening_socket(args.namespace, *args.listen), args.upstream)
    threading.Thread(target=serve_control, args=(args.control, relay), daemon=True).start()
    relay.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Hosts on one machine: a network namespace per host, each joined by a veth pair to a router namespace, and
partitions as the router's policy rules, which drop every packet between two addresses without an answer.

The kernel here has no ``netem`` qdisc (nor the ``u32`` classifier or the ``drop`` action that could filter on a
link), so links have no delay of their own: the database's round trip comes from a relay in front of it
(``tests/e2e/delay_relay.py``). Partitions need no filter: a packet the router forwards onto a ``blackhole`` rule
is dropped silently, so TCP on both sides sees what a cut cable does (retransmissions into the void, connections
that neither fail nor answer), not a refused or reset connection. Only the router forwards (``ip_forward`` is set
in its namespace alone); the test's own namespace reaches the hosts through one more veth pair and one route.

Everything is named after the run (``mh<pid>``) and made in a block of 198.18.0.0/15 (RFC 2544's benchmarking
network, never routed) that no route of this machine covers; ``close`` removes what ``open`` made and nothing else.
"""

from __future__ import annotations

import atexit
import ipaddress
import json
import os
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

NETWORK = ipaddress.IPv4Network("198.18.0.0/15")
BLOCK_PREFIX = 24
LINK_PREFIX = 29
# Partition rules sit before the main table's lookup (32766).
CUT_PRIORITY = 100
NETNS_DIR = Path("/run/netns")


class NetworkError(Exception):
    """An ``ip`` command failed."""


def ip(*args: str, check: bool = True) -> str:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise NetworkError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def unavailable() -> str | None:
    """Why this machine cannot make hosts of network namespaces (None when it can)."""
    if os.geteuid() != 0:
        return "the multi-host topology makes network namespaces and veth pairs, which needs root"
    if shutil.which("ip") is None:
        return "the multi-host topology needs iproute2's ip command"
    probe = f"mhprobe{os.getpid()}"
    try:
        ip("netns", "add", probe)
    except NetworkError as exc:
        return f"this machine cannot make network namespaces ({exc})"
    ip("netns", "del", probe, check=False)
    return None


@dataclass(frozen=True)
class Host:
    """One host: its namespace and its addresses (the first is the host's own)."""

    name: str
    namespace: str
    addresses: tuple[str, ...]

    @property
    def address(self) -> str:
        return self.addresses[0]

    @property
    def namespace_file(self) -> Path:
        return NETNS_DIR / self.namespace

    def command(self, *argv: str) -> list[str]:
        """``argv`` run inside this host's namespace."""
        return ["ip", "netns", "exec", self.namespace, *argv]


class Network:
    """The router, the hosts and the test's link to them, made by ``open`` and removed by ``close``."""

    def __init__(self, tag: str | None = None) -> None:
        self.tag = tag or f"mh{os.getpid()}"
        self.router = f"{self.tag}-net"
        self.client_link = f"{self.tag}c"
        self.hosts: dict[str, Host] = {}
        self.block: ipaddress.IPv4Network | None = None
        self._namespaces: list[str] = []
        self._client_link_made = False

    def open(self, hosts: Mapping[str, int]) -> dict[str, Host]:
        """Make the router and a host for each of ``hosts`` (name: how many addresses it has), and link the
        test's namespace to them; the hosts by name. Whatever was made is removed again if a step fails."""
        atexit.register(self.close)
        try:
            self._add_namespace(self.router)
            ip("netns", "exec", self.router, "sysctl", "-qw", "net.ipv4.ip_forward=1")
            links = self._claim_block(len(hosts))
            for (name, count), link in zip(hosts.items(), links, strict=True):
                self.hosts[name] = self._add_host(name, link, count)
        except BaseException:
            self.close()
            raise
        return self.hosts

    def _add_namespace(self, name: str) -> None:
        ip("netns", "add", name)
        self._namespaces.append(name)
        ip("-n", name, "link", "set", "lo", "up")

    def _claim_block(self, hosts: int) -> list[ipaddress.IPv4Network]:
        """Link the test's namespace to the router in the first free block (its route is the claim: a second run
        that picked the same block fails to add it and tries the next); the blocks' links for the hosts."""
        ip("link", "add", self.client_link, "type", "veth", "peer", "name", "client", "netns", self.router)
        self._client_link_made = True
        ip("link", "set", self.client_link, "up")
        ip("-n", self.router, "link", "set", "client", "up")
        taken = _routed_networks()
        blocks = list(NETWORK.subnets(new_prefix=BLOCK_PREFIX))
        start = os.getpid() % len(blocks)
        for block in blocks[start:] + blocks[:start]:
            if any(block.overlaps(network) for network in taken):
                continue
            links = list(block.subnets(new_prefix=LINK_PREFIX))
            client = links[hosts]
            router, ours = str(client[1]), str(client[2])
            ip("addr", "add", f"{ours}/32", "dev", self.client_link)
            try:
                ip("route", "add", str(block), "via", router, "dev", self.client_link, "onlink", "src", ours)
            except NetworkError:
                ip("addr", "del", f"{ours}/32", "dev", self.client_link, check=False)
                continue
            ip("-n", self.router, "addr", "add", f"{router}/{LINK_PREFIX}", "dev", "client")
            self.block = block
            return links[:hosts]
        raise NetworkError(f"no free /{BLOCK_PREFIX} left in {NETWORK}")

    def _add_host(self, name: str, link: ipaddress.IPv4Network, count: int) -> Host:
        namespace = f"{self.tag}-{name}"
        self._add_namespace(namespace)
        ip("-n", self.router, "link", "add", name, "type", "veth", "peer", "name", "eth0", "netns", namespace)
        router = str(link[1])
        ip("-n", self.router, "addr", "add", f"{router}/{LINK_PREFIX}", "dev", name)
        ip("-n", self.router, "link", "set", name, "up")
        addresses = tuple(str(link[2 + index]) for index in range(count))
        for address in addresses:
            ip("-n", namespace, "addr", "add", f"{address}/{LINK_PREFIX}", "dev", "eth0")
        ip("-n", namespace, "link", "set", "eth0", "up")
        ip("-n", namespace, "route", "add", "default", "via", router)
        return Host(name, namespace, addresses)

    # ---- partitions ------------------------------------------------------------------------------------

    def cut(self, a: str, b: str) -> None:
        """From now on the router drops every packet between addresses ``a`` and ``b``, both ways."""
        for source, destination in ((a, b), (b, a)):
            ip("-n", self.router, "rule", "add", *_rule(source, destination))

    def heal(self, a: str, b: str) -> None:
        """Forward the packets between ``a`` and ``b`` again."""
        for source, destination in ((a, b), (b, a)):
            ip("-n", self.router, "rule", "del", *_rule(source, destination))

    @contextmanager
    def partitioned(self, a: str, b: str) -> Iterator[None]:
        """``a`` and ``b`` cannot reach each other inside the block."""
        self.cut(a, b)
        try:
            yield
        finally:
            self.heal(a, b)

    # ---- removal ---------------------------------------------------------------------------------------

    def close(self) -> None:
        """Remove the namespaces (their veth pairs go with them) and the test's link (and its route). Processes
        still running in a namespace keep it alive until they exit: stop them first."""
        while self._namespaces:
            ip("netns", "del", self._namespaces.pop(), check=False)
        if self._client_link_made:
            # Gone already when the router's namespace took its peer with it.
            ip("link", "del", self.client_link, check=False)
            self._client_link_made = False
        self.block = None
        atexit.unregister(self.close)


def _rule(source: str, destination: str) -> tuple[str, ...]:
    return ("from", source, "to", destination, "blackhole", "priority", str(CUT_PRIORITY))


def _routed_networks() -> list[ipaddress.IPv4Network]:
    """Every IPv4 network this namespace has a route or an address in (the default route aside)."""
    routes = json.loads(ip("-j", "-4", "route", "show", "table", "all") or "[]")
    networks = []
    for route in routes:
        destination = route.get("dst", "default")
        if destination != "default":
            networks.append(ipaddress.IPv4Network(destination, strict=False))
    return networks

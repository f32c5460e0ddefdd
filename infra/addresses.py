"""Client addresses: which are on the home network, which are the reverse proxy, and what one
client is for counting (an IPv6 client owns a whole /64, so counting /128s counts nothing)."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable

import psutil

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

# The home network, spelled out: Python's is_private also counts 6to4 (2002::/16), Teredo
# (2001::/32), documentation and benchmarking ranges, which an internet client can reach from.
LAN_NETWORKS: tuple[Network, ...] = tuple(
    ipaddress.ip_network(n)
    for n in (
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "::1/128",
        "fc00::/7",
        "fe80::/10",
    )
)
LOOPBACK = ("127.0.0.0/8", "::1/128")


def parse(text: str) -> Address | None:
    """The address in text, an IPv4-mapped IPv6 address as its IPv4 one; None if it is none."""
    try:
        address = ipaddress.ip_address(text.strip().split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def networks(specs: Iterable[str], *, setting: str) -> tuple[Network, ...]:
    """Networks from CIDR or plain addresses; ValueError naming the setting on a bad one."""
    found = []
    for spec in specs:
        try:
            found.append(ipaddress.ip_network(spec.strip(), strict=False))
        except ValueError:
            example = "e.g. 192.168.1.2 or 10.0.0.0/8"
            raise ValueError(f"{setting}: {spec!r} is not an address or a network ({example}).") from None
    return tuple(found)


def within(text: str, nets: Iterable[Network]) -> bool:
    address = parse(text)
    return address is not None and any(address in net for net in nets)


def is_lan(text: str) -> bool:
    """Whether an address is this machine or the home network (LAN_NETWORKS)."""
    return within(text, LAN_NETWORKS)


def client_key(text: str) -> str:
    """One client, for counting: an IPv4 address, or an IPv6 address's /64."""
    address = parse(text)
    if address is None:
        return text or "unknown"
    if isinstance(address, ipaddress.IPv6Address):
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


def own_hosts() -> list[str]:
    """The names and addresses this machine answers to, as a Host header spells them: localhost,
    its host name (and name.local, as mDNS announces it), every interface's address."""
    name = socket.gethostname()
    hosts = ["localhost", "127.0.0.1", "[::1]", name, f"{name}.local"]
    for interface in psutil.net_if_addrs().values():
        for entry in interface:
            if entry.family == socket.AF_INET:
                hosts.append(entry.address)
            elif entry.family == socket.AF_INET6:
                hosts.append(f"[{entry.address.split('%', 1)[0]}]")
    return list(dict.fromkeys(hosts))

"""Which addresses the direct fetch may reach: public ones only, unless a network is allowed.

Why: the agent chooses the URLs it visits, so without a check a direct fetch would read
the machine's own services (127.0.0.1), the local network (10.0.0.0/8, 192.168.0.0/16) or a
cloud metadata endpoint (169.254.169.254) and show them to the policy. Every address the host
name resolves to is checked, and each redirect hop again. The check resolves the name itself
and httpx resolves it again to connect, so a name whose DNS answer flips between the two (DNS
rebinding) is not covered; no proxy is assumed.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Sequence
from urllib.parse import urlsplit

from wikisim.backends.executor import TransientBackendError
from wikisim.errors import ConfigError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def _kind(ip: IPAddress) -> str | None:
    """Why an address is not public ("loopback", "private", ...), or None for a public one."""
    for kind in ("loopback", "unspecified", "link_local", "multicast", "private", "reserved"):
        if getattr(ip, f"is_{kind}"):
            return kind.replace("_", "-")
    return None if ip.is_global else "non-public"


class AddressGuard:
    """`refusal(url)`: None when every address of the URL's host is public or allowed, else why not.

    Args:
        allow: networks reachable although not public, e.g. ("127.0.0.1/32",) for a test server.
    """

    def __init__(self, allow: Sequence[str] = ()) -> None:
        if isinstance(allow, str):
            allow = (allow,)
        try:
            self.allow: tuple[IPNetwork, ...] = tuple(
                ipaddress.ip_network(n, strict=False) for n in allow
            )
        except ValueError as e:
            raise ConfigError(
                f"allowed fetch networks must be CIDR networks like '127.0.0.1/32': {e}"
            ) from e

    def refusal(self, url: str) -> str | None:
        parts = urlsplit(url)
        host = parts.hostname
        if not host:
            return f"The direct fetch refused {url!r}: it names no host."
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            return f"The direct fetch refused {url!r}: its port is not a number from 0 to 65535."
        for address in _resolve(host, port):
            ip = ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone id
            if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
                ip = ip.ipv4_mapped
            kind = _kind(ip)
            if kind is not None and not any(ip in net for net in self.allow):
                return (
                    f"The direct fetch refused {host}: it resolves to a {kind} address, and only public "
                    "web addresses are fetched."
                )
        return None


def _resolve(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (
        socket.gaierror,
        UnicodeError,
    ) as e:  # as httpx's failed connect would: maybe a DNS blip
        raise TransientBackendError(f"cannot resolve the host ({type(e).__name__})") from e
    return [str(info[4][0]) for info in infos]

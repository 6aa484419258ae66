"""Where a planned llama-server listens, seen from the host: its addresses, whether it is loopback only,
and the URL that asks its /health.

Shared by the role's plan summary (systemd) and the compose runtime, whose containers use host
networking and so answer on the same addresses. Pure.
"""

from __future__ import annotations

import ipaddress

# Loki's defaults (planner.DEFAULTS takes them from here) when neither the preset nor EXTRA_ARGS set them.
DEFAULT_HOST = "0.0.0.0"
DEFAULT_PORT = "8080"


def _is_loopback(address: str) -> bool:
    address = address.strip()
    if address.endswith(".sock"):
        return True  # a UNIX socket: not reachable over the network
    if address.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def listen_addresses(host: str) -> list[str]:
    """The addresses of a --host value (comma-separated since recent engines)."""
    return [part.strip() for part in str(host or DEFAULT_HOST).split(",") if part.strip()] or [DEFAULT_HOST]


def loopback_only(host: str) -> bool:
    """True when every address of a --host value is loopback or a UNIX socket."""
    return all(_is_loopback(address) for address in listen_addresses(host))


def health_target(host: str, port) -> dict:
    """Where to ask /health from the host itself: {url, unix_socket}."""
    first = listen_addresses(host)[0]
    if first.endswith(".sock"):
        return {"url": "http://localhost/health", "unix_socket": first}
    bare = first.strip("[]")
    try:
        ip = ipaddress.ip_address(bare)
    except ValueError:
        return {"url": f"http://{first}:{port}/health", "unix_socket": ""}
    if ip.is_unspecified:
        target = "[::1]" if ip.version == 6 else "127.0.0.1"
    else:
        target = f"[{bare}]" if ip.version == 6 else bare
    return {"url": f"http://{target}:{port}/health", "unix_socket": ""}

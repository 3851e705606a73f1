"""Where a webhook may go (SSRF guard).

An endpoint's URL is checked when it is saved and again at every send, after resolving its
host: a name that resolved to a public address at save time may resolve to 127.0.0.1 or the
cloud's metadata address later (DNS rebinding). The request then goes to the address that was
checked (casework/outbox/sender.py), not to a second lookup.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError

# Named although link-local covers most: cloud metadata services.
METADATA = {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254"),
            ipaddress.ip_address("100.100.100.200")}


def _allowed(host: str, address=None) -> bool:
    for entry in settings.WEBHOOK_ALLOWED_HOSTS:
        entry = entry.strip().lower()
        if not entry:
            continue
        if entry == host.lower():
            return True
        if address is not None:
            try:
                if address in ipaddress.ip_network(entry, strict=False):
                    return True
            except ValueError:
                continue
    return False


def _refused(address) -> str:
    if getattr(address, "ipv4_mapped", None):
        address = address.ipv4_mapped
    if address in METADATA:
        return "a cloud metadata address"
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_private or address.is_reserved or address.is_unspecified or address.is_multicast \
            or address in ipaddress.ip_network("100.64.0.0/10"):
        return "a private or reserved address"
    return ""


def url_parts(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError({"url": "Give an http(s) URL with a host."})
    if parts.username or parts.password:
        raise ValidationError({"url": "Put no user name or password in the URL."})
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise ValidationError({"url": "The port is not a number from 1 to 65535."}) from exc
    return parts.scheme, parts.hostname, port


def url_resolve_checked(url: str) -> list[str]:
    """The addresses `url`'s host resolves to, all of them allowed; raises ValidationError
    naming the first refused one. Plain http only under DEBUG or for an allow-listed host."""
    scheme, host, port = url_parts(url)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise ValidationError({"url": f"{host} does not resolve."}) from exc
    addresses = list(dict.fromkeys(info[4][0] for info in infos))
    host_allowed = _allowed(host)
    for text in addresses:
        address = ipaddress.ip_address(text.split("%")[0])
        why = _refused(address)
        if why and not (host_allowed or _allowed(host, address)):
            raise ValidationError({"url": f"{host} resolves to {address}, {why}; "
                                          "name it in WEBHOOK_ALLOWED_HOSTS to allow it."})
    if scheme != "https" and not (settings.DEBUG or host_allowed
                                  or all(_allowed(host, ipaddress.ip_address(a.split("%")[0])) for a in addresses)):
        raise ValidationError({"url": "Use https (plain http only under DEBUG or for a host in WEBHOOK_ALLOWED_HOSTS)."})
    return addresses

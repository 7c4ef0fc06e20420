"""Where a model API key may be sent: never to a link-local or cloud-metadata address.

A base URL at 169.254.169.254 would send prompts (and the API key) to an endpoint that hands out
instance credentials. The check must read the host as the HTTP client will: httpx passes a host
it does not recognise as dotted-quad to the resolver, and the resolver reads `inet_aton` forms
(hex `0xa9.0xfe.0xa9.0xfe`, octal, one decimal integer, the short forms `a.b` and `a.b.c`), so a
check on `ipaddress` alone lets those through. Each host is therefore read by all three
parsers (`ipaddress`, `socket.inet_aton`, `getaddrinfo` with `AI_NUMERICHOST`, which never touches
the network), after the spellings a URL adds (percent-encoding, a trailing dot, a zone id,
full-width digits), and IPv6 forms that carry an IPv4 address (mapped, compatible, 6to4, Teredo,
NAT64) are checked on that address too. A name that would resolve into those ranges is not
caught: resolving here would leak the name and race the client's own lookup.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import unicodedata
from urllib.parse import unquote, urlsplit

import httpx2

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

METADATA_HOSTS = {"metadata", "metadata.google.internal", "metadata.azure.internal"}
METADATA_IPS = {ipaddress.ip_address("fd00:ec2::254"), ipaddress.ip_address("100.100.100.200")}
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def _spellings(host: str) -> set[str]:
    """The host as each layer may read it."""
    out = set()
    for h in {host, unquote(host)}:
        h = unicodedata.normalize("NFKC", h).strip().lower()
        h = h.removeprefix("[").removesuffix("]")
        out |= {h, h.rstrip("."), h.partition("%")[0]}
    return {h for h in out if h}


def addresses(host: str) -> set[Address]:
    """Every IP address any of the parsers reads `host` as (empty for a plain name)."""
    found: set[Address] = set()
    for h in _spellings(host):
        with contextlib.suppress(ValueError):
            found.add(ipaddress.ip_address(h))
        with contextlib.suppress(OSError, ValueError):
            found.add(ipaddress.IPv4Address(socket.inet_aton(h)))
        try:
            infos = socket.getaddrinfo(h, None, flags=socket.AI_NUMERICHOST)
        except (OSError, UnicodeError, ValueError):
            infos = []
        for info in infos:
            found.add(ipaddress.ip_address(str(info[4][0]).partition("%")[0]))
    for address in list(found):
        if isinstance(address, ipaddress.IPv6Address):
            found |= _embedded(address)
    return found


def _embedded(address: ipaddress.IPv6Address) -> set[Address]:
    """The IPv4 address an IPv6 form routes to, where it carries one."""
    out: set[Address] = set()
    if address.ipv4_mapped is not None:
        out.add(address.ipv4_mapped)
    if address.sixtofour is not None:
        out.add(address.sixtofour)
    if address.teredo is not None:
        out |= set(address.teredo)
    packed = int(address)
    if address in _NAT64 or (packed >> 32 == 0 and packed > 1):  # NAT64, IPv4-compatible
        out.add(ipaddress.IPv4Address(packed & 0xFFFFFFFF))
    return out


def forbidden(address: Address) -> bool:
    return address.is_link_local or address in METADATA_IPS


def check_base_url(url: str, allow_any_host: bool = False, what: str = "openai base URL") -> str:
    """Return `url` if it is an http(s) URL the client can use, whose host is not link-local or
    a metadata service; ValueError (never the client's own InvalidURL traceback) otherwise."""
    parsed = urlsplit(url)
    shown = redact_userinfo(url)
    try:
        client_host = httpx2.URL(url).host
    except (httpx2.InvalidURL, ValueError, TypeError) as err:
        raise ValueError(f"{what} {shown!r} is not a URL the HTTP client accepts: {err}") from err
    if parsed.scheme not in {"http", "https"} or not parsed.hostname or not client_host:
        raise ValueError(f"{what} must be http(s)://host[:port]/path, not {shown!r}")
    if allow_any_host:
        return url
    hosts = {parsed.hostname, client_host}
    names = {s.rstrip(".") for h in hosts for s in _spellings(h)}
    if names & METADATA_HOSTS or any(forbidden(a) for h in hosts for a in addresses(h)):
        raise ValueError(
            f"{what} {shown!r} points at a link-local or cloud-metadata address; "
            "set WIKIQA_ALLOW_ANY_HOST=1 if you really mean it"
        )
    return url


def redact_userinfo(url: str) -> str:
    """`url` without a `user:password@` part: what a spec records and prints."""
    try:
        parsed = urlsplit(url)
    except ValueError:
        return url.rpartition("@")[2]
    if "@" not in parsed.netloc:
        return url
    return parsed._replace(netloc="***@" + parsed.netloc.rpartition("@")[2]).geturl()

"""Where a key may be sent (issue 23, item 5): every spelling of a metadata address is refused.

The spellings come from the three parsers a URL meets on its way to a socket: `ipaddress`,
`socket.inet_aton` (what the resolver uses for numeric hosts) and the HTTP client's own URL
parser. Each spelling is first checked to really be read as the forbidden address by one of
them, so the list cannot quietly hold strings nothing would connect to.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket

import httpx2
import pytest

from wikiqa.models.hosts import addresses, check_base_url
from wikiqa.registry import open_model

META = ipaddress.ip_address("169.254.169.254")

IPV4_SPELLINGS = [
    "169.254.169.254", "169.254.169.254.", "0xa9.0xfe.0xa9.0xfe", "0XA9.0XFE.0XA9.0XFE",
    "0xa9fea9fe", "2852039166", "025177524776", "169.254.43518", "169.16689662",
    "0xa9.254.0251.254", "0251.0376.0251.0376", "%31%36%39.254.169.254", "169.254.169.254%2e",
]  # fmt: skip
IPV6_SPELLINGS = [
    "[::ffff:169.254.169.254]", "[::ffff:a9fe:a9fe]", "[0:0:0:0:0:ffff:a9fe:a9fe]",
    "[::169.254.169.254]", "[64:ff9b::a9fe:a9fe]", "[2002:a9fe:a9fe::1]",
    "[fe80::1]", "[fe80::1%25eth0]", "[FE80::A9FE:A9FE%251]", "[fd00:ec2::254]",
    "[fd00:0ec2:0000:0000:0000:0000:0000:0254]",
]  # fmt: skip
NAMES = ["metadata", "metadata.google.internal", "METADATA.google.internal.",
         "metadata.azure.internal", "100.100.100.200"]  # fmt: skip


def _read_as(host: str) -> set[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """What the independent parsers make of `host` (the test's own reading, not the code's)."""
    from urllib.parse import unquote

    h = unquote(host).strip("[]").rstrip(".").partition("%")[0]
    out: set[ipaddress.IPv4Address | ipaddress.IPv6Address] = set()
    with contextlib.suppress(ValueError):
        out.add(ipaddress.ip_address(h))
    with contextlib.suppress(OSError):
        out.add(ipaddress.IPv4Address(socket.inet_aton(h)))
    return out


@pytest.mark.parametrize("host", IPV4_SPELLINGS)
def test_every_ipv4_spelling_of_the_metadata_address_is_refused(host: str) -> None:
    assert META in _read_as(host)  # the spelling really is 169.254.169.254
    with pytest.raises(ValueError, match=r"link-local or cloud-metadata|HTTP client accepts"):
        check_base_url(f"http://{host}/v1")
    with pytest.raises(ValueError):  # the same through a model spec (CLI, env, notebook -p)
        open_model(f"openai:x@http://{host}/v1")


@pytest.mark.parametrize("host", IPV6_SPELLINGS)
def test_every_ipv6_spelling_is_refused(host: str) -> None:
    assert addresses(host.strip("[]").replace("%25", "%"))
    with pytest.raises(ValueError, match="link-local or cloud-metadata"):
        check_base_url(f"http://{host}/v1")


@pytest.mark.parametrize("host", NAMES)
def test_metadata_names_are_refused(host: str) -> None:
    with pytest.raises(ValueError, match="link-local or cloud-metadata"):
        check_base_url(f"http://{host}/v1")


def test_the_http_client_reads_hex_as_the_resolver_does() -> None:
    """Why inet_aton matters: httpx passes `0xa9.0xfe.0xa9.0xfe` on unchanged, and the
    resolver reads it as 169.254.169.254."""
    host = httpx2.URL("http://0xa9.0xfe.0xa9.0xfe/v1").host
    infos = socket.getaddrinfo(host, None, flags=socket.AI_NUMERICHOST)
    assert {i[4][0] for i in infos} == {"169.254.169.254"}


def test_a_url_the_client_rejects_is_a_clear_error_not_a_traceback() -> None:
    with pytest.raises(ValueError, match="not a URL the HTTP client accepts"):
        check_base_url("http://0251.0376.0251.0376/v1")
    with pytest.raises(ValueError, match="not a URL the HTTP client accepts"):
        check_base_url("http://0251.0376.0251.0376/v1", allow_any_host=True)


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:11434/v1", "http://0x7f.0.0.1:8080/v1", "https://api.example.com/v1",
     "http://[::1]:8000/v1", "http://10.1.2.3:8000/v1", "http://localhost:8080/v1"],
)  # fmt: skip
def test_ordinary_hosts_pass(url: str) -> None:
    assert check_base_url(url) == url


def test_the_cli_refuses_hex_metadata_with_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    from wikiqa.cli import main

    for host in ("0xa9.0xfe.0xa9.0xfe", "169.254.43518", "0251.0376.0251.0376"):
        assert main(["ask", "Q", "--model", f"openai:x@http://{host}/v1"]) == 1
        err = capsys.readouterr().err
        assert "Traceback" not in err and host in err

"""`make docs` publishes what the checkout holds and nothing else: a file a page links to is
copied into the site only when it is a regular file inside the checkout (a committed symlink to
`/proc/self/environ` would publish the build's environment), and raw HTML in a write-up is shown
as text, never run by the page."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MKDOCS = Path(sys.executable).parent / "mkdocs"
pytestmark = pytest.mark.slow


def _checkout(tmp_path: Path) -> Path:
    """The files git tracks, linked (or copied) into a fresh folder: a checkout to plant in."""
    listing = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    copy = tmp_path / "checkout"
    for name in filter(None, listing.split("\0")):
        source, target = ROOT / name, copy / name
        if not source.is_file() or source.is_symlink():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(source, target)
        except OSError:
            shutil.copy2(source, target)
    return copy


def _add_to_write_up(checkout: Path, text: str) -> None:
    """Text at the end of a write-up in the site's nav (a new file, not the linked original)."""
    page = checkout / "results" / "reports" / "injection.md"
    old = page.read_text(encoding="utf-8")
    page.unlink()
    page.write_text(old + "\n" + text, encoding="utf-8")


def _build(checkout: Path) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"NO_MKDOCS_2_WARNING": "1", "BUILD_SECRET_KEY": "sk-build-secret-771"}
    return subprocess.run(
        [str(MKDOCS), "build", "-d", str(checkout / "site")],
        cwd=checkout, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def _site_text(site: Path) -> str:
    return "".join(
        p.read_text(encoding="utf-8", errors="replace") for p in site.rglob("*") if p.is_file()
    )


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_a_linked_symlink_is_not_published(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_text("sk-outside-file-5521")
    reports = checkout / "results" / "reports"
    (reports / "notes.txt").symlink_to("/proc/self/environ")
    (reports / "elsewhere.txt").symlink_to(outside)
    (reports / "linked").symlink_to(tmp_path)
    _add_to_write_up(
        checkout, "[env](notes.txt), [file](elsewhere.txt), [dir](linked/outside.txt)\n"
    )
    built = _build(checkout)
    site = _site_text(checkout / "site") if (checkout / "site").exists() else ""
    assert "sk-build-secret-771" not in site and "sk-outside-file-5521" not in site
    assert built.returncode != 0  # strict: a link to what is not published is a broken link
    said = built.stderr + built.stdout
    assert all(
        f"link '{name}'" in said for name in ("notes.txt", "elsewhere.txt", "linked/outside.txt")
    )


def test_raw_html_in_a_write_up_is_shown_as_text(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path)
    _add_to_write_up(
        checkout,
        "A <script>alert(1)</script> and <img src=x onerror=alert(2)> here.\n\n"
        '<div onclick="alert(3)">block</div>\n\n`<kept>` in code.\n',
    )
    built = _build(checkout)
    assert built.returncode == 0, built.stderr
    page = (checkout / "site" / "reports" / "injection.html").read_text(encoding="utf-8")
    assert "<script>alert" not in page and "<img src=x" not in page and "<div onclick" not in page
    assert "&lt;script&gt;alert(1)" in page and "onerror=alert(2)" in page
    assert "<code>&lt;kept&gt;</code>" in page

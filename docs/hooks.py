"""MkDocs hooks: the site is `docs/`, plus the README as its home page and the write-ups of
`results/reports/` as `reports/`, plus the two generated reference pages.

Every page links to the others by its path in the repository (`../results/reports/x.md` from a
docs page, `docs/loop.md` from the README), so the links work where the files are read in place
(a clone, a code host). Here they are rewritten to the site's pages. A repository file a page
links to that is not a page (an executed notebook, a figures file) is copied into the site under
`repo/`, its path kept, and linked there; a link to a folder becomes its path in code. A link to
nothing is a warning, which `strict: true` turns into a failed build, as mkdocs does for links
between docs pages.

Only a regular file inside the checkout, reached through no symlink, is a page or is copied: a
committed link (`notes.txt -> /proc/self/environ`) would otherwise publish what it points at, the
build's environment and its keys included; a link to one is a link to nothing. And raw HTML in a
page's prose is escaped, shown as the text it is: a write-up's `<script>` or `onerror=` never
runs in the page.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_reference

ROOT = Path(__file__).resolve().parent.parent


def _published(repo_path: str) -> bool:
    """Whether `repo_path` (relative to the checkout) is a regular file inside it, with no
    symlink on the way: the only kind of file the site copies or renders."""
    if repo_path.startswith(("..", "/")):
        return False
    current = ROOT
    for part in Path(repo_path).parts:
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except OSError:
            return False
        if stat.S_ISLNK(mode):
            return False
    return stat.S_ISREG(mode)


# repository path -> the page it becomes in the site
EXTRA = {"README.md": "index.md"} | {
    f"results/reports/{p.name}": f"reports/{p.name}"
    for p in sorted((ROOT / "results" / "reports").glob("*.md"))
    if _published(f"results/reports/{p.name}")
}
FENCE = re.compile(r"^(```|~~~)")
LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")


def on_pre_build(config: Any) -> None:
    gen_reference.write(Path(config["docs_dir"]))


def on_files(files: Files, config: Any) -> Files:
    for repo_path, uri in EXTRA.items():
        files.append(File.generated(config, uri, abs_src_path=str(ROOT / repo_path)))
    docs_dir = Path(config["docs_dir"]).resolve()
    pages = _site_pages(files, docs_dir)
    for path in sorted(_linked_files(files, docs_dir) - set(pages)):
        files.append(File.generated(config, f"repo/{path}", abs_src_path=str(ROOT / path)))
    return files


def _linked_files(files: Files, docs_dir: Path) -> set[str]:
    """The repository files (not folders) the site's pages link to."""
    found = set()
    for file in files:
        if not file.src_uri.endswith(".md") or file.abs_src_path is None:
            continue
        here = _repo_path(file, docs_dir)
        for target in LINK.findall(Path(file.abs_src_path).read_text(encoding="utf-8")):
            path = target[2].partition("#")[0]
            if not path or re.match(r"^[a-z][a-z0-9+.-]*:", path) or path.startswith("/"):
                continue
            repo_path = posixpath.normpath(posixpath.join(posixpath.dirname(here), path))
            if _published(repo_path):
                found.add(repo_path)
    return found


def _repo_path(file: File, docs_dir: Path) -> str:
    """Where a page's source lives in the repository."""
    for repo_path, uri in EXTRA.items():
        if file.src_uri == uri:
            return repo_path
    return (docs_dir.relative_to(ROOT) / file.src_uri).as_posix()


def _site_pages(files: Files, docs_dir: Path) -> dict[str, str]:
    """repository path -> site page, for every markdown page of the site."""
    return {_repo_path(f, docs_dir): f.src_uri for f in files if f.src_uri.endswith(".md")}


def _rewrite(match: re.Match[str], here: str, uri: str, pages: dict[str, str]) -> str:
    bang, text, target = match.groups()
    if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith(("#", "/")):
        return match.group(0)
    path, _, fragment = target.partition("#")
    repo_path = posixpath.normpath(posixpath.join(posixpath.dirname(here), path))
    anchor = f"#{fragment}" if fragment else ""
    if repo_path in pages:
        page = pages[repo_path]
        relative = posixpath.relpath(page, posixpath.dirname(uri) or ".")
        return f"{bang}[{text}]({relative}{anchor})"
    if repo_path.startswith("..") or not (ROOT / repo_path).exists():
        return match.group(0)  # mkdocs warns: a link to nothing (strict: the build fails)
    if (ROOT / repo_path).is_symlink() or (ROOT / repo_path).is_file():
        if not _published(repo_path):  # a link, or under one: not copied, so a broken link
            return match.group(0)
        # copied into the site by on_files
        relative = posixpath.relpath(f"repo/{repo_path}", posixpath.dirname(uri) or ".")
        return f"{bang}[{text}]({relative}{anchor})"
    plain = text.strip("`")
    if plain.rstrip("/").endswith(posixpath.basename(repo_path)):
        return text if text.startswith("`") else f"`{plain}`"
    return f"{text} (`{repo_path}`)"


def _table_pipes(line: str) -> str:
    """A table row's code spans with `\\|` made `|`: a code host's tables need the escape in
    code, mkdocs's (Python-Markdown) would show it, and split on no pipe inside code anyway."""
    if not line.startswith("|"):
        return line
    return INLINE_CODE.sub(lambda m: m.group(0).replace("\\|", "|"), line)


def _rewrite_text(text: str, here: str, uri: str, pages: dict[str, str]) -> str:
    """Markdown outside code blocks, its links rewritten; a link inside inline code is text,
    and left as it is. A link's text may run over a line break."""
    text = "\n".join(_table_pipes(line) for line in text.split("\n"))
    code = [m.span() for m in INLINE_CODE.finditer(text)]

    def one(m: re.Match[str]) -> str:
        if any(start < m.start() < end for start, end in code):
            return m.group(0)
        return _rewrite(m, here, uri, pages)

    return _escape_html(LINK.sub(one, text))


def _escape_html(text: str) -> str:
    """Prose with every `<` outside inline code written `&lt;`: Python-Markdown passes raw HTML
    (inline and block) through to the page; in code it is escaped already."""
    out, last = [], 0
    for m in INLINE_CODE.finditer(text):
        out += [text[last : m.start()].replace("<", "&lt;"), m.group(0)]
        last = m.end()
    return "".join([*out, text[last:].replace("<", "&lt;")])


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    docs_dir = Path(config["docs_dir"]).resolve()
    here = _repo_path(page.file, docs_dir)
    pages = _site_pages(files, docs_dir)
    out, prose, fenced = [], [], False
    for line in markdown.split("\n"):
        if FENCE.match(line.lstrip()):
            if not fenced:
                out.append(_rewrite_text("\n".join(prose), here, page.file.src_uri, pages))
                prose = []
            fenced = not fenced
            out.append(line)
        elif fenced:
            out.append(line)
        else:
            prose.append(line)
    out.append(_rewrite_text("\n".join(prose), here, page.file.src_uri, pages))
    return "\n".join(out)

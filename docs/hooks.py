"""MkDocs hooks: the site is `docs/`, plus the README as its home page and the write-ups of
`results/reports/` as `reports/`, plus the two generated reference pages.

Every page links to the others by its path in the repository (`../results/reports/x.md` from a
docs page, `docs/loop.md` from the README), so the links work where the files are read in place
(a clone, a code host). Here they are rewritten to the site's pages. A link to a repository file
that is not a page (a notebook, a module) becomes its path in code, or a link to it under
`repo_url` when mkdocs.yml sets one. A link to nothing is a warning, which `strict: true` turns
into a failed build, as mkdocs does for links between docs pages.
"""

from __future__ import annotations

import posixpath
import re
import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_reference

ROOT = Path(__file__).resolve().parent.parent

# repository path -> the page it becomes in the site
EXTRA = {"README.md": "index.md"} | {
    f"results/reports/{p.name}": f"reports/{p.name}"
    for p in sorted((ROOT / "results" / "reports").glob("*.md"))
}
FENCE = re.compile(r"^(```|~~~)")
LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")


def on_pre_build(config: Any) -> None:
    gen_reference.write(Path(config["docs_dir"]))


def on_files(files: Files, config: Any) -> Files:
    for repo_path, uri in EXTRA.items():
        files.append(File.generated(config, uri, abs_src_path=str(ROOT / repo_path)))
    return files


def _repo_path(file: File, docs_dir: Path) -> str:
    """Where a page's source lives in the repository."""
    for repo_path, uri in EXTRA.items():
        if file.src_uri == uri:
            return repo_path
    return (docs_dir.relative_to(ROOT) / file.src_uri).as_posix()


def _site_pages(files: Files, docs_dir: Path) -> dict[str, str]:
    """repository path -> site page, for every markdown page of the site."""
    return {_repo_path(f, docs_dir): f.src_uri for f in files if f.src_uri.endswith(".md")}


def _rewrite(
    match: re.Match[str], here: str, uri: str, pages: dict[str, str], repo_url: str | None
) -> str:
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
    if repo_url:
        return f"{bang}[{text}]({repo_url.rstrip('/')}/blob/HEAD/{repo_path}{anchor})"
    plain = text.strip("`")
    if plain.rstrip("/").endswith(posixpath.basename(repo_path)):
        return text if text.startswith("`") else f"`{plain}`"
    return f"{text} (`{repo_path}`)"


def _rewrite_text(
    text: str, here: str, uri: str, pages: dict[str, str], repo_url: str | None
) -> str:
    """Markdown outside code blocks, its links rewritten; a link inside inline code is text,
    and left as it is. A link's text may run over a line break."""
    code = [m.span() for m in INLINE_CODE.finditer(text)]

    def one(m: re.Match[str]) -> str:
        if any(start < m.start() < end for start, end in code):
            return m.group(0)
        return _rewrite(m, here, uri, pages, repo_url)

    return LINK.sub(one, text)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    docs_dir = Path(config["docs_dir"]).resolve()
    here = _repo_path(page.file, docs_dir)
    pages = _site_pages(files, docs_dir)
    repo_url = config.get("repo_url")
    out, prose, fenced = [], [], False
    for line in markdown.split("\n"):
        if FENCE.match(line.lstrip()):
            if not fenced:
                out.append(
                    _rewrite_text("\n".join(prose), here, page.file.src_uri, pages, repo_url)
                )
                prose = []
            fenced = not fenced
            out.append(line)
        elif fenced:
            out.append(line)
        else:
            prose.append(line)
    out.append(_rewrite_text("\n".join(prose), here, page.file.src_uri, pages, repo_url))
    return "\n".join(out)

"""Live Wikipedia through the MediaWiki Action API, using mwclient.

One `get_article` is one API call: extracts (plain text), revision id and lead wikitext (for the
infobox), canonical url and the disambiguation page prop, with redirects followed.

All retrying happens in one policy (`wikiqa.retry`), so it can honour Retry-After: mwclient's own
retry loop is switched off (`max_retries=0`) because it sleeps a fixed schedule and does not
retry 429 at all. A requests response hook turns 429, 5xx and replication-lag responses into a
retryable error carrying the server's Retry-After before mwclient sees them.
"""

from __future__ import annotations

import html
import re
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from importlib.metadata import version
from typing import Any

import mwclient
import mwclient.errors
import requests
import urllib3.exceptions

from wikiqa.config import Settings
from wikiqa.retry import GaveUp, RetryPolicy, Transient, parse_retry_after
from wikiqa.sources.infobox import parse_infobox
from wikiqa.sources.protocol import SourceUnavailable, article_url, normalize_title
from wikiqa.sources.records import Article, Depth, Provenance, SearchHit

WIKIMEDIA_DOMAINS = (
    "wikipedia.org", "wikimedia.org", "wiktionary.org", "wikibooks.org", "wikinews.org",
    "wikiquote.org", "wikisource.org", "wikiversity.org", "wikivoyage.org", "wikidata.org",
    "mediawiki.org", "wikifunctions.org",
)  # fmt: skip
_TAG = re.compile(r"<[^>]+>")


def check_host(host: str, allow_any_host: bool = False) -> str:
    """Return the host if it is a Wikimedia wiki (or any host, when explicitly allowed)."""
    clean = host.strip().lower().rstrip(".")
    if not re.fullmatch(r"[a-z0-9.-]+(:[0-9]+)?", clean):
        raise ValueError(f"live host must be a bare host name like en.wikipedia.org, not {host!r}")
    if not allow_any_host and not any(
        clean == d or clean.endswith("." + d) for d in WIKIMEDIA_DOMAINS
    ):
        raise ValueError(
            f"live host {host!r} is not a Wikimedia wiki; set WIKIQA_ALLOW_ANY_HOST=1 "
            "(or allow_any_host=True) to use another MediaWiki"
        )
    return clean


def user_agent(contact: str | None) -> str:
    """A User-Agent as Wikimedia's policy asks: client/version (contact) library/version.

    The contact must be the user's own: Wikimedia blocks agents it cannot reach, and a default
    shared by every install would make one user's misbehaviour everyone's.
    """
    if not contact or not contact.strip():
        raise ValueError(
            "live Wikipedia needs your contact in the User-Agent (Wikimedia's policy): "
            "set WIKIQA_CONTACT to an email or URL, e.g. WIKIQA_CONTACT=mailto:you@example.org"
        )
    return f"wikiqa/{version('wikiqa')} ({contact.strip()}) mwclient/{version('mwclient')}"


def _raise_transient(response: requests.Response, *args: Any, **kwargs: Any) -> None:
    """requests hook: classify retryable HTTP answers while their headers are at hand."""
    retry_after = parse_retry_after(response.headers.get("Retry-After"))
    if response.headers.get("X-Database-Lag"):
        lag = response.headers["X-Database-Lag"]
        raise Transient(f"replication lag {lag}s exceeds maxlag", retry_after)
    if response.status_code == 429:
        raise Transient("HTTP 429 Too Many Requests", retry_after)
    if 500 <= response.status_code < 600:
        status = f"HTTP {response.status_code} {response.reason or ''}".strip()
        raise Transient(status, retry_after)


def _unresolvable(err: requests.ConnectionError) -> bool:
    reason = getattr(err.args[0], "reason", None) if err.args else None
    return isinstance(reason, urllib3.exceptions.NameResolutionError)


def _first_page(pages: Any) -> dict[str, Any] | None:
    """The page of a one-title query, in either format version.

    formatversion=2 sends a list; formatversion=1 (older wikis, proxies, recorded cassettes)
    a dict keyed by page id, "-1" for a missing page.
    """
    if isinstance(pages, Mapping):
        pages = list(pages.values())
    if isinstance(pages, list) and pages and isinstance(pages[0], Mapping):
        return dict(pages[0])
    return None


def _is_article(page: Mapping[str, Any]) -> bool:
    """An existing main-namespace page. Flags are `true` in fv2 and `""` (present) in fv1."""
    flagged = any(flag in page for flag in ("missing", "invalid", "special", "interwiki"))
    return not flagged and page.get("ns", 0) == 0 and bool(page.get("title"))


class LiveSource:
    """A `WikiSource` over a live MediaWiki (English Wikipedia by default).

    Retries 429, 5xx, timeouts, lag and malformed responses `attempts` times with exponential
    backoff (Retry-After wins when the server sends one), then raises `SourceUnavailable`.
    A host that does not resolve fails at once: offline machines should not wait on backoff.
    """

    def __init__(
        self,
        host: str | None = None,
        *,
        allow_any_host: bool | None = None,
        session: requests.Session | None = None,
        timeout: float = 10.0,
        attempts: int = 4,
        backoff: float = 1.0,
        max_wait: float = 30.0,
        max_lag: int = 5,
        contact: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        settings = Settings()
        allow = settings.allow_any_host if allow_any_host is None else allow_any_host
        self.host = check_host(host or settings.live_host, allow)
        self.name = f"live:{self.host}"
        self.max_lag = max_lag
        self.retry = RetryPolicy(attempts=attempts, backoff=backoff, max_wait=max_wait, sleep=sleep)
        self.session = session or requests.Session()
        # mwclient only sets a User-Agent on sessions it creates; this one is ours.
        self.session.headers["User-Agent"] = user_agent(contact or settings.contact)
        self.session.hooks["response"].append(_raise_transient)
        self._site = mwclient.Site(
            self.host,
            pool=self.session,
            max_retries=0,
            do_init=False,
            max_lag=max_lag,
            connection_options={"timeout": timeout},
        )

    # -- the HTTP layer ---------------------------------------------------------------------

    def _query(self, **params: Any) -> dict[str, Any]:
        """One API query, retried on transient failures; raises SourceUnavailable at the end."""
        params = {"formatversion": "2", "maxlag": str(self.max_lag), **params}
        try:
            return self.retry.call(lambda: self._query_once(params))
        except GaveUp as err:
            raise SourceUnavailable(f"{self.host}: {err}") from err

    def _query_once(self, params: Mapping[str, Any]) -> dict[str, Any]:
        try:
            result = self._site.api("query", http_method="GET", **params)
        except Transient:
            raise
        except requests.Timeout as err:
            raise Transient("request timed out") from err
        except requests.ConnectionError as err:
            if _unresolvable(err):
                raise SourceUnavailable(
                    f"cannot resolve {self.host}: no network? "
                    "(the offline snapshot is the default source)"
                ) from err
            raise Transient(f"connection failed: {err}") from err
        except requests.HTTPError as err:
            status = err.response.status_code if err.response is not None else "?"
            raise SourceUnavailable(f"{self.host}: HTTP {status}") from err
        except mwclient.errors.InvalidResponse as err:
            raise Transient("malformed response (not JSON)") from err
        except mwclient.errors.MaximumRetriesExceeded as err:
            raise Transient("server-side database error") from err
        except mwclient.errors.APIError as err:
            if err.code in {"maxlag", "ratelimited"}:
                raise Transient(f"API error {err.code}: {err.info}") from err
            raise SourceUnavailable(f"{self.host}: API error {err.code}: {err.info}") from err
        if isinstance(result, Mapping) and "query" not in result and "batchcomplete" in result:
            # A complete batch with nothing in it: what MediaWiki sends for a title that
            # normalises to nothing. An answer, not a malformed response.
            return {**result, "query": {}}
        if not isinstance(result, Mapping) or not isinstance(result.get("query"), Mapping):
            raise Transient("malformed response (no query result)")
        return dict(result)

    # -- WikiSource ---------------------------------------------------------------------------

    def search(self, query: str, limit: int = 5) -> list[SearchHit]:
        if not query.strip() or limit <= 0:
            return []
        data = self._query(
            list="search", srsearch=query, srlimit=str(min(limit, 50)), srnamespace="0",
            srprop="snippet",
        )  # fmt: skip
        hits = []
        items = [i for i in data["query"].get("search", []) if i.get("ns", 0) == 0]
        for rank, item in enumerate(items):
            snippet = html.unescape(_TAG.sub("", item.get("snippet", "")))
            # MediaWiki returns an order, not a relevance score: use the reciprocal rank.
            hits.append(SearchHit(title=item["title"], snippet=snippet, score=1.0 / (rank + 1)))
        return hits[:limit]

    def get_article(self, title: str, depth: Depth = "lead") -> Article | None:
        if not title.strip():
            return None
        article, missing = self._fetch(title, depth)
        if article is not None or not missing:
            return article
        # MediaWiki titles are case-sensitive after the first letter: "grace hopper" misses.
        # Fall back to a search for a hit with the same folded title.
        wanted = normalize_title(title)
        for hit in self.search(title, limit=10):
            if normalize_title(hit.title) == wanted:
                return self._fetch(hit.title, depth)[0]
        return None

    def _fetch(self, title: str, depth: Depth) -> tuple[Article | None, bool]:
        """The article, and whether a miss is worth a case-folded retry (a plain missing page).

        Invalid, special, interwiki and non-article titles are final: no search can fix them.
        """
        params: dict[str, Any] = {
            "prop": "extracts|pageprops|info|revisions|description",
            "titles": title,
            "redirects": "1",
            "explaintext": "1",
            "exsectionformat": "plain",
            "inprop": "url",
            "ppprop": "disambiguation",
            "rvprop": "ids|content",
            "rvslots": "main",
            "rvsection": "0",  # the lead section holds the infobox
        }
        if depth == "lead":
            params["exintro"] = "1"
        data = self._query(**params)
        page = _first_page(data["query"].get("pages"))
        # Only articles: Special:, File:, Talk: ... titles are not text to answer from.
        if page is None or not _is_article(page):
            missing = page is not None and "missing" in page and page.get("ns", 0) == 0
            return None, missing
        revisions = page.get("revisions") or [{}]
        main = revisions[0].get("slots", {}).get("main", {})
        wikitext = main.get("content", main.get("*", ""))  # fv1 keeps content under "*"
        revid = revisions[0].get("revid") or page.get("lastrevid")
        article = Article(
            title=page["title"],
            text=(page.get("extract") or "").strip(),
            url=page.get("canonicalurl") or page.get("fullurl") or article_url(page["title"]),
            revision_id=int(revid) if revid else None,
            is_disambiguation="disambiguation" in (page.get("pageprops") or {}),
            description=page.get("description"),
            depth=depth,
            infobox=parse_infobox(wikitext) if wikitext else {},
            provenance=Provenance(source="live", host=self.host, fetched_at=datetime.now(UTC)),
        )
        return article, False

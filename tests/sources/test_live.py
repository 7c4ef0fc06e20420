"""LiveSource against mocked MediaWiki responses (realistic JSON in tests/data/mediawiki)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
import requests
import responses
from responses import matchers

from tests.conftest import dns_failure
from wikiqa.retry import parse_retry_after
from wikiqa.sources import SourceUnavailable
from wikiqa.sources.live import LiveSource, check_host

API = "https://en.wikipedia.org/w/api.php"
MW = Path(__file__).parents[1] / "data" / "mediawiki"
REAL = Path(__file__).parents[1] / "data" / "live"  # bodies Wikipedia really sent (README there)


def mw(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((MW / f"{name}.json").read_text(encoding="utf-8"))
    return data


def real(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((REAL / f"{name}.json").read_text(encoding="utf-8"))
    return data


@pytest.fixture(autouse=True)
def contact(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WIKIQA_CONTACT", "mailto:tests@example.org")


@pytest.fixture
def http() -> Iterator[responses.RequestsMock]:
    # assert_all_requests_are_fired: every mocked response a test sets up must be used.
    with responses.RequestsMock(assert_all_requests_are_fired=True) as rsps:
        yield rsps


@pytest.fixture
def waits() -> list[float]:
    return []


@pytest.fixture
def live(waits: list[float]) -> LiveSource:
    return LiveSource(attempts=4, backoff=1.0, max_wait=30.0, sleep=waits.append)


def params(call: responses.Call) -> dict[str, str]:
    query = parse_qs(urlparse(str(call.request.url)).query)
    return {key: values[0] for key, values in query.items()}


def test_search_parses_hits_and_strips_html(http: responses.RequestsMock, live: LiveSource) -> None:
    http.get(
        API,
        json=mw("search_highest_mountain"),
        match=[
            matchers.query_param_matcher({"list": "search", "srlimit": "3"}, strict_match=False)
        ],
    )
    hits = live.search("highest mountain on Earth", limit=3)
    assert [h.title for h in hits] == ["Mount Everest", "K2", "List of highest mountains on Earth"]
    assert hits[0].snippet.startswith("Mount Everest is Earth's highest mountain above sea level")
    assert "<span" not in hits[0].snippet and "&amp;" not in hits[2].snippet
    assert [h.score for h in hits] == [1.0, 0.5, pytest.approx(1 / 3)]
    sent = params(http.calls[0])
    assert sent["srsearch"] == "highest mountain on Earth"
    assert sent["maxlag"] == "5"
    assert sent["format"] == "json" and sent["formatversion"] == "2"


def test_requests_carry_a_descriptive_user_agent(
    http: responses.RequestsMock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WIKIQA_CONTACT", "mailto:research@example.org")
    http.get(API, json=mw("search_highest_mountain"))
    LiveSource(sleep=lambda s: None).search("everest")
    agent = http.calls[0].request.headers["User-Agent"]
    assert agent.startswith("wikiqa/0.1.0 (mailto:research@example.org) mwclient/")


def test_get_article_is_one_call_with_extract_revision_url_and_infobox(
    http: responses.RequestsMock, live: LiveSource
) -> None:
    http.get(API, json=mw("article_mount_everest"))
    article = live.get_article("mount everest")
    assert len(http.calls) == 1
    sent = params(http.calls[0])
    assert sent["titles"] == "mount everest"
    assert sent["redirects"] == "1" and sent["exintro"] == "1" and sent["explaintext"] == "1"
    assert set(sent["prop"].split("|")) >= {"extracts", "pageprops", "info", "revisions"}
    assert article is not None
    assert article.title == "Mount Everest"
    assert article.text.startswith("Mount Everest (known locally as Sagarmāthā or Qomolangma)")
    assert article.revision_id == 1254471234
    assert article.url == "https://en.wikipedia.org/wiki/Mount_Everest"
    assert article.description == "Earth's highest mountain"
    assert not article.is_disambiguation
    assert article.depth == "lead"
    assert article.infobox["elevation_m"] == "8848.86"
    assert article.infobox["first_ascent"] == "1953-05-29 by Edmund Hillary and Tenzing Norgay"
    assert article.provenance.source == "live"
    assert article.provenance.host == "en.wikipedia.org"
    assert article.provenance.fetched_at is not None


def test_full_depth_asks_for_all_sections(http: responses.RequestsMock, live: LiveSource) -> None:
    http.get(API, json=mw("article_mount_everest"))
    article = live.get_article("Mount Everest", depth="full")
    assert "exintro" not in params(http.calls[0])
    assert article is not None and article.depth == "full"


def test_disambiguation_pages_are_flagged(http: responses.RequestsMock, live: LiveSource) -> None:
    http.get(API, json=mw("article_mercury_disambiguation"))
    article = live.get_article("Mercury")
    assert article is not None and article.is_disambiguation


def test_missing_article_falls_back_to_a_case_folded_search_match(
    http: responses.RequestsMock, live: LiveSource
) -> None:
    http.get(
        API,
        json=mw("article_missing"),
        match=[matchers.query_param_matcher({"titles": "MOUNT everest"}, strict_match=False)],
    )
    http.get(
        API,
        json=mw("search_highest_mountain"),
        match=[matchers.query_param_matcher({"list": "search"}, strict_match=False)],
    )
    http.get(
        API,
        json=mw("article_mount_everest"),
        match=[matchers.query_param_matcher({"titles": "Mount Everest"}, strict_match=False)],
    )
    article = live.get_article("MOUNT everest")
    assert article is not None and article.title == "Mount Everest"


def test_missing_article_without_a_match_is_none(
    http: responses.RequestsMock, live: LiveSource
) -> None:
    http.get(
        API,
        json=mw("article_missing"),
        match=[
            matchers.query_param_matcher(
                {"prop": "extracts|pageprops|info|revisions|description"}, strict_match=False
            )
        ],
    )
    http.get(
        API,
        json=mw("search_highest_mountain"),
        match=[matchers.query_param_matcher({"list": "search"}, strict_match=False)],
    )
    assert live.get_article("Xyzzy nonexistent article") is None


def test_429_honours_retry_after(
    http: responses.RequestsMock, live: LiveSource, waits: list[float]
) -> None:
    http.get(API, status=429, body="Too many requests", headers={"Retry-After": "7"})
    http.get(API, json=mw("search_highest_mountain"))
    assert live.search("everest")[0].title == "Mount Everest"
    assert waits == [7.0]


def test_503_and_timeouts_back_off_exponentially_then_succeed(
    http: responses.RequestsMock, live: LiveSource, waits: list[float]
) -> None:
    http.get(API, status=503, body=(MW / "503.html").read_text(), content_type="text/html")
    http.get(API, body=requests.exceptions.ReadTimeout("read timed out"))
    http.get(API, status=502, body="Bad Gateway")
    http.get(API, json=mw("article_mount_everest"))
    assert live.get_article("Mount Everest") is not None
    assert waits == [1.0, 2.0, 4.0]


def test_maxlag_is_retried_after_the_servers_retry_after(
    http: responses.RequestsMock, live: LiveSource, waits: list[float]
) -> None:
    lag_headers = {"Retry-After": "5", "X-Database-Lag": "7"}
    http.get(API, json=mw("error_maxlag"), headers=lag_headers)
    http.get(API, json=mw("error_maxlag"))  # the JSON error alone, without the headers
    http.get(API, json=mw("search_highest_mountain"))
    assert live.search("everest")
    assert waits == [5.0, 2.0]


def test_persistent_failure_raises_source_unavailable_after_all_attempts(
    http: responses.RequestsMock, live: LiveSource, waits: list[float]
) -> None:
    http.get(API, body=requests.exceptions.ConnectTimeout("connect timed out"))
    with pytest.raises(SourceUnavailable, match=r"timed out .*after 4 attempts"):
        live.search("everest")
    assert len(http.calls) == 4
    assert waits == [1.0, 2.0, 4.0]


def test_malformed_json_is_retried_then_reported(
    http: responses.RequestsMock, live: LiveSource
) -> None:
    http.get(
        API, body='{"batchcomplete": true, "query": {"pages": [', content_type="application/json"
    )
    with pytest.raises(SourceUnavailable, match="malformed response"):
        live.get_article("Mount Everest")
    assert len(http.calls) == 4


def test_retry_after_longer_than_max_wait_gives_up_at_once(
    http: responses.RequestsMock, live: LiveSource, waits: list[float]
) -> None:
    http.get(API, status=429, body="Too many requests", headers={"Retry-After": "3600"})
    with pytest.raises(SourceUnavailable, match="asked to wait 3600s"):
        live.search("everest")
    assert waits == [] and len(http.calls) == 1


def test_unresolvable_host_fails_fast_without_retrying(
    http: responses.RequestsMock, live: LiveSource, waits: list[float]
) -> None:
    error = dns_failure()
    http.get(API, body=error)
    with pytest.raises(SourceUnavailable, match=r"cannot resolve en\.wikipedia\.org: no network"):
        live.search("everest")
    assert waits == [] and len(http.calls) == 1


def test_other_api_errors_are_not_retried(http: responses.RequestsMock, live: LiveSource) -> None:
    http.get(
        API,
        json={
            "error": {"code": "badvalue", "info": 'Unrecognized value for parameter "list": serch.'}
        },
    )
    with pytest.raises(SourceUnavailable, match="API error badvalue"):
        live.search("everest")
    assert len(http.calls) == 1


def test_only_wikimedia_hosts_unless_overridden() -> None:
    assert check_host("de.wikipedia.org") == "de.wikipedia.org"
    assert check_host("EN.Wikipedia.org.") == "en.wikipedia.org"
    assert check_host("commons.wikimedia.org") == "commons.wikimedia.org"
    for bad in [
        "evil.example.com",
        "wikipedia.org.evil.com",
        "notwikipedia.org",
        "https://en.wikipedia.org/w",
    ]:
        with pytest.raises(ValueError):
            check_host(bad)
    assert check_host("wiki.example.com", allow_any_host=True) == "wiki.example.com"
    assert check_host("localhost:8080", allow_any_host=True) == "localhost:8080"


def test_host_override_comes_from_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WIKIQA_LIVE_HOST", "wiki.example.com")
    with pytest.raises(ValueError, match="not a Wikimedia wiki"):
        LiveSource()
    monkeypatch.setenv("WIKIQA_ALLOW_ANY_HOST", "1")
    assert LiveSource().host == "wiki.example.com"


def test_parse_retry_after_accepts_seconds_and_http_dates() -> None:
    assert parse_retry_after("120") == 120.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past


# -- replaying bodies Wikipedia really sent (tests/data/live) ------------------------------


def test_live_runs_need_a_contact_and_say_how_to_set_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("WIKIQA_CONTACT")
    with pytest.raises(ValueError, match="set WIKIQA_CONTACT"):
        LiveSource()
    assert "(me@example.org)" in LiveSource(contact="me@example.org").session.headers["User-Agent"]


def test_formatversion_1_search_parses(http: responses.RequestsMock, live: LiveSource) -> None:
    http.get(API, json=real("mw_search_python_fv1"))
    hits = live.search("python programming", limit=3)
    assert [h.title for h in hits][:2] == ["Python (programming language)", "History of Python"]
    assert hits[0].snippet.startswith("Python is a high-level, general-purpose programming")


def test_formatversion_1_missing_page_is_a_miss_not_a_crash(
    http: responses.RequestsMock, live: LiveSource
) -> None:
    # fv1: pages is a dict keyed by "-1" and `missing` is "" (present, falsy). This body crashed
    # with KeyError: 0 and, read as a truthiness flag, would have become an empty article.
    http.get(API, json=real("mw_exists_false_fv1"))
    http.get(API, json=real("mw_search_python_fv1"))  # the case-folded retry finds nothing
    assert live.get_article("NonExistentPage_WikiAPI_Test_12345") is None
    assert len(http.calls) == 2


def test_formatversion_2_search_and_pageprops_parse(
    http: responses.RequestsMock, live: LiveSource
) -> None:
    http.get(API, json=real("mw_search_mercury_fv2"))
    http.get(API, json=real("mw_pageprops_mercury_fv2"))
    http.get(API, json=real("mw_pageprops_mercury_element_fv2"))
    assert [h.title for h in live.search("mercury", limit=2)] == ["Mercury", "Mercury (element)"]
    mercury = live.get_article("Mercury")
    element = live.get_article("Mercury (element)")
    assert mercury is not None and mercury.is_disambiguation
    assert element is not None and not element.is_disambiguation
    assert element.url == "https://en.wikipedia.org/wiki/Mercury_(element)"


@pytest.mark.parametrize(
    "body",
    ["mw_core_invalid", "mw_core_interwiki", "mw_core_normalized_to_empty",
     "mw_core_batchcomplete_only"],
)  # fmt: skip
def test_titles_that_name_no_article_are_final_misses(
    body: str, http: responses.RequestsMock, live: LiveSource, waits: list[float]
) -> None:
    # One call each: no retry (an empty batch is an answer) and no case-folded search.
    http.get(API, json=real(body))
    assert live.get_article("|") is None
    assert len(http.calls) == 1 and waits == []


@pytest.mark.parametrize(
    "page",
    [
        {"ns": -1, "title": "Special:Random", "special": True},
        {"ns": 6, "title": "File:Everest.jpg", "pageid": 5, "extract": ""},
        {"ns": 6, "title": "File:Nope.jpg", "missing": True},
    ],
)
def test_special_and_file_titles_are_not_articles(
    page: dict[str, Any], http: responses.RequestsMock, live: LiveSource
) -> None:
    http.get(API, json={"batchcomplete": True, "query": {"pages": [page]}})
    assert live.get_article(page["title"]) is None
    assert len(http.calls) == 1


def test_real_maxlag_body_is_retried(
    http: responses.RequestsMock, live: LiveSource, waits: list[float]
) -> None:
    headers = {"Retry-After": "5", "X-Database-Lag": "0"}
    http.get(API, json=real("mw_maxlag_wikibase_cloud"), headers=headers)
    http.get(API, json=real("mw_search_mercury_fv2"))
    assert live.search("mercury", limit=1)[0].title == "Mercury"
    assert waits == [5.0]

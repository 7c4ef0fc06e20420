"""`wikiqa replies export|import`: the response cache carried to another machine in a file."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from wikiqa.cli.main import main
from wikiqa.evals.running.cache import ResponseCache
from wikiqa.evals.running.replies import RepliesError, export_replies, import_replies
from wikiqa.models import AssistantMessage, ModelTurn


def _turn(text: str, model: str = "m") -> str:
    """A cache value as `CachingModel` writes one: a model turn and the cap it was made with."""
    turn = ModelTurn(message=AssistantMessage(text=text), model=model, stop_reason="stop")
    return json.dumps(turn.model_dump(mode="json") | {"_max_tokens": 384})


def test_the_extractive_answerers_replies_are_not_carried(tmp_path: Path) -> None:
    # free to recompute, and two thirds of the committed file before they were left out
    here = _cache(tmp_path / "a.sqlite", {
        "k1": _turn("one"), "k2": _turn("free", "extractive"),
        "k3": _turn("free too", "extractive:abstain=0.4"), "k4": _turn("x", "extractive-ish"),
    })  # fmt: skip
    out = tmp_path / "replies.jsonl.gz"
    assert export_replies(here, out) == 2
    lines = [json.loads(x) for x in gzip.decompress(out.read_bytes()).decode().splitlines()]
    assert [x["key"] for x in lines] == ["k1", "k4"]


def _cache(path: Path, entries: dict[str, str]) -> ResponseCache:
    cache = ResponseCache(path)
    for key, value in entries.items():
        cache.put(key, value)
    return cache


def test_an_exported_cache_imported_elsewhere_serves_the_same_replies(tmp_path: Path) -> None:
    here = _cache(tmp_path / "a.sqlite", {"k2": _turn("two"), "k1": _turn("one")})
    out = tmp_path / "results" / "replies.jsonl.gz"
    assert export_replies(here, out) == 2
    lines = [json.loads(x) for x in gzip.decompress(out.read_bytes()).decode().splitlines()]
    assert [x["key"] for x in lines] == ["k1", "k2"]  # sorted: the same cache, the same bytes
    first = out.read_bytes()
    assert export_replies(here, out) == 2 and out.read_bytes() == first  # no timestamp inside
    # the new machine already made one reply of its own: kept as it is, never replaced
    there = _cache(tmp_path / "b.sqlite", {"k2": _turn("mine")})
    assert import_replies(there, out) == (1, 1)
    assert there.get("k1") == _turn("one") and there.get("k2") == _turn("mine")
    assert import_replies(there, out) == (0, 2)  # importing twice adds nothing


def test_no_secret_reaches_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "placeholder-secret-0123456789")
    here = _cache(tmp_path / "a.sqlite", {"k": _turn("key placeholder-secret-0123456789")})
    out = tmp_path / "replies.jsonl.gz"
    export_replies(here, out)
    assert "placeholder-secret-0123456789" not in gzip.decompress(out.read_bytes()).decode()


def test_a_key_only_a_dotenv_holds_is_scrubbed_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("OPENAI_API_KEY=dotenv-only-placeholder-987654\n")
    here = _cache(tmp_path / "a.sqlite", {"k": _turn("the key is dotenv-only-placeholder-987654")})
    out = tmp_path / "replies.jsonl.gz"
    export_replies(here, out)
    assert "dotenv-only-placeholder-987654" not in gzip.decompress(out.read_bytes()).decode()


def test_a_bad_file_is_refused_whole_and_named(tmp_path: Path) -> None:
    cache = _cache(tmp_path / "a.sqlite", {})
    bad = tmp_path / "bad.jsonl.gz"
    good = json.dumps({"key": "k1", "value": _turn("one")})
    bad.write_bytes(gzip.compress(f'{good}\n{{"key": "k2"}}\n'.encode()))
    with pytest.raises(RepliesError, match=r"bad.jsonl.gz:2: value"):
        import_replies(cache, bad)
    assert cache.get("k1") is None  # checked whole before anything is written
    # a value the cache could not serve would fail every later hit on its key: refused
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(gzip.compress(f'{good}\n{{"key": "k2", "value": "not json"}}\n'.encode()))
    with pytest.raises(RepliesError, match=r"broken.jsonl.gz:2: value is not a cached model turn"):
        import_replies(cache, broken)
    plain = tmp_path / "plain.jsonl.gz"
    plain.write_text('{"key": "k", "value": "v"}\n')
    with pytest.raises(RepliesError, match="not a gzip replies file"):
        import_replies(cache, plain)
    with pytest.raises(RepliesError, match="no such replies file"):
        import_replies(cache, tmp_path / "missing.jsonl.gz")


def test_the_commands_use_the_home_cache_and_the_results_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("WIKIQA_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("WIKIQA_RESULTS", str(tmp_path / "results"))
    from wikiqa.evals.running.cache import cache_path

    _cache(cache_path(), {"k": _turn("v")}).close()
    assert main(["replies", "export"]) == 0
    assert (tmp_path / "results" / "replies.jsonl.gz").is_file()
    assert "1 replies" in capsys.readouterr().out
    monkeypatch.setenv("WIKIQA_HOME", str(tmp_path / "elsewhere"))
    assert main(["replies", "import"]) == 0
    assert "1 replies added" in capsys.readouterr().out
    assert main(["replies", "import", str(tmp_path / "nope.jsonl.gz")]) != 0
    assert "no such replies file" in capsys.readouterr().err

"""`wikiqa replies export|import`: the response cache carried to another machine in a file."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from wikiqa.cli.main import main
from wikiqa.evals.running.cache import IMPORTED_FIELD, CachingModel, ResponseCache, imported_note
from wikiqa.evals.running.replies import (
    RepliesError,
    export_replies,
    import_replies,
    read_replies,
)
from wikiqa.models import (
    AssistantMessage,
    CallOptions,
    Message,
    ModelTurn,
    TokenUsage,
    ToolSpec,
    UserMessage,
)


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
    assert import_replies(there, out)[:2] == (1, 1)
    assert json.loads(there.get("k1") or "") == json.loads(_turn("one")) | {
        IMPORTED_FIELD: hashlib.sha256(out.read_bytes()).hexdigest()
    }  # the reply, marked with the file it came from
    assert there.get("k2") == _turn("mine")
    assert import_replies(there, out)[:2] == (0, 2)  # importing twice adds nothing


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


# -- a replies file made by someone else ------------------------------------------------------

ASKED = [UserMessage(text="who wrote dracula")]


class Counted:
    """A model that answers every call itself and counts them."""

    spec = "openai:qwen@http://127.0.0.1:8080/v1"

    def __init__(self) -> None:
        self.calls = 0

    def __call__(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: CallOptions | None = None,
    ) -> ModelTurn:
        self.calls += 1
        return ModelTurn(
            message=AssistantMessage(text=f"my own reply {self.calls}"),
            usage=TokenUsage(output_tokens=5), stop_reason="stop", model="qwen",
        )  # fmt: skip


def _planted(tmp_path: Path, model: Counted, systems: list[str]) -> Path:
    """A replies file answering the calls `systems` predicts, as someone else would make one:
    their own cache, keyed as the victim's calls will be, exported."""
    theirs = ResponseCache(tmp_path / "theirs.sqlite")
    asker = CachingModel(model, theirs, "trial=0")
    for system in systems:
        theirs.put(asker.key(system, ASKED, []), _turn(f"planted answer to {system}", "qwen"))
    out = tmp_path / "handed-over.jsonl.gz"
    export_replies(theirs, out)
    theirs.close()
    return out


def test_calls_answered_by_imported_replies_are_counted_with_the_files_sha256(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    model = Counted()
    planted = _planted(tmp_path, model, ["s1", "s2"])
    sha = hashlib.sha256(planted.read_bytes()).hexdigest()
    monkeypatch.setenv("WIKIQA_HOME", str(tmp_path / "home"))
    assert main(["replies", "import", str(planted)]) == 0
    said = capsys.readouterr().out
    assert f"2 replies added from {planted} (sha256 {sha})" in said and "marked as imported" in said
    from wikiqa.evals.running.cache import cache_path

    cache = ResponseCache(cache_path())
    asker = CachingModel(model, cache, "trial=0")
    replies = [asker(system, ASKED, []) for system in ("s1", "mine", "s2", "mine")]
    assert [r.message.text for r in replies] == [
        "planted answer to s1", "my own reply 1", "planted answer to s2", "my own reply 1",
    ]  # fmt: skip
    # one model call; three served, two of them by the imported file, one by our own reply
    assert (model.calls, asker.calls, asker.hits, asker.imported) == (1, 1, 3, 2)
    assert asker.imported_files == {sha: 2}
    assert imported_note(asker.imported, asker.calls + asker.hits, asker.imported_files) == (
        f"2 of 4 calls answered from imported replies, file sha256 {sha} (2)"
    )
    assert imported_note(0, 4, {}) is None
    # exported again, the mark is gone: the same replies give the same bytes wherever made
    again = tmp_path / "again.jsonl.gz"
    export_replies(cache, again)
    lines = gzip.decompress(again.read_bytes()).decode().splitlines()
    assert IMPORTED_FIELD not in "".join(lines) and len(lines) == 3
    assert set(gzip.decompress(planted.read_bytes()).decode().splitlines()) < set(lines)


def test_make_qwen_no_longer_imports_the_committed_replies() -> None:
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    root = Path(__file__).resolve().parents[3]

    def commands(target: str) -> list[str]:
        shown = subprocess.run(  # -n: printed, nothing run or written
            [make, "-n", "-C", str(root), target], capture_output=True, text=True, check=True
        ).stdout
        return [line for line in shown.replace("\\\n", " ").splitlines() if "replies" in line]

    qwen = commands("qwen")
    assert qwen and all(line.lstrip().startswith(("test ", "echo")) for line in qwen)
    assert not any(re.search(r"(^|[;&|]\s*)\S*wikiqa replies import", line) for line in qwen)
    assert any(
        line.endswith("wikiqa replies import results/replies.jsonl.gz")
        for line in commands("qwen-replies")
    )


def test_the_export_never_writes_through_a_planted_link(tmp_path: Path) -> None:
    cache = _cache(tmp_path / "a.sqlite", {"k": _turn("v")})
    folder = tmp_path / "results"
    folder.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    (folder / "replies.jsonl.gz.partial").symlink_to(victim)
    out = folder / "replies.jsonl.gz"
    assert export_replies(cache, out) == 1
    assert victim.read_text() == "keep me\n" and len(read_replies(out)) == 1
    assert sorted(p.name for p in folder.iterdir()) == [
        "replies.jsonl.gz",
        "replies.jsonl.gz.partial",
    ]
    assert out.stat().st_mode & 0o777 == 0o644
    linked = folder / "linked.jsonl.gz"
    linked.symlink_to(victim)
    with pytest.raises(RepliesError, match="is a symbolic link; refusing to write through it"):
        export_replies(cache, linked)
    assert victim.read_text() == "keep me\n"


def test_a_linked_replies_file_is_not_imported(tmp_path: Path) -> None:
    real = tmp_path / "real.jsonl.gz"
    export_replies(_cache(tmp_path / "a.sqlite", {"k": _turn("v")}), real)
    link = tmp_path / "replies.jsonl.gz"
    link.symlink_to(real)
    cache = _cache(tmp_path / "b.sqlite", {})
    with pytest.raises(RepliesError, match=f"{link}: is a symbolic link"):
        import_replies(cache, link)
    assert cache.items() == []

"""Text from files never reaches the terminal with its control characters: escape sequences in
a cassette's header, an article's title or text, a search snippet or a scripted answer are shown
escaped by every command that prints them, and `--json` output still parses to the same text."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import pytest

from wikiqa.cli import main
from wikiqa.sources import Article, Provenance, SearchHit
from wikiqa.sources.cassette_files import CASSETTE_FORMAT, Header, article_line, header_line
from wikiqa.terminal import echo, printable

CLEAR = "\x1b[2J\x1b[H"  # clear the screen, cursor home
TITLE = "\x1b]0;owned\x07"  # set the window title
CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4=\x07"  # OSC 52: write the clipboard
CSI_C1 = "\x9b31m"  # CSI as one C1 character
HIDE = "safe\rrm -rf ~"  # a carriage return that overwrites what came before
BIDI = "\u202eevil\u202c"  # right-to-left override
NASTY = [CLEAR, TITLE, CLIPBOARD, CSI_C1, HIDE, BIDI, "\x00\x07\x08\x7f"]
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def test_printable_escapes_every_control_character_but_newline_and_tab() -> None:
    assert printable("a\tb\nc") == "a\tb\nc"
    assert printable(CLEAR) == "\\u001b[2J\\u001b[H"
    assert printable(CSI_C1) == "\\u009b31m"
    assert printable(BIDI) == "\\u202eevil\\u202c"
    for text in NASTY:
        assert not CONTROL.search(printable(text))
        # inside a JSON string the escape is the same character again
        assert json.loads(printable(json.dumps(text, ensure_ascii=False))) == text
    assert printable("Mercury é 水银 – “quoted”") == "Mercury é 水银 – “quoted”"


def _article(revision: int, text: str) -> Article:
    return Article(
        title=f"Mercury{TITLE}", text=text, url="https://en.wikipedia.org/wiki/Mercury",
        revision_id=revision, infobox={f"symbol{CLEAR}": f"Hg{CSI_C1}"},
        provenance=Provenance(source="live", host="en.wikipedia.org"),
    )  # fmt: skip


def _cassette(path: Path, run_id: str, revision: int, text: str) -> Path:
    header = Header(
        format=CASSETTE_FORMAT, created_at="2026-07-01", run_id=run_id, suite=f"dev{CLIPBOARD}",
        suite_hashes=["h1"], source="live:en.wikipedia.org",
    )  # fmt: skip
    article = article_line(_article(revision, text))
    hit = SearchHit(title=f"Mercury{TITLE}", snippet=f"the element{CLEAR}{HIDE}", score=1.0)
    lines = [
        header_line(header),
        article,
        {"fetch": {"title": f"Mercury{TITLE}", "depth": "lead", "article": article["id"]}},
        {"search": {"query": "mercury", "limit": 5, "hits": [hit.model_dump(mode="json")]}},
    ]
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    return path


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    old = "Mercury is a chemical element. It is known as quicksilver."
    new = f"Mercury is a chemical element. It is {''.join(NASTY)} hydrargyrum."
    a = _cassette(tmp_path / "a.jsonl", f"run-a{CLEAR}", 1, old)
    b = _cassette(tmp_path / "b.jsonl", f"run-b{TITLE}", 2, new)
    return a, b


def _clean(text: str) -> str:
    assert not CONTROL.search(text), repr(CONTROL.findall(text))
    return text


def test_cassette_diff_info_and_merge_print_no_control_characters(
    pair: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = pair
    assert main(["cassette", "diff", str(a), str(b)]) == 0
    out = _clean(capsys.readouterr().out)
    assert "\\u001b[2J" in out and "\\u009b31m" in out and "\\u202eevil" in out
    assert "1 of 1 (100.0%) shared articles at different revisions" in out
    assert main(["cassette", "diff", str(a), str(b), "--json"]) == 0
    data = json.loads(_clean(capsys.readouterr().out))
    (article,) = data["articles"]
    assert article["added"] == [f"It is {''.join(NASTY)} hydrargyrum."]  # the same text, intact
    assert main(["cassette", "info", str(b)]) == 0
    assert "'run_id': 'run-b\\x1b]0;owned\\x07'" in _clean(capsys.readouterr().out)  # a repr
    assert main(["cassette", "info", str(b), "--json"]) == 0
    info = json.loads(_clean(capsys.readouterr().out))
    assert info["header"]["run_id"] == f"run-b{TITLE}"
    merged = tmp_path / "m.jsonl"
    assert (
        main(["cassette", "merge", str(a), str(b), "--prefer", "latest", "--out", str(merged)]) == 0
    )
    _clean(capsys.readouterr().out)


def test_search_and_article_from_a_cassette_print_no_control_characters(
    pair: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, b = pair
    source = f"cassette:{b}"
    assert main(["article", f"Mercury{TITLE}", "--source", source]) == 0
    out = _clean(capsys.readouterr().out)
    assert "Mercury\\u001b]0;owned\\u0007" in out and "safe\\u000drm -rf" in out
    assert "symbol\\u001b[2J\\u001b[H: Hg\\u009b31m" in out
    assert main(["article", f"Mercury{TITLE}", "--source", source, "--json"]) == 0
    assert json.loads(_clean(capsys.readouterr().out))["title"] == f"Mercury{TITLE}"
    assert main(["search", "mercury", "--source", source]) == 0
    assert "the element\\u001b[2J" in _clean(capsys.readouterr().out)
    assert main(["search", "mercury", "--source", source, "--json"]) == 0
    (hit,) = json.loads(_clean(capsys.readouterr().out))
    assert hit["snippet"] == f"the element{CLEAR}{HIDE}"


def test_a_scripted_answer_and_an_error_naming_a_file_are_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "answer.json"
    script.write_text(json.dumps([{"text": f"The answer{CLEAR}{TITLE} is 42."}]))
    code = main(["ask", "What is it?", "--model", f"scripted:{script}", "--no-retrieval"])
    captured = capsys.readouterr()
    assert code in (0, 3)
    _clean(captured.out)
    _clean(captured.err)
    odd = tmp_path / f"tasks{CLEAR}.jsonl"
    odd.write_text("not json\n")
    assert main(["eval", "--suite", str(odd), "--out", str(tmp_path / "o")]) == 1
    err = _clean(capsys.readouterr().err)
    assert "tasks\\u001b[2J\\u001b[H.jsonl:1: invalid JSON" in err


def test_echo_scrubs_secrets_from_what_it_prints(monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-test-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    out = io.StringIO()
    echo(f"wikiqa: infrastructure error on t1: 400 authorization: Bearer {key} and {key}", file=out)
    assert key not in out.getvalue()
    assert out.getvalue().count("***") == 2


def test_a_step_progress_line_reaches_the_terminal_scrubbed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A step papermill runs writes its progress to the kernel's own stderr, past the notebook
    and past the CLI's scrubbed streams."""
    import importlib

    step = importlib.import_module("wikiqa.experiment.step")

    terminal = io.StringIO()
    monkeypatch.setattr(sys, "__stderr__", terminal)
    step._tell_terminal("wikiqa: infrastructure error on t1: 400 {'authorization': 'Bearer sk-x1'}")
    assert "sk-x1" not in terminal.getvalue()
    assert "infrastructure error on t1" in terminal.getvalue()

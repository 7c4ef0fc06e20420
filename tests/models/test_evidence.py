"""Issue 17: answer types and spans, evidence signals, the fitted confidence and abstention."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from wikiqa import Agent
from wikiqa.agent import AgentConfig, Answer, Refusal
from wikiqa.evals.labels.confidence_fit import (
    FitError,
    cross_validate,
    fit,
    kept_share,
    points,
    review_threshold,
    threshold_at,
)
from wikiqa.models import ExtractiveModel, evidence
from wikiqa.models.reading import answer_type, spans
from wikiqa.sources import SnapshotSource


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("who wrote dracula", "person"),
        ("Which artist painted 'Three Dancers'?", "person"),
        ("the 2002 film 8mile is based on which rappers life", "person"),
        ("when was the 1 child policy lifted in china", "date"),
        ("In what year did the Titanic sink?", "date"),
        ("how many letters in the modern greek alphabet", "number"),
        ("Approximately how many kilometres does light travel in an hour?", "number"),
        ("where was the olympics held in ancient greece", "place"),
        ("which country has gifted statue of liberty to america", "place"),
        ("What is God in deism?", "other"),
        ("Animals without a spine are called what?", "other"),
    ],
)
def test_the_answer_type_is_read_from_the_wh_phrase(question: str, kind: str) -> None:
    assert answer_type(question) == kind


def test_spans_are_values_of_the_asked_type_the_question_does_not_say() -> None:
    dracula = "Dracula is an 1897 Gothic horror novel by Irish author Bram Stoker."
    assert spans(dracula, "person", "who wrote dracula") == ["Bram Stoker"]  # not "Irish"
    greek = "By the 4th century BC the alphabet, with 24 letters, was standard."
    assert spans(greek, "number", "how many letters in the greek alphabet")[0] == "24 letters"
    titanic = "RMS Titanic sank in the North Atlantic Ocean on 15 April 1912."
    assert spans(titanic, "date", "when did the titanic sink") == ["15 April 1912"]
    # a name made of the question's own words is no answer to it
    olympics = "The ancient Olympic Games were held at Olympia."
    assert spans(olympics, "place", "where were the olympic games held") == ["Olympia"]
    assert spans(dracula, "other", "what is dracula") == []


def test_focus_does_not_count_a_word_said_inside_another_name() -> None:
    perth = "Perth is the capital city of Western Australia."
    found = evidence.features("What is the capital of Australia?", perth, [perth], ["Perth"], [])
    assert found["focus"] == 0.5  # "capital" yes; "Australia" only as "Western Australia"
    assert found["support"] == 1.0  # the answer is its own quote
    union = "The Soviet Union was dissolved on 26 December 1991."
    asked = "when was the soviet union dissolved"
    assert evidence.features(asked, union, [union], ["Soviet Union"], ["Soviet Union"]) == {
        "support": 1.0, "focus": 1.0, "named": 1.0, "rank": 1.0, "typed": 1.0,
        "type_match": 1.0, "short": 0.0,
    }  # fmt: skip


def test_the_issues_confident_perth_answer_is_now_flagged_and_abstained(
    snapshot: SnapshotSource,
) -> None:
    """Issue 17's example: the snapshot has no Canberra article, and "Perth is the capital city
    of Western Australia." used to go out at 0.90, unflagged."""
    question = "What is the capital of Australia?"
    answered = Agent(ExtractiveModel(), snapshot).ask(question)
    assert isinstance(answered.output, Answer) and "Perth" in answered.output.text
    assert answered.confidence < evidence.weights().review_below
    assert answered.needs_human_review
    abstaining = AgentConfig(abstain_below=0.4)
    abstained = Agent(ExtractiveModel(), snapshot, abstaining).ask(question)
    assert isinstance(abstained.output, Refusal) and abstained.confidence == 0.0
    assert abstained.output.reason_code == "low_confidence"
    # a well-supported answer still goes out, over the review threshold
    hopper = Agent(ExtractiveModel(), snapshot, abstaining).ask(
        "Who developed the FLOW-MATIC programming language?"
    )
    assert isinstance(hopper.output, Answer) and not hopper.needs_human_review


def test_the_typed_reader_answers_with_the_span_and_quotes_its_sentence(
    snapshot: SnapshotSource,
) -> None:
    result = Agent(ExtractiveModel(reader="typed"), snapshot).ask("who wrote dracula")
    assert isinstance(result.output, Answer)
    assert result.output.text == "Bram Stoker"
    assert "Bram Stoker" in result.output.citations[0].quote
    whole = Agent(ExtractiveModel(reader="typed", span=False), snapshot).ask("who wrote dracula")
    assert isinstance(whole.output, Answer) and whole.output.text.startswith("Dracula is")


def test_new_extractive_options_parse_and_bad_values_are_refused() -> None:
    model = ExtractiveModel.from_options({"reader": "typed", "span": "off"})
    assert model.spec == "extractive:reader=typed,span=False"
    with pytest.raises(ValueError, match="reader"):
        ExtractiveModel(reader="fancy")  # type: ignore[arg-type]
    # abstention is one lever of the agent's, whatever the model
    with pytest.raises(ValueError, match="abstain_below"):
        ExtractiveModel.from_options({"abstain": "0.4"})
    with pytest.raises(ValueError, match="on or off"):
        ExtractiveModel.from_options({"span": "maybe"})


def _frame(signals: list[dict[str, float]], verdicts: list[str]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "run_id": "r1", "suite": "public", "dimension": "correctness",
            "outcome": "answer", "infra_error": False,
            "verdict": verdicts, "signals": [json.dumps(s) for s in signals],
        }
    )  # fmt: skip


def _signals(focus: float) -> dict[str, float]:
    return dict.fromkeys(evidence.FEATURES, 0.0) | {"focus": focus, "support": 1.0}


def test_the_fit_finds_the_signal_that_separates_right_from_wrong() -> None:
    focus = [1.0, 0.9, 0.8, 1.0, 0.3, 0.2, 0.4, 0.1, 0.6, 0.5]
    verdicts = ["pass"] * 4 + ["fail"] * 4 + ["pass", "fail"]
    weights = fit(_frame([_signals(f) for f in focus], verdicts))
    by_name = dict(zip(weights.features, weights.weights, strict=True))
    assert by_name["focus"] > 1.0 and by_name["named"] == 0.0  # a constant signal gets nothing
    assert weights.points == 10 and weights.auroc_fit == 1.0
    assert weights.fitted_on == "r1 (suite public)"
    right = evidence.score(_signals(1.0), weights)
    wrong = evidence.score(_signals(0.1), weights)
    assert right > 0.5 > wrong


def test_a_run_with_one_class_or_no_signals_cannot_be_fitted() -> None:
    with pytest.raises(FitError, match="correct and incorrect"):
        fit(_frame([_signals(1.0)] * 3, ["pass"] * 3))
    with pytest.raises(FitError, match="no signals"):
        fit(_frame([_signals(1.0)], ["pass"]).drop(columns="signals"))


def test_the_review_threshold_is_the_lowest_cut_within_the_risk() -> None:
    scores = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]
    labels = [True, True, True, False, True, False]
    # kept at >= 0.5: 4 of 5 right (risk 0.2); at >= 0.4: 4 of 6 (risk 0.33)
    assert review_threshold(scores, labels, risk=0.25) == 0.5
    assert review_threshold(scores, labels, risk=0.5) == 0.4
    assert review_threshold([0.3, 0.2], [False, False], risk=0.1) == 1.0


def test_the_shipped_weights_say_what_they_were_fitted_on() -> None:
    weights = evidence.weights()
    assert weights.features == list(evidence.FEATURES)
    assert "suite public" in weights.fitted_on and weights.points >= 50
    assert 0.0 < weights.review_below < 1.0


@pytest.mark.slow
def test_confidence_fit_cli_prints_weights_and_refuses_bad_input(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    focus = [1.0, 0.9, 0.2, 0.1, 0.8, 0.3]
    frame = _frame([_signals(f) for f in focus], ["pass", "pass", "fail", "fail", "pass", "fail"])
    frame.to_parquet(runs / "r1.parquet")
    cmd = [sys.executable, "-m", "wikiqa.cli", "confidence", "fit"]
    done = subprocess.run([*cmd, "r1", "--out", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "focus" in done.stdout and "6 decided answers" in done.stdout
    missing = subprocess.run([*cmd, "nope", "--out", str(tmp_path)], capture_output=True, text=True)
    assert missing.returncode != 0 and "no such run" in missing.stderr
    risky = [*cmd, "r1", "--out", str(tmp_path), "--risk", "2"]
    bad = subprocess.run(risky, capture_output=True, text=True)
    assert bad.returncode != 0 and "--risk" in bad.stderr


def test_cached_extractive_turns_do_not_outlive_its_policy_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """New code for the policy is a new response-cache key."""
    from wikiqa.evals.running.cache import CachingModel, ResponseCache
    from wikiqa.models import UserMessage, extractive

    cache = ResponseCache(tmp_path / "responses.sqlite")
    messages = [UserMessage(text="who wrote dracula")]
    plain = CachingModel(ExtractiveModel(), cache, "0")
    before = plain.key("system", messages, [])
    monkeypatch.setattr(extractive, "_policy_hash", lambda: "other-code")
    assert plain.key("system", messages, []) != before
    cache.close()


def test_confidence_check_scores_labelled_answers_against_the_human_call(tmp_path: Path) -> None:
    """`wikiqa confidence check`: the shipped weights against human labels; an answer whose
    quote states the asked focus outranks one about another Australia."""
    from wikiqa.cli.main import main

    suite = tmp_path / "tasks.jsonl"
    suite.write_text(
        json.dumps({"id": "t1", "category": "factual", "question": "What is the capital of "
                    "Australia?", "dimensions": ["correctness"], "reference_answer": "Canberra", "should_refuse": False,
                    "answers": ["Canberra"]}) + "\n"
        + json.dumps({"id": "t2", "category": "factual", "question": "When was the Soviet "
                      "Union dissolved?", "dimensions": ["correctness"], "should_refuse": False,
                      "reference_answer": "1991", "answers": ["1991"]}) + "\n",
        encoding="utf-8",
    )  # fmt: skip

    def example(i: str, task: str, title: str, quote: str, verdict: str) -> str:
        answer = {
            "kind": "answer",
            "text": quote,
            "citations": [{"title": title, "quote": quote, "url": "https://x/" + i}],
        }
        return json.dumps({"id": i, "task_id": task, "answer": answer, "retrieved": [title],
                           "labels": {"correctness": verdict}})  # fmt: skip

    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        example("a", "t1", "Perth", "Perth is the capital city of Western Australia.", "fail")
        + "\n"
        + example("b", "t2", "Soviet Union", "The Soviet Union was dissolved on 26 December "
                  "1991.", "pass") + "\n",
        encoding="utf-8",
    )  # fmt: skip
    from contextlib import redirect_stdout
    from io import StringIO

    out = StringIO()
    with redirect_stdout(out):
        assert main(["confidence", "check", str(labels), "--suite", str(suite)]) == 0
    assert "AUROC 1.000" in out.getvalue() and "2 labelled answers" in out.getvalue()
    # a review threshold: chosen on these labels' curve, or given and checked on them
    out = StringIO()
    with redirect_stdout(out):
        base = ["confidence", "check", str(labels), "--suite", str(suite)]
        assert main([*base, "--risk", "0.25", "--review-below", "0.999"]) == 0
    printed = out.getvalue()
    # the right answer outranks the wrong one, so the cut for risk <= 0.25 keeps it alone
    assert re.search(r"chosen here for risk <= 0\.25 \d\.\d{3}: answers kept \(not sent to "
                     r"review\) 1/2 \[[\d., ]+\], wrong among them 0/1 ", printed)  # fmt: skip
    assert "given review threshold 0.999: answers kept (not sent to review) 0/2" in printed
    assert main([*base, "--risk", "1.5"]) == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text(example("c", "nope", "Perth", "Perth is a city.", "fail") + "\n")
    assert main(["confidence", "check", str(bad), "--suite", str(suite)]) != 0
    # other weights, from a file: focus counted against the answer ranks the two the other way
    inverted = evidence.weights().model_copy(update={"weights": [0, -5, 0, 0, 0, 0, 0]})
    weights = tmp_path / "w.json"
    weights.write_text(inverted.model_dump_json())
    out = StringIO()
    with redirect_stdout(out):
        check = ["confidence", "check", str(labels), "--suite", str(suite)]
        assert main([*check, "--weights", str(weights)]) == 0
    assert "AUROC 0.000" in out.getvalue()
    weights.write_text("{}")
    assert main([*check, "--weights", str(weights)]) == 1


def _task_frame(focus: list[float], verdicts: list[str], trials: int = 3) -> pd.DataFrame:
    """A run whose every task ran `trials` identical trials (the extractive answerer's way)."""
    frame = _frame([_signals(f) for f in focus], verdicts)
    frame["task_id"] = [f"t{i}" for i in range(len(focus))]
    return pd.concat([frame] * trials, ignore_index=True)


def test_cross_validation_scores_each_task_with_weights_that_never_saw_it() -> None:
    import random

    rng = random.Random(4)
    focus = [rng.random() for _ in range(40)]
    separable = _task_frame(focus, ["pass" if f > 0.5 else "fail" for f in focus])
    found = cross_validate(separable, l2s=(0.1, 10.0), folds=5)
    assert set(found) == {0.1, 10.0}
    # pooled out-of-fold scores come from five fits, so a clean signal ranks almost, not
    # exactly, perfectly
    assert all(fold.auroc is not None and fold.auroc >= 0.95 for fold in found.values())
    assert found[0.1].interval is not None and found[0.1].interval[0] >= 0.85
    # labels unrelated to the signal: in sample a fit still finds a slope, out of fold it is
    # no better than chance (trials of one task share a fold, so no answer is seen twice)
    noise = _task_frame(focus, [rng.choice(["pass", "fail"]) for _ in focus])
    out_of_fold = cross_validate(noise, l2s=(0.1,), folds=5)[0.1].auroc
    assert out_of_fold is not None and out_of_fold < fit(noise).auroc_fit and out_of_fold < 0.65
    with pytest.raises(FitError, match="K >= 2"):
        cross_validate(separable, folds=1)
    with pytest.raises(FitError, match="needs 50 tasks"):
        cross_validate(separable, folds=50)


@pytest.mark.slow
def test_confidence_fit_cli_chooses_l2_by_cross_validation(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    focus = [i / 19 for i in range(20)]
    _task_frame(focus, ["pass" if f > 0.4 else "fail" for f in focus]).to_parquet(
        runs / "r2.parquet"
    )
    cmd = [sys.executable, "-m", "wikiqa.cli", "confidence", "fit", "r2", "--out", str(tmp_path)]
    done = subprocess.run([*cmd, "--cv", "4"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = {line.split()[1]: line for line in done.stdout.splitlines() if line.startswith("l2 ")}
    assert set(lines) == {"0.1", "0.3", "1", "3", "10", "30"}
    best = max(lines, key=lambda k: (float(lines[k].split("AUROC ")[1].split()[0]), float(k)))
    assert f"chosen l2 {best}:" in done.stdout
    assert "60 decided answers" in done.stdout
    bad = subprocess.run([*cmd, "--cv", "1"], capture_output=True, text=True)
    assert bad.returncode != 0 and "K >= 2" in bad.stderr
    saved = tmp_path / "w.json"
    wrote = subprocess.run(
        [*cmd, "--l2", "3", "--save", str(saved)], capture_output=True, text=True
    )
    assert wrote.returncode == 0 and f"wrote {saved}" in wrote.stdout
    assert evidence.Weights.model_validate_json(saved.read_text()).points == 60


@pytest.mark.slow
def test_fit_takes_a_half_of_one_run_and_the_whole_of_another(tmp_path: Path) -> None:
    """public2's fit half beside the whole dev suite: --half splits the runs it is given,
    never a --whole one."""
    from wikiqa.evals.labels.halves import task_half

    runs = tmp_path / "runs"
    runs.mkdir()
    focus = [i / 19 for i in range(20)]
    verdicts = ["pass" if f > 0.4 else "fail" for f in focus]
    _task_frame(focus, verdicts).to_parquet(runs / "split.parquet")
    whole = _task_frame(focus, verdicts)
    whole["task_id"] = [f"dev-{t}" for t in whole["task_id"]]
    whole.to_parquet(runs / "whole.parquet")
    in_fit = sum(task_half(f"t{i}") == "fit" for i in range(20))
    assert 0 < in_fit < 20
    cmd = [sys.executable, "-m", "wikiqa.cli", "confidence", "fit", "split", "--out", str(tmp_path)]
    done = subprocess.run(
        [*cmd, "--half", "fit", "--whole", "whole"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert f"{3 * (in_fit + 20)} decided answers" in done.stdout
    assert "the fit half of split tasks" in done.stdout
    halved = subprocess.run([*cmd, "--half", "fit"], capture_output=True, text=True)
    assert f"{3 * in_fit} decided answers" in halved.stdout
    missing = subprocess.run([*cmd, "--whole", "nope"], capture_output=True, text=True)
    assert missing.returncode != 0 and missing.stderr.count("\n") == 1 and "nope" in missing.stderr


def test_the_threshold_from_folds_keeps_as_many_answers_as_the_folds_allowed() -> None:
    # out of fold, the top 3 are right and the 4th wrong: risk <= 0.25 keeps 4 (1 wrong in 4)
    folds = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]
    labels = [True, True, True, False, False, False]
    assert kept_share(folds, labels, risk=0.25) == 4
    assert kept_share(folds, labels, risk=0.0) == 3
    assert kept_share([0.2, 0.1], [False, False], risk=0.1) == 0
    # the final fit's scores sit on another scale: the threshold is its 4th highest score,
    # written down to 3 places so that answer stays kept
    final = [0.41, 0.4567, 0.39, 0.2, 0.1, 0.3]
    assert threshold_at(final, 4) == 0.3
    assert threshold_at(final, 2) == 0.41 and threshold_at(final, 1) == 0.456
    assert sum(s >= threshold_at(final, 2) for s in final) == 2
    assert threshold_at(final, 0) == 1.0 and threshold_at(final, 99) == 0.1


def test_a_fit_with_folds_takes_its_review_threshold_from_them() -> None:
    import random

    rng = random.Random(7)
    focus = [rng.random() for _ in range(40)]
    noisy = [("pass" if f > 0.5 else "fail") if rng.random() < 0.8 else "fail" for f in focus]
    frame = _task_frame(focus, noisy)
    held = cross_validate(frame, l2s=(1.0,), folds=5)[1.0]
    assert len(held.scores) == 120 and all(0.0 < s < 1.0 for s in held.scores)
    folded = fit(frame, risk=0.2, l2=1.0, held_out=held)
    in_sample = fit(frame, risk=0.2, l2=1.0)
    _, labels = points(frame)
    kept = kept_share(list(held.scores), labels, 0.2)
    scores = [evidence.score(s, folded) for s in points(frame)[0]]
    # as many answers are kept under the final weights as the folds kept within the risk
    assert sum(s >= folded.review_below for s in scores) >= kept
    assert sum(s >= folded.review_below for s in scores) <= kept + 3  # three trials a task tie
    assert folded.weights == in_sample.weights


def test_each_mode_scores_by_its_own_weights_when_the_answer_carries_their_signals() -> None:
    reading = evidence.weights("reading")
    assert reading.features != evidence.weights("tools").features
    assert "the fit half" in reading.fitted_on and 0.0 < reading.review_below <= 1.0
    carried = _signals(0.8) | dict.fromkeys(reading.features, 0.5)
    assert evidence.weights_for(carried, "reading") == reading
    assert evidence.score(carried, mode="reading") == evidence.score(carried, reading)
    # a reading answer drawn once, from a provider without log-probabilities: the tools weights
    bare = _signals(0.8)
    assert evidence.weights_for(bare, "reading") == evidence.weights("tools")
    assert evidence.score(bare, mode="reading") == evidence.score(bare)


def test_labelled_answers_are_scored_by_the_signals_their_run_recorded() -> None:
    from wikiqa.agent import Answer, Citation
    from wikiqa.evals.labels.confidence_fit import on_labels, recorded_signals
    from wikiqa.evals.labels.validation import LabelledExample
    from wikiqa.evals.tasks.task import Task

    weights = evidence.Weights(features=["sample_agreement"], weights=[4.0], bias=-2.0,
                               review_below=0.5, fitted_on="x", points=2, auroc_fit=1.0)  # fmt: skip
    run = _frame([{"sample_agreement": 1.0}, {"sample_agreement": 0.2}], ["pass", "fail"]).assign(
        task_id=["t1", "t2"], answer=["Canberra", "Sydney"]
    )
    recorded = recorded_signals(run)
    assert recorded == {("t1", "Canberra"): {"sample_agreement": 1.0},
                        ("t2", "Sydney"): {"sample_agreement": 0.2}}  # fmt: skip
    tasks = {
        t: Task(id=t, category="factual", question="What is the capital of Australia?",
                dimensions=["correctness"], reference_answer="Canberra", answers=["Canberra"],
                should_refuse=False)
        for t in ("t1", "t2")
    }  # fmt: skip

    def labelled(i: str, task: str, text: str, verdict: str) -> LabelledExample:
        answer = Answer(text=text, citations=[Citation(title="Australia", quote=text)])
        return LabelledExample(id=i, task_id=task, answer=answer, retrieved=["Australia"],
                               labels={"correctness": verdict})  # fmt: skip

    # the humans disagree with the graders on t2: the labels, not the run's verdicts, count
    examples = [labelled("a", "t1", "Canberra", "pass"), labelled("b", "t2", "Sydney", "pass")]
    found = on_labels(examples, tasks, weights, recorded)
    assert found.points == 2 and found.correct == 2
    lost = [labelled("c", "t1", "Melbourne", "fail")]
    with pytest.raises(FitError, match="the run gave no answer 'Melbourne' to t1"):
        on_labels(lost, tasks, weights, recorded)

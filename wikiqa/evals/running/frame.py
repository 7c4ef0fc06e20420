"""The long results table: one row per task x trial x graded dimension, written as parquet.

Every view (category x dimension table, pass@k, calibration, flips between runs) is rebuilt from
this table, so a notebook can reopen any past run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from wikiqa.evals.analysis.retrieval import trial_retrieval
from wikiqa.evals.running.records import RunMeta, TrialRecord
from wikiqa.evals.tasks.task import Task
from wikiqa.secrets import scrub_frame


def to_frame(
    meta: RunMeta, tasks: list[Task], records: dict[tuple[str, int], TrialRecord]
) -> pd.DataFrame:
    """The long results table: one row per task x trial x graded dimension."""
    c = meta.config
    run = {
        "run_id": meta.run_id, "git_sha": meta.git_sha, "experiment": c.experiment,
        "change": c.change, "kind": c.kind, "model": meta.model, "judge": meta.judge,
        "source": meta.source_name, "source_hash": meta.source_hash,
        "prompt_hash": meta.prompt_hash, "suite": c.suite_name,
        "suite_hash": meta.suite_hash, "trials": c.trials, "created_at": meta.created_at,
        "cassette_hash": meta.cassette_hash, "max_tokens": meta.max_tokens,
        "imported_replies": meta.imported_replies,
    }  # fmt: skip
    rows = []
    for task in tasks:
        for trial in range(c.trials):
            record = records.get((task.id, trial))
            if record is None:
                continue
            result = record.result
            output = result.output
            answer = output.text if output.kind == "answer" else None
            trial_cols = {
                "task_id": task.id, "category": task.category, "question": task.question,
                "trial": trial, "should_refuse": task.should_refuse, "outcome": output.kind,
                "decision": record.decision,
                "reason_code": None if output.kind == "answer" else output.reason_code,
                "answer": answer,
                "refusal_reason": None if output.kind == "answer" else output.reason,
                "citations": json.dumps(
                    [ci.model_dump() for ci in output.citations] if output.kind == "answer" else []
                ),
                "infra_error": record.failed, "attempts": record.attempts,
                "repairs": result.repairs, "guard_blocked": result.guard_blocked,
                "confidence": result.confidence, "needs_human_review": result.needs_human_review,
                "signals": json.dumps(result.signals, sort_keys=True),
                "input_tokens": result.usage.tokens.input_tokens,
                "output_tokens": result.usage.tokens.output_tokens,
                "cache_read_tokens": result.usage.tokens.cache_read_tokens,
                "cache_write_tokens": result.usage.tokens.cache_write_tokens,
                "estimated_cost_usd": result.usage.estimated_cost_usd,
                "model_calls": result.usage.model_calls, "tool_calls": result.usage.tool_calls,
                "latency_ms": result.latency_ms, "node": record.node,
                **trial_retrieval(task, result),
            }  # fmt: skip
            for g in record.grades:
                rows.append(
                    run
                    | trial_cols
                    | {
                        "dimension": g.dimension,
                        "verdict": g.verdict,
                        "passed": {"pass": True, "fail": False}.get(g.verdict),
                        "fraction": g.fraction,
                        "tier": g.tier,
                        "detail": json.dumps(g.detail, ensure_ascii=False, default=str),
                    }
                )
    return pd.DataFrame.from_records(rows)


def write_parquet(frame: pd.DataFrame, path: Path) -> Path:
    """Write beside the final name, then rename: a reader never sees half a file. A write that
    fails (a full disk) removes its temporary file and is an OSError naming the parquet."""
    path.parent.mkdir(parents=True, exist_ok=True)
    frame = scrub_frame(frame)  # error text from a model API may quote a key (wikiqa.secrets)
    tmp = path.with_suffix(".parquet.tmp")
    try:
        frame.to_parquet(tmp, index=False)
        os.replace(tmp, path)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        why = os.strerror(err.errno) if err.errno else str(err)
        raise OSError(err.errno, f"cannot write the run's results: {why}", str(path)) from err
    return path

"""Flat, JSON-safe records of finished (item, scorer) runs: what `--out` files and reports hold."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..core.errors import ScorerRunError, failure_code
from ..core.records import JudgeResults, judge_cost_usd
from ..core.result import ScorerRunResult, ScorerRunSnapshot
from ..errors import ScorewatchError
from ..evals.experiment import RunOutcome
from ..evals.noise import ScorerNoise, noise_of
from ..sinks.storable import storable

__all__ = [
    "RESULTS_FILE_INVALID",
    "error_code",
    "noise_of_records",
    "outcome_record",
    "read_results",
]

RESULTS_FILE_INVALID = "SCOREWATCH_RESULTS_FILE_INVALID"

_Count = Annotated[int, Field(strict=True, ge=0)]
_Number = Annotated[float, Field(allow_inf_nan=False)]


class _ResultRecord(BaseModel):
    """What reports and comparisons read of a record, checked: a hand-edited or crafted file
    is refused naming the line and the field, rather than failing somewhere in the report.
    Other keys (the content, the run id, ...) are kept as they are."""

    model_config = ConfigDict(extra="allow")

    item: _Count
    scorer_id: Annotated[str, Field(strict=True, min_length=1)]
    scale: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    direction: Literal["higher_is_better", "lower_is_better"] | None = None
    score: _Number | None = None
    reason: str | None = None
    not_scorable: dict[str, Any] | None = None
    error: str | None = None
    error_code: str | None = None
    failed_step: str | None = None
    judge_calls: _Count | None = None
    tokens: _Count | None = None
    estimated_cost_usd: _Number | None = None


def read_results(path: str | Path) -> list[dict[str, Any]]:
    """The records of an eval's `--out` file; `ScorewatchError` naming the file and line."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScorewatchError(f"{file}: no such file", code=RESULTS_FILE_INVALID) from None
    except (OSError, UnicodeDecodeError) as error:
        raise ScorewatchError(
            f"{file}: cannot read it ({error})", code=RESULTS_FILE_INVALID
        ) from None
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise ScorewatchError(
                f"{file}:{number}: not valid JSON ({error.msg})", code=RESULTS_FILE_INVALID
            ) from None
        if not isinstance(record, dict) or "scorer_id" not in record:
            raise ScorewatchError(
                f"{file}:{number}: not a result record (no scorer_id); expected a file written "
                "by `scorewatch eval --out`",
                code=RESULTS_FILE_INVALID,
            )
        try:
            _ResultRecord.model_validate(record)
        except ValidationError as error:
            from ..server.config.file import format_validation_error  # only on this path

            problems = "; ".join(format_validation_error(error))
            raise ScorewatchError(
                f"{file}:{number}: not a result record as `scorewatch eval --out` writes "
                f"them: {problems}",
                code=RESULTS_FILE_INVALID,
            ) from None
        records.append(record)
    return records


def error_code(error: BaseException | None) -> str | None:
    """The most specific stable code (`core.errors.failure_code`), else the error's class."""
    if error is None:
        return None
    return failure_code(error) or type(error).__name__


def _judge_totals(judge: JudgeResults | None) -> tuple[int, int, int]:
    """(model calls, attempts, total tokens) over every execution, failed ones included."""
    calls = attempts = tokens = 0
    for record in (judge or {}).values():
        for execution in record.executions:
            calls += execution.model_call_count
            attempts += execution.attempt_count
            usage = execution.usage
            if usage is not None:
                tokens += usage.total_tokens or 0
    return calls, attempts, tokens


# The fields of a results line that may hold content (a privacy policy redacts them).
_CONTENT = frozenset({"input", "output", "ground_truth", "reason", "not_scorable", "error"})


def outcome_record(outcome: RunOutcome, item: dict[str, Any]) -> dict[str, Any]:
    """One line of an eval's results file; its cost is what the run's judge records say."""
    snapshot: ScorerRunSnapshot | None
    if outcome.result is not None:
        snapshot = outcome.result
    elif isinstance(outcome.error, ScorerRunError):
        snapshot = outcome.error.result
    else:
        snapshot = None
    judge = snapshot.judge if snapshot is not None else None
    calls, attempts, tokens = _judge_totals(judge)
    record: dict[str, Any] = {
        "item": outcome.item_index,
        "scorer_id": outcome.scorer.id,
        "scorer_name": outcome.scorer.name,
        # What a comparison needs to tell a drop from a rise: the top of the range and which way
        # is better.
        "scale": outcome.scorer.scale,
        "direction": outcome.scorer.direction,
        # Which definition scored it: comparisons refuse to mix versions.
        "scorer_version": outcome.scorer.version_fingerprint,
        "scorer_declared_version": outcome.scorer.declared_version,
        # Which judgement of the item this is (`eval --repeat`); 0 without repeats.
        "repeat": outcome.repeat,
        "run_id": snapshot.run_id if snapshot is not None else None,
        "input": item["input"] if "input" in item else item.get("inputs"),
        "output": snapshot.output if snapshot is not None else item.get("output"),
        "ground_truth": item.get("ground_truth"),
        "score": None,
        "reason": None,
        "not_scorable": None,
        "error": None,
        "error_code": None,
        "failed_step": None,
        "completed_steps": None,
        "judge_calls": calls,
        "judge_attempts": attempts,
        "tokens": tokens,
        "estimated_cost_usd": judge_cost_usd(judge),
    }
    if isinstance(outcome.result, ScorerRunResult):
        record["score"] = outcome.result.score
        if outcome.result.not_scorable is not None:
            record["not_scorable"] = outcome.result.not_scorable.model_dump(mode="json")
        reason = outcome.result.reason
        record["reason"] = reason if isinstance(reason, str) else None
    else:
        error = outcome.error
        record["error"] = getattr(error, "message", None) or str(error) or type(error).__name__
        record["error_code"] = error_code(error)
        if isinstance(error, ScorerRunError):
            record["failed_step"] = error.failed_step
            record["completed_steps"] = list(error.completed_steps)
    if outcome.redaction is not None:  # a privacy policy: the file keeps no personal data
        return {
            key: storable(value, privacy=outcome.redaction) if key in _CONTENT else value
            for key, value in record.items()
        }
    return record


def noise_of_records(records: list[dict[str, Any]]) -> dict[str, ScorerNoise]:
    """Each scorer's judge noise and item spread, for the scorers whose items were judged more
    than once (`eval --repeat`); empty without repeats."""
    repeated = {str(r["scorer_id"]) for r in records if int(r.get("repeat") or 0) > 0}
    by_scorer: dict[str, dict[int, list[float]]] = {scorer_id: {} for scorer_id in repeated}
    for record in records:
        scorer_id, score = str(record["scorer_id"]), record.get("score")
        if scorer_id in by_scorer and not record.get("error") and isinstance(score, int | float):
            by_scorer[scorer_id].setdefault(int(record.get("item") or 0), []).append(float(score))
    return {
        scorer_id: found for scorer_id, by_item in by_scorer.items() if (found := noise_of(by_item))
    }

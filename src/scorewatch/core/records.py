"""Judge execution records: what one prompt step asked the judge and what it cost.

One record per prompt step execution, holding every attempt (retries and the structured-output
fallback) in `attempt_count`, every provider round trip in `model_call_count`, and the usage of
every attempt that reached the model. The record is the source of truth for a run; telemetry is
derived from it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, SerializationInfo, field_serializer, field_validator

from ..judge.protocol import JudgeCost
from ..judge.usage import JudgeUsage
from ..judge.wire import WireModel
from .steps import StepName, camel_step, snake_step

__all__ = [
    "JudgeErrorSummary",
    "JudgeExecution",
    "JudgeExecutionFailure",
    "JudgeExecutionSuccess",
    "JudgeResults",
    "JudgeStepRecord",
    "dump_judge_results",
    "judge_cost_usd",
    "load_judge_results",
]


class JudgeErrorSummary(WireModel):
    """Name, message and stable code of a judge failure. Never headers or bodies."""

    name: str
    message: str
    code: str | None = None


class _ExecutionBase(WireModel):
    prompt: str
    judge_model_id: str
    judge_provider: str | None = None
    # Which client served the calls ("openai_http", "litellm"); None for other judge models.
    judge_transport: str | None = None
    attempt_count: int = Field(ge=1)
    model_call_count: int = Field(ge=0)
    duration_ms: int = Field(ge=0)
    # Beyond the reference's record: what the attempts cost in USD, each the provider's own
    # figure else the price-table estimate (`JudgeReply.cost_usd`); left out when none was known.
    # Summaries (the eval CLI, the demo) add these up instead of pricing replies themselves.
    estimated_cost_usd: float | None = None


class JudgeExecutionSuccess(_ExecutionBase):
    status: Literal["success"] = "success"
    output: Any
    usage: JudgeUsage = JudgeUsage()
    cost: JudgeCost | None = None
    # Beyond the reference's record (left out unless set): True when the answer was reused from
    # the verdict cache (core/verdict_cache.py) and no model was called; the execution then costs
    # 0 (`estimated_cost_usd`), has no usage and no model calls, counts its one lookup as its
    # one attempt, and `saved_cost_usd` is what the original execution cost.
    cached: bool | None = None
    saved_cost_usd: float | None = None

    @field_serializer("usage")
    def _usage_always(self, usage: JudgeUsage, info: SerializationInfo) -> dict[str, Any]:
        # A successful record always carries `usage`, even when empty (`{}`).
        return usage.model_dump(mode=info.mode, by_alias=info.by_alias)


class JudgeExecutionFailure(_ExecutionBase):
    status: Literal["failed"] = "failed"
    output: Any = None
    raw_output: str | None = None
    usage: JudgeUsage | None = None
    finish_reason: str | None = None
    error: JudgeErrorSummary


JudgeExecution = Annotated[
    JudgeExecutionSuccess | JudgeExecutionFailure, Field(discriminator="status")
]


class JudgeStepRecord(WireModel):
    executions: list[JudgeExecution]


JudgeResults = dict[StepName, JudgeStepRecord]
"""Judge records per step, keys in execution order, only for prompt steps that reached a model."""


def judge_cost_usd(judge: JudgeResults | None) -> float | None:
    """What every execution in `judge` cost in USD (`estimated_cost_usd` added up, failed
    executions included); None when no execution knew its cost."""
    total: float | None = None
    for record in (judge or {}).values():
        for execution in record.executions:
            cost = execution.estimated_cost_usd
            if cost is not None:
                total = cost if total is None else total + cost
    return total


def dump_judge_results(judge: JudgeResults, info: SerializationInfo) -> dict[str, Any]:
    return {
        (camel_step(step) if info.by_alias else step): record.model_dump(
            mode=info.mode, by_alias=info.by_alias
        )
        for step, record in judge.items()
    }


def load_judge_results(value: Any) -> Any:
    if isinstance(value, dict):
        return {snake_step(key): record for key, record in value.items()}
    return value


class _JudgeField(WireModel):
    """Mixin for models with a `judge` field keyed by step name (snake in Python, camel on wire)."""

    @field_validator("judge", mode="before", check_fields=False)
    @classmethod
    def _load_judge(cls, value: Any) -> Any:
        return load_judge_results(value)

    @field_serializer("judge", check_fields=False)
    def _dump_judge(self, judge: JudgeResults | None, info: SerializationInfo) -> Any:
        return None if judge is None else dump_judge_results(judge, info)

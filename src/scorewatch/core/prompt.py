"""Executing a prompt step: the judge call, its retries and fallback, and its judge record.

Accounting follows the reference system (docs/reference-semantics.md, "Judge records"):
`attempt_count` counts every call made to the judge (transient-error retries and the
structured-output fallback included); `model_call_count` and `usage` count only calls that reached
the model; `duration_ms` covers the whole step, `create_prompt` included."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable
from dataclasses import dataclass, replace
from time import perf_counter
from typing import Any

from .._throttled_log import ThrottledLog
from ..errors import ScorewatchError
from ..judge.errors import StructuredOutputError
from ..judge.protocol import JsonPromptInjection, JudgeCost, JudgeReply, JudgeRequest
from ..judge.retry import NO_RETRY, RetryPolicy
from ..judge.usage import EMPTY_USAGE, JudgeUsage, add_usage
from .answer_json import NeedsSearch
from .errors import MISSING_MODEL_OR_INSTRUCTIONS
from .events import JudgeAttempt, JudgeCacheLookup, RunListener, tell
from .judge_standin import current_judge_stand_in
from .offload import STEP_EXECUTOR, run_off_loop
from .records import JudgeErrorSummary, JudgeExecutionFailure, JudgeExecutionSuccess
from .result import StepContext
from .schema import parse_json_reply
from .scorer import ResolvedJudge, Scorer, Step
from .verdict_cache import CachedVerdict, VerdictCaching, current_verdict_caching, verdict_key

__all__ = ["PromptStepFailure", "execute_prompt_step"]

_CACHE_LOG = ThrottledLog(logging.getLogger("scorewatch.verdict_cache"))


class PromptStepFailure(Exception):
    """Carries the failed step's cause and its judge record (None when no attempt was made)."""

    def __init__(
        self, cause: BaseException, execution: JudgeExecutionFailure | None, prompt: str | None
    ) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.execution = execution
        self.prompt = prompt


@dataclass(slots=True)
class _Ledger:
    """What the step's attempts add up to so far."""

    attempt_count: int = 0
    model_call_count: int = 0
    usage: JudgeUsage = EMPTY_USAGE
    raw_output: str | None = None
    finish_reason: str | None = None
    output: Any = None
    has_output: bool = False
    cost: JudgeCost | None = None
    cost_usd: float | None = None
    cached: bool = False
    saved_cost_usd: float | None = None

    def count_reply(self, reply: JudgeReply) -> tuple[JudgeUsage, int]:
        calls = max(reply.model_call_count, 1)
        self.model_call_count += calls
        self.usage = add_usage(self.usage, reply.usage)
        if reply.cost is not None:
            self.cost = _add_cost(self.cost, reply.cost)
        cost_usd = reply.cost_usd
        if cost_usd is not None:
            self.cost_usd = cost_usd if self.cost_usd is None else self.cost_usd + cost_usd
        self.raw_output = reply.text
        if reply.finish_reason is not None:
            self.finish_reason = reply.finish_reason
        return reply.usage, calls

    def count_error(self, error: BaseException) -> tuple[JudgeUsage, int]:
        usage = getattr(error, "usage", None) or EMPTY_USAGE
        text = getattr(error, "text", None)
        calls = getattr(error, "model_call_count", 0) or 0
        reached_model = calls > 0 or not usage.is_empty() or bool(text)
        if reached_model:
            calls = max(calls, 1)
            self.model_call_count += calls
            self.usage = add_usage(self.usage, usage)
            if text:
                self.raw_output = text
        reason = getattr(error, "finish_reason", None)
        if reason is not None:
            self.finish_reason = reason
        elif self.finish_reason is None:
            self.finish_reason = "error"
        return (usage, calls) if reached_model else (EMPTY_USAGE, 0)


def _add_cost(total: JudgeCost | None, cost: JudgeCost) -> JudgeCost:
    if total is None:
        return cost
    if total.unit != cost.unit:
        # Amounts in different units cannot be added; keep the first authoritative one.
        return total
    return JudgeCost(amount=total.amount + cost.amount, unit=cost.unit, source=cost.source)


_SEARCH_ON_LOOP_CHARS = 2_048


def _retry_policy(judge: ResolvedJudge) -> RetryPolicy:
    policy = getattr(judge.model, "retry_policy", None)
    return policy if isinstance(policy, RetryPolicy) else NO_RETRY


def _fallback_injection(injection: JsonPromptInjection) -> JsonPromptInjection:
    return injection if injection in ("inline", "system") else True


class _StepCall:
    """One prompt step's conversation with its judge."""

    __slots__ = (
        "caching",
        "judge",
        "ledger",
        "listeners",
        "policy",
        "scorer_id",
        "step",
        "version",
    )

    def __init__(
        self,
        scorer: Scorer,
        step: Step,
        judge: ResolvedJudge,
        listeners: tuple[RunListener, ...],
    ):
        self.scorer_id = scorer.id
        self.caching = current_verdict_caching(scorer.id)
        self.version = scorer.version_fingerprint if self.caching is not None else ""
        self.step = step
        self.judge = judge
        self.listeners = listeners
        self.policy = _retry_policy(judge)
        self.ledger = _Ledger()

    async def call(self, request: JudgeRequest) -> JudgeReply:
        """One logical call: an attempt, plus retries of transient failures."""
        retries = 0
        while True:
            self.ledger.attempt_count += 1
            attempt = replace(request, attempt=self.ledger.attempt_count)
            if self.listeners:
                self._attempt_started(attempt)
            started = perf_counter()
            try:
                reply = self._checked(await self._complete(attempt))
            except Exception as error:
                usage, calls = self.ledger.count_error(error)
                self._attempt_finished(attempt, started, None, error, usage, calls)
                if not self.policy.should_retry(error, retries):
                    raise
                await asyncio.sleep(self.policy.delay(error, retries))
                retries += 1
                continue
            usage, calls = self.ledger.count_reply(reply)
            self._attempt_finished(attempt, started, reply, None, usage, calls)
            return reply

    def _complete(self, request: JudgeRequest) -> Awaitable[JudgeReply]:
        stand_in = current_judge_stand_in()
        model = self.judge.model
        return model.complete(request) if stand_in is None else stand_in(model, request)

    def _checked(self, reply: Any) -> JudgeReply:
        # A hand-written JudgeModel may return the wrong thing; say so instead of failing later
        # with an AttributeError deep in the accounting.
        if isinstance(reply, JudgeReply) and isinstance(reply.text, str):
            return reply
        got = type(reply).__name__
        if isinstance(reply, JudgeReply):
            got = f"a JudgeReply whose text is {type(reply.text).__name__}"
        raise ScorewatchError(
            f"scorer {self.scorer_id!r}, step {self.step.name!r}: judge model "
            f"{self.judge.model.model_id!r} returned {got}, expected a JudgeReply with str text",
            code="SCOREWATCH_JUDGE_INVALID_REPLY",
            domain="JUDGE",
            details={"scorerId": self.scorer_id, "step": self.step.name},
        )

    def _attempt_started(self, request: JudgeRequest) -> None:
        tell(self.listeners, "judge_attempt_started", self.step.name, request)

    def _attempt_finished(
        self,
        request: JudgeRequest,
        started: float,
        reply: JudgeReply | None,
        error: BaseException | None,
        usage: JudgeUsage,
        calls: int,
    ) -> None:
        if not self.listeners:
            return
        event = JudgeAttempt(
            step=self.step.name,
            number=request.attempt,
            fallback=request.fallback,
            model_id=self.judge.model.model_id,
            provider=self.judge.model.provider,
            request=request,
            duration_s=perf_counter() - started,
            reply=reply,
            error=error,
            usage=usage,
            model_call_count=calls,
            transport=transport_of(self.judge.model),
        )
        tell(self.listeners, "judge_attempt_finished", event)

    async def validated(self, reply: JudgeReply) -> Any:
        assert self.step.validate is not None
        text, finish_reason = reply.text, reply.finish_reason
        try:
            try:
                # Plain JSON is read here (C speed); so is a short answer that needs searching.
                parsed = parse_json_reply(
                    text, finish_reason, search=len(text) <= _SEARCH_ON_LOOP_CHARS
                )
            except NeedsSearch:
                # Searching a long answer for its JSON is pure-Python work: off the event loop,
                # in the scoring pool when the caller installed one (core.offload).
                parsed = await run_off_loop(
                    STEP_EXECUTOR.get(), parse_json_reply, text, finish_reason
                )
            value = self.step.validate(parsed)
        except StructuredOutputError:
            if self.ledger.finish_reason != "length":
                self.ledger.finish_reason = "error"
            raise
        self.ledger.output, self.ledger.has_output = value, True
        return value

    async def run(self, prompt: str) -> tuple[Any, JudgeReply]:
        judge, step = self.judge, self.step
        request = JudgeRequest(
            prompt=prompt,
            instructions=judge.instructions,
            step=step.name,
            schema=step.schema,
            json_prompt_injection=judge.json_prompt_injection,
        )
        caching = self.caching
        if caching is None:
            return await self.judged(request)
        key = verdict_key(self.version, judge.model, request)
        reused = await self.reused(caching, key)
        if reused is not None:
            return reused
        value, reply = await self.judged(request)
        # Stored only now: the step succeeded, its answer validated. A failure raised above.
        verdict = CachedVerdict(
            reply.text, reply.finish_reason, self.ledger.cost_usd, reply.response_model
        )
        try:
            await caching.cache.put(key, verdict)
        except Exception as error:
            _CACHE_LOG.warning("put", "verdict cache: storing failed: %r", error)
        return value, reply

    async def reused(self, caching: VerdictCaching, key: str) -> tuple[Any, JudgeReply] | None:
        """The stored answer for `key`, validated as if the judge had just given it; None (a
        miss) when there is none, it no longer validates, or the cache failed."""
        try:
            verdict = await caching.cache.get(key)
        except Exception as error:
            _CACHE_LOG.warning("get", "verdict cache: lookup failed, judging: %r", error)
            verdict = None
        found: tuple[Any, JudgeReply] | None = None
        if verdict is not None:
            reply = JudgeReply(
                text=verdict.text,
                finish_reason=verdict.finish_reason,
                model_call_count=0,
                response_model=verdict.response_model,
                estimated_cost_usd=0.0,
            )
            ledger = self.ledger
            try:
                value = reply.text if self.step.schema is None else await self.validated(reply)
            except Exception:
                ledger.output, ledger.has_output, ledger.finish_reason = None, False, None
            else:
                ledger.output, ledger.has_output = value, True
                ledger.attempt_count, ledger.cost_usd = 1, 0.0
                ledger.raw_output, ledger.finish_reason = reply.text, reply.finish_reason
                ledger.cached, ledger.saved_cost_usd = True, verdict.cost_usd
                found = value, reply
        if self.listeners:
            lookup = JudgeCacheLookup(
                step=self.step.name,
                model_id=self.judge.model.model_id,
                provider=self.judge.model.provider,
                hit=found is not None,
                saved_cost_usd=self.ledger.saved_cost_usd,
            )
            tell(self.listeners, "judge_cache_lookup", lookup)
        return found

    async def judged(self, request: JudgeRequest) -> tuple[Any, JudgeReply]:
        """The judge's validated answer to `request`, falling back once when it did not fit."""
        step = self.step
        reply = await self.call(request)
        if step.schema is None:
            self.ledger.output, self.ledger.has_output = reply.text, True
            return reply.text, reply
        try:
            return await self.validated(reply), reply
        except StructuredOutputError:
            pass
        fallback = replace(
            request,
            fallback=True,
            json_prompt_injection=_fallback_injection(self.judge.json_prompt_injection),
        )
        reply = await self.call(fallback)
        return await self.validated(reply), reply


def _error_summary(error: BaseException) -> JudgeErrorSummary:
    code = error.code if isinstance(error, ScorewatchError) else getattr(error, "code", None)
    message = error.message if isinstance(error, ScorewatchError) else str(error)
    return JudgeErrorSummary(
        name=type(error).__name__,
        message=message or type(error).__name__,
        code=code if isinstance(code, str) else None,
    )


def transport_of(model: object) -> str | None:
    """The client a judge model says served it (`LiteLLMJudge.transport`), if it says; a
    judge stand-in that names its own transport (the Batch API's) serves in its place."""
    stand_in = current_judge_stand_in()
    transport = getattr(stand_in, "transport", None) if stand_in is not None else None
    if not isinstance(transport, str):
        transport = getattr(model, "transport", None)
    return transport if isinstance(transport, str) else None


def _duration_ms(started: float) -> int:
    return max(0, round((perf_counter() - started) * 1000))


async def execute_prompt_step(
    scorer: Scorer, step: Step, ctx: StepContext, listeners: tuple[RunListener, ...]
) -> tuple[Any, str, JudgeExecutionSuccess]:
    """Run one prompt step: (result, prompt, success record), or raise `PromptStepFailure`."""
    started = perf_counter()
    prompt: str | None = None
    call: _StepCall | None = None
    try:
        assert step.prompt is not None
        made = step.prompt.create_prompt(ctx)
        if inspect.isawaitable(made):
            made = await made
        if not isinstance(made, str):
            raise ScorewatchError(
                f"scorer {scorer.id!r}, step {step.name!r}: create_prompt returned "
                f"{type(made).__name__}, expected str",
                code="SCOREWATCH_SCORER_INVALID_PROMPT",
            )
        prompt = made
        if step.judge is None:
            raise ScorewatchError(
                f"scorer {scorer.id!r}, step {step.name!r}: no judge {step.missing_judge} "
                "configured (set JudgeConfig on the scorer or on the PromptStep)",
                code=MISSING_MODEL_OR_INSTRUCTIONS,
                details={"scorerId": scorer.id, "step": step.name},
            )
        call = _StepCall(scorer, step, step.judge, listeners)
        value, reply = await call.run(prompt)
        if step.judge.on_finish is not None:
            finished = step.judge.on_finish(reply)
            if inspect.isawaitable(finished):
                await finished
    except Exception as error:
        execution = None
        if call is not None and call.ledger.attempt_count > 0:
            ledger = call.ledger
            execution = JudgeExecutionFailure(
                prompt=prompt or "",
                judge_model_id=call.judge.model.model_id,
                judge_provider=call.judge.model.provider,
                judge_transport=transport_of(call.judge.model),
                output=ledger.output if ledger.has_output else None,
                raw_output=ledger.raw_output,
                usage=None if ledger.usage.is_empty() else ledger.usage,
                attempt_count=ledger.attempt_count,
                model_call_count=ledger.model_call_count,
                duration_ms=_duration_ms(started),
                finish_reason=ledger.finish_reason,
                error=_error_summary(error),
                estimated_cost_usd=ledger.cost_usd,
            )
        raise PromptStepFailure(error, execution, prompt) from error
    ledger = call.ledger
    execution_ok = JudgeExecutionSuccess(
        prompt=prompt,
        judge_model_id=call.judge.model.model_id,
        judge_provider=call.judge.model.provider,
        judge_transport=transport_of(call.judge.model),
        output=value,
        usage=ledger.usage,
        cost=ledger.cost,
        estimated_cost_usd=ledger.cost_usd,
        attempt_count=max(ledger.attempt_count, 1),
        model_call_count=0 if ledger.cached else max(ledger.model_call_count, 1),
        duration_ms=_duration_ms(started),
        cached=True if ledger.cached else None,
        saved_cost_usd=ledger.saved_cost_usd,
    )
    return value, prompt, execution_ok

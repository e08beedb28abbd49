"""Run-lifecycle hooks: how add-ons (telemetry, live scoring) observe runs without core knowing.

An observer registered with `add_run_observer` is asked, at the start of every run, for a
listener of that run (or None). The listener then hears the run's steps and judge attempts, in
order, on the task running the scorer, so it may make its own context current between a
`*_started` call and the matching `*_finished` call. With no observer registered a run pays one
tuple check. A listener that raises is logged and ignored: it never breaks a run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..judge.protocol import JudgeReply, JudgeRequest
from ..judge.usage import JudgeUsage
from .steps import StepName, StepType

if TYPE_CHECKING:
    from .records import JudgeExecutionFailure, JudgeExecutionSuccess
    from .result import ScorerRun, ScorerRunResult
    from .scorer import Scorer

__all__ = [
    "JudgeAttempt",
    "RunListener",
    "RunObserver",
    "RunStart",
    "StepOutcome",
    "add_run_observer",
    "current_observers",
    "remove_run_observer",
]

logger = logging.getLogger("scorewatch.hooks")


@dataclass(frozen=True, slots=True)
class RunStart:
    scorer: Scorer
    run: ScorerRun
    emit_score: bool = True


@dataclass(frozen=True, slots=True)
class JudgeAttempt:
    """One call to the judge model, as it happened.

    `usage` and `model_call_count` are exactly what this attempt added to the step's judge record
    (zero when the call never reached the model), so summing attempts reproduces the record.
    """

    step: StepName
    number: int
    fallback: bool
    model_id: str
    provider: str | None
    request: JudgeRequest
    duration_s: float
    reply: JudgeReply | None
    error: BaseException | None
    usage: JudgeUsage
    model_call_count: int
    transport: str | None = None


@dataclass(frozen=True, slots=True)
class StepOutcome:
    step: StepName
    step_type: StepType
    duration_s: float
    error: BaseException | None = None
    prompt: str | None = None
    execution: JudgeExecutionSuccess | JudgeExecutionFailure | None = None
    result: Any = None


class RunListener(Protocol):
    """Hears one run. `trace_id`, when set, becomes the result's `score_trace_id`."""

    trace_id: str | None

    def step_started(self, step: StepName, step_type: StepType) -> None: ...

    def judge_attempt_started(self, step: StepName, request: JudgeRequest) -> None: ...

    def judge_attempt_finished(self, attempt: JudgeAttempt) -> None: ...

    def step_finished(self, outcome: StepOutcome) -> None: ...

    def run_finished(self, result: ScorerRunResult, duration_s: float) -> None: ...

    def run_failed(self, error: BaseException, duration_s: float) -> None: ...


class RunObserver(Protocol):
    def run_started(self, start: RunStart) -> RunListener | None: ...


_observers: tuple[RunObserver, ...] = ()


def add_run_observer(observer: RunObserver) -> None:
    global _observers
    if observer not in _observers:
        _observers = (*_observers, observer)


def remove_run_observer(observer: RunObserver) -> None:
    global _observers
    _observers = tuple(o for o in _observers if o is not observer)


def current_observers() -> tuple[RunObserver, ...]:
    return _observers


def start_listeners(start: RunStart) -> tuple[RunListener, ...]:
    listeners: list[RunListener] = []
    for observer in _observers:
        try:
            listener = observer.run_started(start)
        except Exception:
            logger.exception("run observer %r failed at run start; ignored", observer)
            continue
        if listener is not None:
            listeners.append(listener)
    return tuple(listeners)


def notify(listeners: tuple[RunListener, ...], call: Callable[[RunListener], object]) -> None:
    for listener in listeners:
        try:
            call(listener)
        except Exception:
            logger.exception("run listener %r failed; ignored", listener)

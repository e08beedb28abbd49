"""Shared helpers for the scorer-core tests: judge configs, recording run observers, JSON checks."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import scorewatch as sw
from scorewatch.core import (
    JudgeAttempt,
    JudgeCacheLookup,
    Observer,
    RunListener,
    RunStart,
    StepOutcome,
)
from scorewatch.core.events import current_observers
from scorewatch.core.result import ScorerRunResult, ScorerRunSnapshot
from scorewatch.judge import JudgeReply, JudgeRequest, JudgeUsage

INSTRUCTIONS = "You are a careful judge."
USAGE_10_20_30 = {"inputTokens": 10, "outputTokens": 20, "totalTokens": 30}
USAGE_20_40_60 = {"inputTokens": 20, "outputTokens": 40, "totalTokens": 60}


def judge_config(
    model: Any, instructions: str | None = INSTRUCTIONS, **fields: Any
) -> sw.JudgeConfig:
    return sw.JudgeConfig(model=model, instructions=instructions, **fields)


def wire(model: ScorerRunResult | ScorerRunSnapshot) -> dict[str, Any]:
    """The camelCase wire form, checked to be strict JSON (no NaN, no infinities)."""
    data = model.model_dump(mode="json", by_alias=True)
    json.dumps(data, allow_nan=False)
    return data


def round_trip(result: ScorerRunResult) -> ScorerRunResult:
    text = json.dumps(result.model_dump(mode="json", by_alias=True), allow_nan=False)
    return ScorerRunResult.model_validate(json.loads(text))


def round_trip_snapshot(snapshot: ScorerRunSnapshot) -> ScorerRunSnapshot:
    text = json.dumps(snapshot.model_dump(mode="json", by_alias=True), allow_nan=False)
    return ScorerRunSnapshot.model_validate(json.loads(text))


def executions(data: dict[str, Any], step: str) -> list[dict[str, Any]]:
    """`data["judge"][step]["executions"]` of a wire dump."""
    records: list[dict[str, Any]] = data["judge"][step]["executions"]
    return records


def reply(text: str, **fields: Any) -> JudgeReply:
    fields.setdefault("usage", JudgeUsage(input_tokens=10, output_tokens=20, total_tokens=30))
    return JudgeReply(text=text, **fields)


@dataclass
class RecordingListener(RunListener):
    """Keeps every hook call of one run, in order."""

    trace_id: str | None = None
    fail_on: str | None = None
    events: list[tuple[str, Any]] = field(default_factory=list)

    def _record(self, name: str, payload: Any) -> None:
        self.events.append((name, payload))
        if self.fail_on == name:
            raise RuntimeError(f"listener fails on {name}")

    def step_started(self, step: str, step_type: str) -> None:
        self._record("step_started", (step, step_type))

    def judge_attempt_started(self, step: str, request: JudgeRequest) -> None:
        self._record("judge_attempt_started", (step, request))

    def judge_attempt_finished(self, attempt: JudgeAttempt) -> None:
        self._record("judge_attempt_finished", attempt)

    def judge_cache_lookup(self, lookup: JudgeCacheLookup) -> None:
        self._record("judge_cache_lookup", lookup)

    def step_finished(self, outcome: StepOutcome) -> None:
        self._record("step_finished", outcome)

    def run_finished(self, result: ScorerRunResult, duration_s: float) -> None:
        self._record("run_finished", result)

    def run_failed(self, error: BaseException, duration_s: float) -> None:
        self._record("run_failed", error)

    def names(self) -> list[str]:
        return [name for name, _ in self.events]

    def payloads(self, name: str) -> list[Any]:
        return [payload for event, payload in self.events if event == name]


@dataclass
class RecordingObserver(Observer):
    """A run observer that hands every run a `RecordingListener`."""

    trace_id: str | None = None
    fail_on: str | None = None
    fail_at_start: bool = False
    starts: list[RunStart] = field(default_factory=list)
    listeners: list[RecordingListener] = field(default_factory=list)

    def run_started(self, start: RunStart) -> RecordingListener | None:
        self.starts.append(start)
        if self.fail_at_start:
            raise RuntimeError("observer fails at run start")
        listener = RecordingListener(trace_id=self.trace_id, fail_on=self.fail_on)
        self.listeners.append(listener)
        return listener

    @property
    def only(self) -> RecordingListener:
        assert len(self.listeners) == 1, f"expected one run, saw {len(self.listeners)}"
        return self.listeners[0]


@contextmanager
def observing(observer: RecordingObserver | None = None) -> Iterator[RecordingObserver]:
    watched = observer or RecordingObserver()
    bus = current_observers()
    bus.add(watched)
    try:
        yield watched
    finally:
        bus.remove(watched)


def cause_chain(error: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__
    return chain

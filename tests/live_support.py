"""Shared set-up for the live-scoring tests: small scorers and judges that block or fail."""

from __future__ import annotations

import asyncio
import random
import string
import threading
from datetime import UTC, datetime
from typing import Any

import scorewatch as sw
from scorewatch.core import AgentCall, ScorerRunResult
from scorewatch.judge import JudgeProviderError, JudgeRequest
from scorewatch.live import CallbackSink, ScoreRecord
from scorewatch.testing import ScriptedJudge

SCORE_REPLY = '{"score": 0.75}'


def judged_scorer(judge: sw.JudgeModel, scorer_id: str = "quality") -> sw.Scorer:
    """One prompt step: the judge gives the score."""
    return sw.create_scorer(
        id=scorer_id,
        description="scores the answer",
        judge=sw.JudgeConfig(model=judge, instructions="You are a strict judge."),
    ).generate_score(sw.PromptStep("score it", lambda ctx: f"Rate: {ctx.run.output}"))


def constant_scorer(scorer_id: str = "constant", score: float = 1.0) -> sw.Scorer:
    return sw.create_scorer(id=scorer_id, description="always the same").generate_score(
        lambda ctx: score
    )


def answering_judge() -> ScriptedJudge:
    return ScriptedJudge(lambda request: SCORE_REPLY)


def failing_judge() -> ScriptedJudge:
    def fail(request: JudgeRequest) -> Any:
        return JudgeProviderError("judge outage", status_code=503)

    return ScriptedJudge(fail)


class GatedJudge(ScriptedJudge):
    """A judge that blocks on an `asyncio.Event` (created on the loop it runs on) until opened.

    `started` counts calls that reached the gate, `max_waiting` the most blocked at once.
    """

    def __init__(self) -> None:
        super().__init__(self._reply)
        self.gate: asyncio.Event | None = None
        self.waiting = 0
        self.max_waiting = 0

    async def _reply(self, request: JudgeRequest) -> str:
        if self.gate is None:
            self.gate = asyncio.Event()
        self.waiting += 1
        self.max_waiting = max(self.max_waiting, self.waiting)
        try:
            await self.gate.wait()
        finally:
            self.waiting -= 1
        return SCORE_REPLY

    def open(self) -> None:
        if self.gate is None:
            self.gate = asyncio.Event()
        self.gate.set()


class ThreadGatedJudge(ScriptedJudge):
    """Blocks on a `threading.Event`, for jobs on scorewatch's background loop."""

    def __init__(self) -> None:
        super().__init__(self._reply)
        self.gate = threading.Event()
        self.reached = threading.Semaphore(0)

    async def _reply(self, request: JudgeRequest) -> str:
        self.reached.release()
        await asyncio.to_thread(self.gate.wait)
        return SCORE_REPLY


class Collected:
    """A `CallbackSink` target that keeps results, thread-safely."""

    def __init__(self) -> None:
        self.results: list[ScoreRecord] = []
        self._lock = threading.Lock()

    def __call__(self, result: ScoreRecord) -> None:
        with self._lock:
            self.results.append(result)

    def sink(self) -> CallbackSink:
        return CallbackSink(self)

    def ids(self) -> list[str]:
        return [r.id for r in self.results]


def accepted_runs_accounted(stats: dict[str, int]) -> bool:
    return stats["sampled"] == (
        stats["scored"] + stats["failed"] + stats["queued"] + stats["in_flight"]
    )


def word_text(chars: int, seed: int) -> str:
    """`chars` characters of words drawn from a vocabulary of 3,000 (the same for a seed)."""
    rng = random.Random(seed)
    vocabulary = [
        "".join(rng.choice(string.ascii_lowercase) for _ in range(7)) for _ in range(3000)
    ]
    words: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(vocabulary)
        words.append(word)
        size += len(word) + 1
    return " ".join(words)[:chars]


def make_result(run_id: str, *, target: str = "bot", scorer_id: str = "quality",
                score: float = 0.5, at: datetime | None = None) -> ScoreRecord:  # fmt: skip
    """A stored row of a successful run, as a sink receives it."""
    result = ScorerRunResult(run_id=run_id, input="i", output="o", score=score)
    return ScoreRecord(
        id=run_id,
        scorer_id=scorer_id,
        scorer_name=scorer_id,
        scorer_description="",
        has_judge=False,
        call=AgentCall(
            input="i", output="o", target=target, trace_id=None, span_id=None, run_id=run_id
        ),
        status="success",
        result=result,
        created_at=at or datetime.now(UTC),
    )

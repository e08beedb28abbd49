"""What the demo's live view shows, gathered from the pipeline itself.

Scores and cost come from the score records (a `CallbackSink`; the cost is what their judge
records say); judge calls, tokens and latency come from the scorer core's run events (one report
per judge attempt, exactly what the judge records hold), so the figures on screen are
measurements of the real pipeline, not of the simulation.
"""

from __future__ import annotations

import math
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..core.events import JudgeAttempt, Observer, RunListener, RunStart
from ..core.records import judge_cost_usd
from ..sinks.record import ScoreRecord

__all__ = ["DemoStats", "JudgeTotals", "ScorerSeries", "sparkline"]

_SPARKS = "▁▂▃▄▅▆▇█"


@dataclass(slots=True)
class ScorerSeries:
    """The scores of one scorer over time (seconds since the demo started)."""

    name: str
    points: list[tuple[float, float]] = field(default_factory=list)
    failed: int = 0
    by_phase: dict[str, list[float]] = field(default_factory=dict)
    by_label: dict[str, list[float]] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return len(self.points)

    def mean(self) -> float | None:
        return _mean([score for _, score in self.points])

    def recent_mean(self, last: int = 20) -> float | None:
        return _mean([score for _, score in self.points[-last:]])

    def trend(self, until: float, buckets: int = 12, window_s: float | None = None) -> str:
        """A sparkline of the mean score per time bucket (blank where nothing was scored)."""
        if not self.points or until <= 0:
            return ""
        span = window_s if window_s is not None else until
        start = max(0.0, until - span)
        width = span / buckets
        sums = [0.0] * buckets
        counts = [0] * buckets
        for moment, score in self.points:
            if moment < start:
                continue
            index = min(buckets - 1, int((moment - start) / width)) if width > 0 else 0
            sums[index] += score
            counts[index] += 1
        return "".join(
            sparkline_char(total / count) if count else " "
            for total, count in zip(sums, counts, strict=True)
        )


def sparkline_char(value: float) -> str:
    clipped = min(1.0, max(0.0, value))
    return _SPARKS[min(len(_SPARKS) - 1, int(clipped * len(_SPARKS)))]


def sparkline(values: Sequence[float]) -> str:
    return "".join(sparkline_char(value) for value in values)


@dataclass(frozen=True, slots=True)
class JudgeTotals:
    calls: int
    failed_calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    latency_p50_s: float | None
    latency_p95_s: float | None

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class _Listener(RunListener):
    """Hears one run; only judge attempts matter here."""

    __slots__ = ("_stats",)

    def __init__(self, stats: DemoStats) -> None:
        self._stats = stats

    def judge_attempt_finished(self, attempt: JudgeAttempt) -> None:
        self._stats.record_attempt(attempt)


class DemoStats(Observer):
    """Thread-safe running totals for the live view and the final summary.

    `phase` is the label results are filed under as they arrive (e.g. "healthy", "degraded");
    `label_of(result)`, when given, files each score under a second label too (the quality of the
    summary that was scored).
    """

    def __init__(
        self,
        scorer_names: Sequence[str],
        *,
        label_of: Callable[[ScoreRecord], str | None] | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self.phase = "healthy"
        self._label_of = label_of
        self._series = {name: ScorerSeries(name) for name in scorer_names}
        self._calls = 0
        self._failed_calls = 0
        self._input_tokens = 0
        self._output_tokens = 0
        self._cost = 0.0
        self._latencies: list[float] = []
        self.last_error: str | None = None
        """The latest failed run, as "scorer: error" (a judge outage shows here)."""

    def elapsed(self) -> float:
        return time.monotonic() - self._started

    # -- sinks and events ----------------------------------------------------------------------

    def record_result(self, result: ScoreRecord) -> None:
        """A `CallbackSink` function."""
        moment = self.elapsed()
        label = self._label_of(result) if self._label_of is not None else None
        cost = judge_cost_usd(result.result.judge if result.result is not None else None)
        with self._lock:
            if cost is not None and math.isfinite(cost):
                self._cost += cost
            series = self._series.setdefault(result.scorer_id, ScorerSeries(result.scorer_id))
            score = result.score
            if score is None:
                series.failed += 1
                self.last_error = f"{result.scorer_id}: {result.error or 'failed'}"
                return
            series.points.append((moment, score))
            series.by_phase.setdefault(self.phase, []).append(score)
            if label is not None:
                series.by_label.setdefault(label, []).append(score)

    def run_started(self, start: RunStart) -> _Listener | None:
        """Listens to the runs that call a judge."""
        return _Listener(self) if start.scorer.has_judge else None

    def record_attempt(self, attempt: JudgeAttempt) -> None:
        reply = attempt.reply
        with self._lock:
            if attempt.model_call_count > 0 or reply is not None:
                self._calls += 1
                self._latencies.append(attempt.duration_s)
            if attempt.error is not None:
                self._failed_calls += 1
            self._input_tokens += attempt.usage.input_tokens or 0
            self._output_tokens += attempt.usage.output_tokens or 0

    # -- reading -------------------------------------------------------------------------------

    def series(self) -> list[ScorerSeries]:
        with self._lock:
            return [
                ScorerSeries(
                    s.name,
                    list(s.points),
                    s.failed,
                    {key: list(values) for key, values in s.by_phase.items()},
                    {key: list(values) for key, values in s.by_label.items()},
                )
                for s in self._series.values()
            ]

    def judge(self) -> JudgeTotals:
        with self._lock:
            latencies = sorted(self._latencies)
            return JudgeTotals(
                calls=self._calls,
                failed_calls=self._failed_calls,
                input_tokens=self._input_tokens,
                output_tokens=self._output_tokens,
                cost_usd=self._cost,
                latency_p50_s=_quantile(latencies, 0.5),
                latency_p95_s=_quantile(latencies, 0.95),
            )


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _quantile(ordered: Sequence[float], q: float) -> float | None:
    if not ordered:
        return None
    index = min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))
    return ordered[index]

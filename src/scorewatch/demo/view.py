"""The demo's terminal view: a panel refreshed in place on a TTY, plain periodic lines otherwise,
and the final summary."""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO

from .stats import JudgeTotals, ScorerSeries

__all__ = ["LiveView", "ViewState", "render_line", "render_panel", "render_summary"]

_SHORT_NAMES = {
    "summarization-scorer": "summarization",
    "completeness-scorer": "completeness",
    "content-similarity-scorer": "content similarity",
}


@dataclass(frozen=True, slots=True)
class ViewState:
    elapsed_s: float
    duration_s: float
    requests: int
    phase: str
    live: Mapping[str, int]
    series: Sequence[ScorerSeries]
    judge: JudgeTotals
    judge_label: str
    last_error: str | None = None


def short_name(scorer_id: str) -> str:
    return _SHORT_NAMES.get(scorer_id, scorer_id)


def _score(value: float | None) -> str:
    return "  -  " if value is None else f"{value:5.2f}"


def _arrow(series: ScorerSeries) -> str:
    overall, recent = series.mean(), series.recent_mean()
    if overall is None or recent is None:
        return " "
    if recent < overall - 0.03:
        return "↓"
    if recent > overall + 0.03:
        return "↑"
    return "→"


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.0f} ms"


def _dropped(live: Mapping[str, int]) -> int:
    return live.get("dropped_queue_full", 0) + live.get("dropped_shutdown", 0)


def _judge_line(judge: JudgeTotals, label: str) -> str:
    failed = f" ({judge.failed_calls} failed)" if judge.failed_calls else ""
    return (
        f"judge ({label}): {judge.calls} calls{failed} · tokens {judge.input_tokens:,} in / "
        f"{judge.output_tokens:,} out · latency p50 {_ms(judge.latency_p50_s)}, "
        f"p95 {_ms(judge.latency_p95_s)} · est. cost ${judge.cost_usd:.4f}"
    )


def _decisions_line(live: Mapping[str, int]) -> str:
    return (
        f"decisions (all scorers): sampled {live.get('sampled', 0)} · not sampled "
        f"{live.get('not_sampled', 0)} · dropped {_dropped(live)} · scored "
        f"{live.get('scored', 0)} · failed {live.get('failed', 0)} · queued "
        f"{live.get('queued', 0)} · in flight {live.get('in_flight', 0)}"
    )


def render_panel(state: ViewState) -> list[str]:
    """The multi-line panel shown (and redrawn) on a terminal."""
    lines = [
        f"t={state.elapsed_s:5.1f}s of {state.duration_s:.0f}s · requests {state.requests} · "
        f"agent {state.phase}",
        f"  {'scorer':<20} {'mean':>5} {'recent':>6}  {'trend (whole run)':<18} {'runs':>5}"
        f" {'failed':>6}",
    ]
    for series in state.series:
        lines.append(
            f"  {short_name(series.name):<20} {_score(series.mean())} "
            f"{_score(series.recent_mean())}"
            f" {_arrow(series)} {series.trend(state.elapsed_s, buckets=18):<18} "
            f"{series.count:>5} {series.failed:>6}"
        )
    lines.append("  " + _decisions_line(state.live))
    lines.append("  " + _judge_line(state.judge, state.judge_label))
    if state.last_error:
        lines.append(f"  last failure: {state.last_error}")
    return lines


def render_line(state: ViewState) -> str:
    """One plain line, for logs and pipes."""
    scores = " | ".join(
        f"{short_name(series.name)} {_score(series.mean()).strip()}"
        f" (recent {_score(series.recent_mean()).strip()} {_arrow(series)}, n={series.count})"
        for series in state.series
    )
    live = state.live
    judge = state.judge
    return (
        f"[{state.elapsed_s:5.1f}s] agent {state.phase} · requests {state.requests} · {scores} · "
        f"sampled {live.get('sampled', 0)} not sampled {live.get('not_sampled', 0)} dropped "
        f"{_dropped(live)} · judge calls {judge.calls} tokens {judge.tokens:,} p50 "
        f"{_ms(judge.latency_p50_s)} cost ${judge.cost_usd:.4f}"
        + (f" · last failure: {state.last_error}" if state.last_error else "")
    )


def render_summary(
    state: ViewState,
    *,
    served: Mapping[str, int],
    rows: int,
    db_path: str,
    alerts: Sequence[str] | None,
) -> list[str]:
    """The final summary printed when the demo ends."""
    lines = [
        "",
        f"=== scorewatch demo: summary after {state.elapsed_s:.1f}s ===",
        f"agent requests: {state.requests} ("
        + ", ".join(f"{quality} {count}" for quality, count in sorted(served.items()))
        + ")",
        "scores (mean):",
    ]
    for series in state.series:
        phases = ", ".join(
            f"while {phase} {_score(_avg(values)).strip()} (n={len(values)})"
            for phase, values in series.by_phase.items()
        )
        lines.append(
            f"  {short_name(series.name):<20} overall {_score(series.mean()).strip()}"
            f" (n={series.count}, failed {series.failed})" + (f" · {phases}" if phases else "")
        )
        if series.by_label:
            by_quality = ", ".join(
                f"{label} {_score(_avg(values)).strip()}"
                for label, values in sorted(series.by_label.items())
            )
            lines.append(f"  {'':<20} by summary quality: {by_quality}")
    lines.append(_decisions_line(state.live))
    lines.append(_judge_line(state.judge, state.judge_label))
    if state.last_error:
        lines.append(f"last failure: {state.last_error}")
    lines.append(f"results: {rows} rows in {db_path}")
    lines.append(
        f'  try: sqlite3 {db_path} "select scorerId, status, round(avg(score), 2), count(*) '
        'from mastra_scorers group by 1, 2"'
    )
    if alerts is not None:
        lines.append("Prometheus alerts that fired: " + (", ".join(alerts) if alerts else "none"))
    return lines


def _avg(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


class LiveView:
    """Writes the panel in place on a TTY (ANSI cursor moves), or plain lines otherwise."""

    def __init__(self, stream: IO[str], *, tty: bool) -> None:
        self._stream = stream
        self.tty = tty
        self._height = 0

    def show(self, state: ViewState) -> None:
        if self.tty:
            # A wrapped line would take two rows and break the redraw: cut at the width.
            width = max(20, shutil.get_terminal_size().columns - 1)
            lines = [line[:width] for line in render_panel(state)]
            if self._height:
                # Back to the panel's first line, and clear from there down.
                self._stream.write(f"\x1b[{self._height}F\x1b[J")
            self._stream.write("\n".join(lines) + "\n")
            self._height = len(lines)
        else:
            self._stream.write(render_line(state) + "\n")
        self._stream.flush()

    def say(self, text: str) -> None:
        """A line above the panel (the panel is redrawn below it next time)."""
        if self.tty and self._height:
            self._stream.write(f"\x1b[{self._height}F\x1b[J")
            self._height = 0
        self._stream.write(text + "\n")
        self._stream.flush()

"""The BENCHMARKS.md tables of a `bench_floor.py` result: serve against its floor, and with
`--baseline`, serve before and after a change against the same floor, all from one run."""

from __future__ import annotations

from typing import Any

__all__ = ["markdown", "markdown_before_after"]


def _cell(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}{unit}" if value >= 100 else f"{value:,.1f}{unit}"


def markdown(report: dict[str, Any]) -> str:
    """The BENCHMARKS.md table of a report: medians per side, ratios of the same run."""
    lines = [
        "| case | moderate rate: floor / serve CPU µs per 2xx | ratio "
        "| overload: floor / serve CPU µs per answer | ratio "
        "| overload: floor / serve answered/s (2xx/s) |",
        "|---|---|---|---|---|---|",
    ]
    for name, case in report["cases"].items():
        floor, serve = case["floor"], case["serve"]
        lines.append(
            f"| {name} | {_cell(floor['cpu_us_per_2xx'])} / {_cell(serve['cpu_us_per_2xx'])} "
            f"| {case.get('ratio_cpu_us_per_2xx', '-')}× "
            f"| {_cell(floor['cpu_us_per_answer_overload'])} / "
            f"{_cell(serve['cpu_us_per_answer_overload'])} "
            f"| {case.get('ratio_cpu_us_per_answer_overload', '-')}× "
            f"| {_cell(floor['answered_per_s_overload'])} "
            f"({_cell(floor['accepted_per_s_overload'])}) / "
            f"{_cell(serve['answered_per_s_overload'])} "
            f"({_cell(serve['accepted_per_s_overload'])}) |"
        )
    return "\n".join(lines)


def _sides(sides: tuple[dict[str, Any], ...], key: str) -> str:
    return " / ".join(_cell(side[key]) for side in sides)


def markdown_before_after(report: dict[str, Any]) -> str:
    """The table of a `--baseline` report: floor, serve before (the baseline) and after, and
    each serve's ratio to the floor of the same run."""
    lines = [
        "| case | moderate rate: floor / before / after CPU µs per 2xx | ratio before → after "
        "| overload: floor / before / after CPU µs per answer | ratio before → after "
        "| overload answered/s (2xx/s): floor / before / after |",
        "|---|---|---|---|---|---|",
    ]
    for name, case in report["cases"].items():
        three = (case["floor"], case["baseline"], case["serve"])
        answered = " / ".join(
            f"{_cell(side['answered_per_s_overload'])} ({_cell(side['accepted_per_s_overload'])})"
            for side in three
        )
        lines.append(
            f"| {name} | {_sides(three, 'cpu_us_per_2xx')} "
            f"| {case.get('baseline_ratio_cpu_us_per_2xx', '-')}× → "
            f"{case.get('ratio_cpu_us_per_2xx', '-')}× "
            f"| {_sides(three, 'cpu_us_per_answer_overload')} "
            f"| {case.get('baseline_ratio_cpu_us_per_answer_overload', '-')}× → "
            f"{case.get('ratio_cpu_us_per_answer_overload', '-')}× | {answered} |"
        )
    return "\n".join(lines)

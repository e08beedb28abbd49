"""What `scorewatch eval` and `scorewatch report --compare` print besides the summary table:
why runs failed, and how a run compares with its baseline."""

from __future__ import annotations

import argparse
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import IO, Any

from ..evals.compare import DEFAULT_MAX_DROP, Comparison, ItemChange, ScorerDelta
from ..evals.data import TARGET_FAILED
from ..evals.noise import DEFAULT_CONFIDENCE, ScorerNoise

__all__ = [
    "add_comparison_arguments",
    "failure_reasons",
    "interval_text",
    "print_comparison",
    "print_failures",
    "print_noise",
]


def _share(text: str) -> float:
    value = float(text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"expected a share between 0 and 1, got {text}")
    return value


def _confidence(text: str) -> float:
    value = float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a confidence between 0 and 1, got {text}")
    return value


def add_comparison_arguments(parser: argparse.ArgumentParser, *, given: str) -> None:
    """The gate options of a comparison, `given` naming the option that asks for one."""
    parser.add_argument(
        "--max-drop",
        type=_share,
        default=DEFAULT_MAX_DROP,
        metavar="SHARE",
        help=f"with {given}: fail (exit 1) when a scorer's mean dropped by more than this share "
        f"of its scale with the chosen --confidence (default {DEFAULT_MAX_DROP})",
    )
    parser.add_argument(
        "--confidence",
        type=_confidence,
        default=DEFAULT_CONFIDENCE,
        metavar="LEVEL",
        help=f"with {given}: the confidence of the interval of each change of mean (item "
        f"sampling and judge noise; default {DEFAULT_CONFIDENCE})",
    )
    parser.add_argument(
        "--allow-scorer-change",
        action="store_true",
        help=f"with {given}: compare a scorer whose version changed between the runs (else "
        "exit 2), and say which changed",
    )


def _items(numbers: list[int], limit: int = 10) -> str:
    shown = ", ".join(str(n) for n in sorted(numbers)[:limit])
    return shown + (f", … ({len(numbers)} in all)" if len(numbers) > limit else "")


def failure_reasons(
    records: Iterable[Mapping[str, Any]], target_failures: Mapping[int, str]
) -> list[dict[str, Any]]:
    """Failed runs grouped by (scorer, code, step, message): a thousand runs failing the same
    way make one line, with the items it hit."""
    groups: dict[tuple[str, str, str, str], list[int]] = defaultdict(list)
    for record in records:
        if record.get("error"):
            key = (
                str(record.get("scorer_id")),
                str(record.get("error_code") or "–"),
                str(record.get("failed_step") or "–"),
                str(record["error"]),
            )
            groups[key].append(int(record.get("item") or 0))
    for item, message in target_failures.items():
        groups[("(target)", TARGET_FAILED, "target", message)].append(item)
    return [
        {"scorer_id": s, "code": c, "step": st, "message": m, "items": sorted(items)}
        for (s, c, st, m), items in groups.items()
    ]


def print_failures(reasons: list[dict[str, Any]], stream: IO[str]) -> None:
    if not reasons:
        return
    total = sum(len(reason["items"]) for reason in reasons)
    print(f"\n{total} failed run(s):", file=stream)
    for reason in reasons:
        print(
            f"  {reason['scorer_id']}: {reason['code']} at step {reason['step']}: "
            f"{reason['message']}  (item {_items(reason['items'])})",
            file=stream,
        )


def _change_line(change: ItemChange) -> str:
    text = change.input if isinstance(change.input, str) else repr(change.input)
    text = text if len(text) <= 60 else text[:59] + "…"
    before = "–" if change.baseline is None else f"{change.baseline:.3f}"
    after = (
        f"failed ({change.candidate_error})"
        if change.candidate_error is not None
        else f"{change.candidate:.3f}"
    )
    return f"  {change.scorer_id}  item {change.item}  {before} -> {after}  {text}"


def interval_text(delta: ScorerDelta) -> str:
    """The delta's confidence interval, in the scores' units (`[-0.120, -0.040]`)."""
    interval = delta.interval
    return "–" if interval is None else f"[{interval.low:+.3f}, {interval.high:+.3f}]"


def print_noise(noise: Mapping[str, ScorerNoise], stream: IO[str]) -> None:
    """The judge-noise table of a run with repeats."""
    if not noise:
        return
    header = ("scorer", "items", "runs", "mean", "judge noise (sd)", "item spread (sd)")
    rows = [
        (
            scorer_id,
            str(n.items),
            str(n.runs),
            f"{n.mean:.3f}",
            "–" if n.within_item_sd is None else f"{n.within_item_sd:.3f}",
            "–" if n.between_item_sd is None else f"{n.between_item_sd:.3f}",
        )
        for scorer_id, n in noise.items()
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    repeats = max(n.repeats for n in noise.values())
    print(f"\njudge noise ({repeats} judgements per item):", file=stream)
    for row in [header, *rows]:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)), file=stream)


def print_comparison(comparison: Comparison, stream: IO[str], limit: int = 10) -> None:
    interval = f"{comparison.confidence:.0%} interval"
    header = (
        "scorer", "baseline", "mean", "delta", interval, "regressed", "improved", "newly failed"
    )  # fmt: skip
    rows = [
        (
            d.scorer_id,
            "–" if d.baseline_mean is None else f"{d.baseline_mean:.3f}",
            "–" if d.candidate_mean is None else f"{d.candidate_mean:.3f}",
            "–" if d.delta is None else f"{d.delta:+.3f}",
            interval_text(d),
            str(d.regressed),
            str(d.improved),
            str(d.newly_failed),
        )
        for d in comparison.scorers.values()
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print("\ncompared with the baseline:", file=stream)
    for row in [header, *rows]:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)), file=stream)
    for changed in comparison.changed_scorers:
        print(f"scorer changed: {changed.describe()} (compared as asked)", file=stream)
    for scorer_id in comparison.unversioned:
        print(
            f"scorer version unknown: {scorer_id} (records written before scorewatch kept it); "
            "versions not checked",
            file=stream,
        )
    for note in comparison.within_noise():
        print(note, file=stream)
    for title, changes in (("regressed", comparison.regressed), ("improved", comparison.improved)):
        if changes:
            print(f"{title} items ({len(changes)}):", file=stream)
            for change in changes[:limit]:
                print(_change_line(change), file=stream)
            if len(changes) > limit:
                print(f"  … and {len(changes) - limit} more", file=stream)
    if comparison.only_in_baseline or comparison.only_in_candidate:
        print(
            f"not compared: {comparison.only_in_baseline} run(s) only in the baseline, "
            f"{comparison.only_in_candidate} only in this run",
            file=stream,
        )

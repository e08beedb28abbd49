"""Generate tests/noise_test.yml: promtool unit tests of ScorewatchScoreDrop on simulated traffic
with a judge of known noise.

Every scored run is simulated: an item of true quality drawn uniformly from 0.55..0.95 (the item
spread), plus the judge's noise (Gaussian, sd 0.15), clipped to 0..1, at `RATE` runs an hour.
The series are the counters a scorewatch process exports (count, sum and sum of squares of the
scores), sampled every 10 minutes, from a fixed seed. Eight days build the baseline; what happens
after them is "today":

- a real drop (the agent's items lose 0.2 of quality) is caught within `CAUGHT_WITHIN`;
- six hours of noise only (same rate, same judge noise) raise no alert at any evaluation;
- a scorer version change (a stricter judge: every score 0.2 lower, under a new version label)
  raises no drop alert;
- a drop past both margins that the judge's noise cannot tell from chance at a low rate (a
  pass/fail judge at 54 runs an hour, pass rate 0.5 -> 0.42) stays quiet.

Usage::

    python deploy/prometheus/generate_noise_tests.py           # rewrite the file
    python deploy/prometheus/generate_noise_tests.py --check   # exit 1 if it is stale
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE.parent.parent / "tools") not in sys.path:
    sys.path.insert(0, str(HERE.parent.parent / "tools"))
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import regenerate  # noqa: E402
from generate_rules import PRODUCTION, dump_yaml  # noqa: E402

__all__ = ["CAUGHT_WITHIN", "JUDGE_SD", "RATE", "generated_files", "noise_tests"]

RATE = 60
"""Scored runs an hour in the simulated traffic (10 per 10-minute sample)."""
JUDGE_SD = 0.15
DROP = 0.2
CAUGHT_WITHIN = "3h"
STEP_MINUTES = 10
BASELINE_SAMPLES = 8 * 24 * 6  # eight days of 10-minute samples
TODAY_SAMPLES = 6 * 6  # six hours
VERSION = "3f9a0c12ab34"
NEW_VERSION = "8d41be07c5f2"
SCORER = "relevancy"

Score = Callable[[random.Random, bool], float]


def _judged(rng: random.Random, today_worse: bool) -> float:
    quality = rng.uniform(0.55, 0.95) - (DROP if today_worse else 0.0)
    return min(1.0, max(0.0, quality + rng.gauss(0.0, JUDGE_SD)))


def _series(
    rng: random.Random,
    per_sample: Callable[[int], list[float]],
    samples: int,
) -> tuple[str, str, str]:
    """The count, sum and squares counters' values (promtool's space-separated list)."""
    count = total = squares = 0.0
    counts, sums, squared = ["0"], ["0"], ["0"]
    for index in range(samples):
        scores = per_sample(index)
        count += len(scores)
        total += sum(scores)
        squares += sum(score * score for score in scores)
        counts.append(f"{count:g}")
        sums.append(f"{total:.6f}")
        squared.append(f"{squares:.6f}")
    return " ".join(counts), " ".join(sums), " ".join(squared)


def _input_series(labels: str, values: tuple[str, str, str]) -> list[dict[str, str]]:
    names = (
        "scorewatch_evaluation_score_count",
        "scorewatch_evaluation_score_sum",
        "scorewatch_evaluation_score_squares_total",
    )
    return [
        {"series": f"{name}{{{labels}}}", "values": value}
        for name, value in zip(names, values, strict=True)
    ]


def _labels(target: str, version: str) -> str:
    return (
        f'gen_ai_evaluation_name="{SCORER}",scorewatch_scorer_version="{version}",'
        f'scorewatch_target="{target}",scorewatch_score_source="live"'
    )


def _traffic(seed: int, *, worse_from: int | None) -> tuple[str, str, str]:
    rng = random.Random(seed)
    per_sample = RATE * STEP_MINUTES // 60

    def scores(index: int) -> list[float]:
        worse = worse_from is not None and index >= worse_from
        return [_judged(rng, worse) for _ in range(per_sample)]

    return _series(rng, scores, BASELINE_SAMPLES + TODAY_SAMPLES)


def _quiet_every_10m(hours: int = 6) -> list[dict[str, Any]]:
    return [
        {"eval_time": f"8d{minutes // 60}h{minutes % 60}m", "alertname": "ScorewatchScoreDrop",
         "exp_alerts": []}
        for minutes in range(10, hours * 60 + 1, 10)
    ]  # fmt: skip


def _hour_mean(values: tuple[str, str, str], sample: int) -> float:
    """The 1h mean at `sample` as the rule computes it: both increases are extrapolated alike,
    so their ratio is that of the raw differences over the hour's six steps."""
    counts = [float(v) for v in values[0].split()]
    sums = [float(v) for v in values[1].split()]
    return (sums[sample] - sums[sample - 6]) / (counts[sample] - counts[sample - 6])


def _drop_alert(target: str, mean: float) -> dict[str, Any]:
    window, baseline = PRODUCTION.score_short_window, PRODUCTION.baseline_window
    return {
        "exp_labels": {
            "severity": "critical",
            "gen_ai_evaluation_name": SCORER,
            "scorewatch_scorer_version": VERSION,
            "scorewatch_target": target,
        },
        "exp_annotations": {
            "summary": f"Scores of {SCORER} on {target} dropped below their baseline.",
            "description": (
                f"The mean score of scorer {SCORER} (version {VERSION}) on target {target} over "
                f"the last {window} is {mean:.3f}, below its {baseline} baseline (ending "
                f"{PRODUCTION.baseline_offset} ago) by more than "
                f"{PRODUCTION.relative_margin * 100:g}%, {PRODUCTION.absolute_margin:g} and "
                f"{PRODUCTION.noise_multiple:g} standard errors (the judge's noise at this "
                f"volume), and the {PRODUCTION.score_long_window} mean confirms it."
            ),
            "runbook_url": f"{PRODUCTION.runbook_base_url}/ScorewatchScoreDrop.md",
        },
    }


def _real_drop(seed: int) -> dict[str, Any]:
    target = "worse-agent"
    values = _traffic(seed, worse_from=BASELINE_SAMPLES)
    caught = BASELINE_SAMPLES + int(CAUGHT_WITHIN.rstrip("h")) * 6
    last = BASELINE_SAMPLES + TODAY_SAMPLES
    checks = [
        ("8d", []),
        (f"8d{CAUGHT_WITHIN}", [_drop_alert(target, _hour_mean(values, caught))]),
        ("8d6h", [_drop_alert(target, _hour_mean(values, last))]),
    ]
    return {
        "name": f"a real drop of {DROP} is caught within {CAUGHT_WITHIN}",
        "interval": f"{STEP_MINUTES}m",
        "input_series": _input_series(_labels(target, VERSION), values),
        "alert_rule_test": [
            {"eval_time": when, "alertname": "ScorewatchScoreDrop", "exp_alerts": alerts}
            for when, alerts in checks
        ],
    }


def _noise_only(seed: int) -> dict[str, Any]:
    target = "steady-agent"
    values = _traffic(seed, worse_from=None)
    return {
        "name": "six hours of noise only raise no alert",
        "interval": f"{STEP_MINUTES}m",
        "input_series": _input_series(_labels(target, VERSION), values),
        "alert_rule_test": _quiet_every_10m(),
    }


def _version_change(seed: int) -> dict[str, Any]:
    """The scorer's new version (a stricter judge) scores 0.2 lower from 8d on; the old version's
    counters stay exported, flat (a configuration reload of the same process)."""
    target = "support-agent"
    rng = random.Random(seed)
    per_sample = RATE * STEP_MINUTES // 60

    def old(index: int) -> list[float]:
        if index >= BASELINE_SAMPLES:
            return []
        return [_judged(rng, False) for _ in range(per_sample)]

    def new(index: int) -> list[float]:
        if index < BASELINE_SAMPLES:
            return []
        return [max(0.0, _judged(rng, False) - 0.2) for _ in range(per_sample)]

    samples = BASELINE_SAMPLES + TODAY_SAMPLES
    before = _series(rng, old, samples)
    after = _series(rng, new, samples)
    return {
        "name": "a scorer version change raises no drop alert",
        "interval": f"{STEP_MINUTES}m",
        "input_series": [
            *_input_series(_labels(target, VERSION), before),
            *_input_series(_labels(target, NEW_VERSION), after),
        ],
        "alert_rule_test": _quiet_every_10m(),
    }


def _within_noise() -> dict[str, Any]:
    """A pass/fail judge at 54 runs an hour: pass rate 0.5 for eight days, then 0.42 (past both
    margins, 0.05 and 10%) for six hours. At that rate an hour's mean has a standard error of
    0.068: the shipped rule stays quiet; a rule without the noise band would fire."""
    target = "coin-agent"
    per_sample = 9

    def passes(index: int) -> list[float]:
        if index < BASELINE_SAMPLES:
            passed = 5 if index % 2 else 4  # 4.5 of 9 per sample: 0.5
        else:
            passed = 4 if index % 3 == 0 else 3 + (index % 3 == 1)  # about 0.42
        return [1.0] * passed + [0.0] * (per_sample - passed)

    values = _series(random.Random(0), passes, BASELINE_SAMPLES + TODAY_SAMPLES)
    return {
        "name": "a drop within the judge's noise stays quiet",
        "interval": f"{STEP_MINUTES}m",
        "input_series": _input_series(_labels(target, VERSION), values),
        "alert_rule_test": _quiet_every_10m(),
    }


def noise_tests() -> dict[str, Any]:
    return {
        "rule_files": ["../rules/scorewatch.rules.yml"],
        "evaluation_interval": f"{STEP_MINUTES}m",
        "tests": [_real_drop(1), _noise_only(2), _version_change(3), _within_noise()],
    }


HEADER = (
    "# GENERATED by deploy/prometheus/generate_noise_tests.py; do not edit by hand.\n"
    f"# promtool test rules deploy/prometheus/tests/noise_test.yml\n"
    f"# ScorewatchScoreDrop ({PRODUCTION.score_short_window} mean, noise band of "
    f"{PRODUCTION.noise_multiple:g} standard errors) on simulated traffic: {RATE} runs/h, "
    f"judge noise sd {JUDGE_SD}.\n"
)


def generated_files() -> dict[Path, str]:
    document = dump_yaml(noise_tests())
    body = document.split("\n", 1)[1]  # dump_yaml's header names generate_rules.py
    return {HERE / "tests" / "noise_test.yml": HEADER + body}


def main(argv: list[str] | None = None) -> int:
    description = __doc__.splitlines()[0] if __doc__ else ""
    return regenerate.main(description, generated_files, argv=argv)


if __name__ == "__main__":
    raise SystemExit(main())

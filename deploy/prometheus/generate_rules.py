"""Generate scorewatch's Prometheus recording and alerting rules from one source.

The production rules (``rules/``), a short-window variant for demos and end-to-end tests
(``src/scorewatch/demo/data/short-window.rules.yml``, shipped in the package for
``scorewatch demo --prometheus``) and the prometheus-operator ``PrometheusRule`` for Kubernetes
(``../k8s/prometheusrule.yaml``) are all written from the same ``RuleSettings``, so the windows
and thresholds differ between them but the logic cannot drift.

Usage::

    python deploy/prometheus/generate_rules.py           # rewrite every generated file
    python deploy/prometheus/generate_rules.py --check   # exit 1 if a committed file is stale

Metric names are those the OpenTelemetry Prometheus exporter produces from the instruments of
``src/scorewatch/telemetry/names.py`` (dots become underscores, ``_seconds`` and ``_total``
suffixes are added).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "PRODUCTION",
    "SHORT_WINDOWS",
    "RuleSettings",
    "alert_names",
    "generated_files",
    "rule_groups",
    "stale_files",
]

HERE = Path(__file__).resolve().parent
DEPLOY = HERE.parent
SHORT_RULES = DEPLOY.parent / "src" / "scorewatch" / "demo" / "data" / "short-window.rules.yml"
if str(DEPLOY.parent / "tools") not in sys.path:
    sys.path.insert(0, str(DEPLOY.parent / "tools"))

import regenerate  # noqa: E402  (tools/regenerate.py: the command line the generators share)

# The labels a score series is judged by: one alert per scorer, scored target and scorer version.
# The version keeps a scorer's new definition from being judged against its old one's baseline:
# a new version has no baseline, hence no drop alert, until `baseline_offset` has passed and
# `min_baseline_evaluations` of its scores are in the baseline window.
SCORE_KEY = "gen_ai_evaluation_name, scorewatch_target, scorewatch_scorer_version"


@dataclasses.dataclass(frozen=True)
class RuleSettings:
    """Windows and thresholds of the shipped rules (change them here, then regenerate)."""

    group_prefix: str = "scorewatch"
    evaluation_interval: str = "1m"
    runbook_base_url: str = "https://github.com/scorewatch/scorewatch/blob/main/docs/runbooks"

    # ScorewatchScoreDrop: the current mean over `score_short_window`, confirmed over
    # `score_long_window`, against the volume-weighted mean of `baseline_window` ending
    # `baseline_offset` ago.
    score_selector: str = 'scorewatch_score_source!="experiment"'
    score_short_window: str = "1h"
    score_long_window: str = "6h"
    baseline_window: str = "7d"
    baseline_offset: str = "1d"
    relative_margin: float = 0.10
    absolute_margin: float = 0.05
    min_evaluations: int = 50
    # ... and below the baseline by more than `noise_multiple` standard errors of the difference
    # of the two means (the short window's scores and the baseline's, from their sums of squared
    # scores), with at least `min_baseline_evaluations` scores in the baseline.
    noise_multiple: float = 3.0
    min_baseline_evaluations: int = 100
    score_drop_for: str = "15m"

    judge_error_window: str = "15m"
    judge_error_ratio: float = 0.05
    judge_error_min_executions: int = 20
    judge_error_for: str = "5m"

    stall_window: str = "30m"
    stall_for: str = "5m"

    live_drop_window: str = "15m"
    live_drop_ratio: float = 0.01
    live_drop_for: str = "5m"

    spend_window: str = "1d"
    daily_budget_usd: float = 100.0
    spend_for: str = "5m"

    # A spend budget (`[budget]`, docs/live.md). ScorewatchBudgetBinding: a scorer's
    # budget holds its sampling below `budget_bind_ratio` of its configured rate for
    # `budget_bind_for`: its coverage is reduced.
    budget_bind_ratio: float = 0.99
    budget_bind_for: str = "15m"

    # The Redis work queue (`serve --queue`, `scorewatch worker`). ScorewatchQueueDeadLetters:
    # any entry dead-lettered within `queue_dead_letter_window`. ScorewatchQueueBacklogHigh: the
    # backlog above `queue_backlog_fraction` of `queue_max_backlog` for `queue_backlog_for`.
    # The limit is `[queue] max_backlog`, which no process exports as a metric: it is mirrored
    # here (a test checks it against the shipped configs); set it to your own limit.
    queue_dead_letter_window: str = "15m"
    queue_max_backlog: int = 100_000
    queue_backlog_fraction: float = 0.8
    queue_backlog_for: str = "10m"

    # Judge agreement with human labels (docs/labels.md). ScorewatchJudgeAgreementLow: a scorer
    # version's pass/fail kappa with its labels below `agreement_floor`, counted over at least
    # `agreement_min_labels` labels, for `agreement_for`.
    agreement_floor: float = 0.6
    agreement_min_labels: int = 30
    agreement_for: str = "15m"


PRODUCTION = RuleSettings()

# Seconds instead of hours, for `scorewatch demo`, the end-to-end test and anyone who wants to
# watch the alert fire without waiting a week. Scrape and evaluate every second with it.
SHORT_WINDOWS = RuleSettings(
    group_prefix="scorewatch-short",
    evaluation_interval="1s",
    score_short_window="10s",
    score_long_window="20s",
    baseline_window="30s",
    baseline_offset="30s",
    min_evaluations=5,
    min_baseline_evaluations=10,
    score_drop_for="3s",
    judge_error_window="30s",
    judge_error_min_executions=5,
    judge_error_for="5s",
    stall_window="30s",
    stall_for="5s",
    live_drop_window="30s",
    live_drop_for="5s",
    spend_window="1m",
    daily_budget_usd=1.0,
    spend_for="5s",
    budget_bind_for="5s",
    queue_dead_letter_window="30s",
    queue_backlog_for="5s",
    agreement_min_labels=5,
    agreement_for="5s",
)


def _number(value: float) -> str:
    return format(value, "g")


def _recording_rules(s: RuleSettings) -> list[dict[str, Any]]:
    score = f"scorewatch_evaluation_score_sum{{{s.score_selector}}}"
    count = f"scorewatch_evaluation_score_count{{{s.score_selector}}}"
    squares = f"scorewatch_evaluation_score_squares_total{{{s.score_selector}}}"
    factor = _number(1 - s.relative_margin)
    margin = _number(s.absolute_margin)

    def over_baseline(recorded: str) -> str:
        return f"sum_over_time({recorded}[{s.baseline_window}] offset {s.baseline_offset})"

    short_sum = "scorewatch:evaluation_score_sum:increase_short"
    short_count = "scorewatch:evaluation_score_count:increase_short"
    short_squares = "scorewatch:evaluation_score_squares:increase_short"
    # Summed over the baseline window, every recorded short-window increase counts each score
    # as many times as there are evaluations in a short window: the ratios (mean, variance) are
    # right as they are; the number of scores is that sum over the same multiple, counted now.
    baseline_sum, baseline_count = over_baseline(short_sum), over_baseline(short_count)
    baseline_squares = over_baseline(short_squares)
    multiple = f"count_over_time({short_count}[{s.score_short_window}])"
    return [
        {
            "record": short_sum,
            "expr": f"sum by ({SCORE_KEY}) (increase({score}[{s.score_short_window}]))",
        },
        {
            "record": short_count,
            "expr": f"sum by ({SCORE_KEY}) (increase({count}[{s.score_short_window}]))",
        },
        {
            "record": short_squares,
            "expr": f"sum by ({SCORE_KEY}) (increase({squares}[{s.score_short_window}]))",
        },
        {
            "record": "scorewatch:evaluation_score:mean_short",
            "expr": f"{short_sum}\n  / ({short_count} > 0)",
        },
        # The standard error of the short window's mean: the sample variance of its scores
        # ((sum of squares - sum^2 / n) / (n - 1)) over n, square-rooted.
        {
            "record": "scorewatch:evaluation_score:stderr_short",
            "expr": (
                "sqrt(\n"
                f"  clamp_min(({short_squares} - {short_sum} ^ 2 / {short_count})\n"
                f"    / ({short_count} - 1 > 0), 0)\n"
                f"  / {short_count}\n"
                ")"
            ),
        },
        {
            "record": "scorewatch:evaluation_score:mean_long",
            "expr": (
                f"sum by ({SCORE_KEY}) (increase({score}[{s.score_long_window}]))\n"
                f"  / (sum by ({SCORE_KEY}) (increase({count}[{s.score_long_window}])) > 0)"
            ),
        },
        # Summing the recorded short-window increases over the baseline window counts every
        # evaluation the same number of times in numerator and denominator, so the ratio is
        # the volume-weighted mean without re-reading a week of raw samples.
        {
            "record": "scorewatch:evaluation_score:baseline",
            "expr": f"{baseline_sum}\n  / ({baseline_count} > 0)",
        },
        {
            "record": "scorewatch:evaluation_score:baseline_count",
            "expr": f"{baseline_count}\n  / {multiple}",
        },
        {
            "record": "scorewatch:evaluation_score:baseline_stderr",
            "expr": (
                "sqrt(\n"
                f"  clamp_min(({baseline_squares} - {baseline_sum} ^ 2 / {baseline_count})\n"
                f"    / ({baseline_count} - 1 > 0), 0)\n"
                "  / scorewatch:evaluation_score:baseline_count\n"
                ")"
            ),
        },
        # The alert needs the score below the baseline by BOTH margins, i.e. below the lower
        # of the two thresholds. Recorded so dashboards can draw it.
        {
            "record": "scorewatch:evaluation_score:drop_threshold",
            "expr": (
                f"(scorewatch:evaluation_score:baseline * {factor}"
                f" < scorewatch:evaluation_score:baseline - {margin})\n"
                f"  or (scorewatch:evaluation_score:baseline - {margin})"
            ),
        },
        # How far below the baseline the short window's mean may fall by chance: a multiple of
        # the standard error of the difference of the two means. Dashboards draw
        # baseline - noise_band.
        {
            "record": "scorewatch:evaluation_score:noise_band",
            "expr": (
                f"{_number(s.noise_multiple)} * sqrt(\n"
                "  scorewatch:evaluation_score:stderr_short ^ 2\n"
                "  + on (" + SCORE_KEY + ") scorewatch:evaluation_score:baseline_stderr ^ 2\n"
                ")"
            ),
        },
        {
            "record": "scorewatch:judge_cost_usd:increase_budget_window",
            "expr": f"sum(increase(scorewatch_judge_cost_usd_total[{s.spend_window}]))",
        },
    ]


def _runbook(s: RuleSettings, alert: str) -> str:
    return f"{s.runbook_base_url}/{alert}.md"


def _score_drop(s: RuleSettings) -> dict[str, Any]:
    on = f"and on ({SCORE_KEY})"
    threshold = "scorewatch:evaluation_score:drop_threshold"
    return {
        "alert": "ScorewatchScoreDrop",
        "expr": (
            f"scorewatch:evaluation_score:mean_short < {threshold}\n"
            f"{on}\n"
            f"  (scorewatch:evaluation_score:mean_long < {threshold})\n"
            f"{on}\n"
            "  (scorewatch:evaluation_score:baseline - scorewatch:evaluation_score:mean_short\n"
            "    > scorewatch:evaluation_score:noise_band)\n"
            f"{on}\n"
            "  (scorewatch:evaluation_score_count:increase_short"
            f" >= {s.min_evaluations})\n"
            f"{on}\n"
            "  (scorewatch:evaluation_score:baseline_count"
            f" >= {s.min_baseline_evaluations})"
        ),
        "for": s.score_drop_for,
        "labels": {"severity": "critical"},
        "annotations": {
            "summary": (
                "Scores of {{ $labels.gen_ai_evaluation_name }} on "
                "{{ $labels.scorewatch_target }} dropped below their baseline."
            ),
            "description": (
                "The mean score of scorer {{ $labels.gen_ai_evaluation_name }}"
                "{{ with $labels.scorewatch_scorer_version }} (version {{ . }}){{ end }} on target "
                "{{ $labels.scorewatch_target }} over the last "
                f'{s.score_short_window} is {{{{ $value | printf "%.3f" }}}}, below its '
                f"{s.baseline_window} baseline (ending {s.baseline_offset} ago) by more than "
                f"{_number(s.relative_margin * 100)}%, {_number(s.absolute_margin)} and "
                f"{_number(s.noise_multiple)} standard errors (the judge's noise at this volume), "
                f"and the {s.score_long_window} mean confirms it."
            ),
            "runbook_url": _runbook(s, "ScorewatchScoreDrop"),
        },
    }


def _judge_errors(s: RuleSettings) -> dict[str, Any]:
    key = "gen_ai_evaluation_name, gen_ai_request_model"
    executions = f"increase(scorewatch_judge_executions_total[{s.judge_error_window}])"
    failed = (
        f'increase(scorewatch_judge_executions_total{{scorewatch_status="failed"}}'
        f"[{s.judge_error_window}])"
    )
    return {
        "alert": "ScorewatchJudgeErrorsHigh",
        "expr": (
            f"sum by ({key}) ({failed})\n"
            f"  / sum by ({key}) ({executions})\n"
            f"  > {_number(s.judge_error_ratio)}\n"
            f"and on ({key})\n"
            f"  sum by ({key}) ({executions}) >= {s.judge_error_min_executions}"
        ),
        "for": s.judge_error_for,
        "labels": {"severity": "warning"},
        "annotations": {
            "summary": (
                "Judge {{ $labels.gen_ai_request_model }} fails for scorer "
                "{{ $labels.gen_ai_evaluation_name }}."
            ),
            "description": (
                "{{ $value | humanizePercentage }} of the judge executions of scorer "
                "{{ $labels.gen_ai_evaluation_name }} with model "
                f"{{{{ $labels.gen_ai_request_model }}}} failed over the last "
                f"{s.judge_error_window} (threshold {_number(s.judge_error_ratio * 100)}%). "
                "Failed runs produce no score: they are not low scores."
            ),
            "runbook_url": _runbook(s, "ScorewatchJudgeErrorsHigh"),
        },
    }


def _stalled(s: RuleSettings) -> dict[str, Any]:
    key = "gen_ai_evaluation_name"
    return {
        "alert": "ScorewatchEvaluationsStalled",
        "expr": (
            f"sum by ({key}) (increase(scorewatch_live_decisions_total"
            f'{{scorewatch_decision="sampled"}}[{s.stall_window}])) > 0\n'
            f"unless on ({key})\n"
            f"  sum by ({key}) (increase(scorewatch_scorer_runs_total[{s.stall_window}])) > 0"
        ),
        "for": s.stall_for,
        "labels": {"severity": "warning"},
        "annotations": {
            "summary": "Scorer {{ $labels.gen_ai_evaluation_name }} is not finishing evaluations.",
            "description": (
                "Live traffic was sampled for scorer {{ $labels.gen_ai_evaluation_name }} "
                f"during the last {s.stall_window}, but not a single run of it finished "
                "(successful, failed or not scorable)."
            ),
            "runbook_url": _runbook(s, "ScorewatchEvaluationsStalled"),
        },
    }


def _live_drops(s: RuleSettings) -> dict[str, Any]:
    key = "gen_ai_evaluation_name"
    dropped = (
        f'increase(scorewatch_live_decisions_total{{scorewatch_decision="dropped_queue_full"}}'
        f"[{s.live_drop_window}])"
    )
    wanted = (
        "increase(scorewatch_live_decisions_total"
        f'{{scorewatch_decision=~"sampled|dropped_queue_full"}}[{s.live_drop_window}])'
    )
    return {
        "alert": "ScorewatchLiveDrops",
        "expr": (
            f"sum by ({key}) ({dropped})\n"
            f"  / sum by ({key}) ({wanted})\n"
            f"  > {_number(s.live_drop_ratio)}"
        ),
        "for": s.live_drop_for,
        "labels": {"severity": "warning"},
        "annotations": {
            "summary": (
                "Live evaluations of {{ $labels.gen_ai_evaluation_name }} are dropped: "
                "the queue is full."
            ),
            "description": (
                "{{ $value | humanizePercentage }} of the sampled live traffic for scorer "
                "{{ $labels.gen_ai_evaluation_name }} was dropped because the scoring queue "
                f"was full over the last {s.live_drop_window} "
                f"(threshold {_number(s.live_drop_ratio * 100)}%)."
            ),
            "runbook_url": _runbook(s, "ScorewatchLiveDrops"),
        },
    }


def _spend(s: RuleSettings) -> dict[str, Any]:
    return {
        "alert": "ScorewatchJudgeSpendHigh",
        "expr": (
            f"scorewatch:judge_cost_usd:increase_budget_window > {_number(s.daily_budget_usd)}"
        ),
        "for": s.spend_for,
        "labels": {"severity": "warning"},
        "annotations": {
            "summary": "Judge spend is over its budget.",
            "description": (
                f'Judges cost {{{{ $value | printf "%.2f" }}}} USD over the last '
                f"{s.spend_window}, over the budget of {_number(s.daily_budget_usd)} USD "
                "(estimated from the price table where the provider reports no cost)."
            ),
            "runbook_url": _runbook(s, "ScorewatchJudgeSpendHigh"),
        },
    }


BUDGET_KEY = "gen_ai_evaluation_name, scorewatch_budget"


def _budget_binding(s: RuleSettings) -> dict[str, Any]:
    # Every process deciding for a scorer reports its rate: the lowest speaks for the budget.
    return {
        "alert": "ScorewatchBudgetBinding",
        "expr": (
            f"min by ({BUDGET_KEY}) (scorewatch_budget_sampling_rate)\n"
            f"  < {_number(s.budget_bind_ratio)} * "
            f"max by ({BUDGET_KEY}) (scorewatch_budget_configured_rate)"
        ),
        "for": s.budget_bind_for,
        "labels": {"severity": "info"},
        "annotations": {
            "summary": (
                "The spend budget {{ $labels.scorewatch_budget }} holds back the sampling of "
                "{{ $labels.gen_ai_evaluation_name }}."
            ),
            "description": (
                "Scorer {{ $labels.gen_ai_evaluation_name }} samples "
                "{{ $value | humanizePercentage }} of its traffic, below its configured rate, "
                f"for {s.budget_bind_for}: its judge spend budget "
                "{{ $labels.scorewatch_budget }} binds, so fewer calls are scored (counted as "
                "skipped_budget) until the budget's next UTC day."
            ),
            "runbook_url": _runbook(s, "ScorewatchBudgetBinding"),
        },
    }


# Gauges every process attached to a stream reports with the same stream-wide value: one alert
# per stream, whatever the number of serve and worker processes.
QUEUE_KEY = "scorewatch_queue_stream"


def _queue_dead_letters(s: RuleSettings) -> dict[str, Any]:
    key = f"{QUEUE_KEY}, scorewatch_queue_reason"
    counter = "scorewatch_queue_dead_lettered_total"
    window = s.queue_dead_letter_window
    return {
        "alert": "ScorewatchQueueDeadLetters",
        # A process's counter appears with its first dead letter (at 1), which increase() cannot
        # see. So a counter born within the window counts with its whole value, the others with
        # their increase. "Born" needs the stream to have been watched a window ago (its backlog
        # gauge, which every process reports from its start): otherwise the first evaluations
        # of a fresh Prometheus would count every old dead letter as new.
        "expr": (
            f"sum by ({key}) (\n"
            "    (\n"
            f"        ({counter} unless {counter} offset {window})\n"
            f"      and on ({QUEUE_KEY})\n"
            f"        group by ({QUEUE_KEY}) (scorewatch_queue_backlog offset {window})\n"
            "    )\n"
            "  or\n"
            f"    increase({counter}[{window}])\n"
            ") > 0"
        ),
        "for": "0s",
        "labels": {"severity": "warning"},
        "annotations": {
            "summary": (
                "Work-queue entries of {{ $labels.scorewatch_queue_stream }} were dead-lettered "
                "({{ $labels.scorewatch_queue_reason }})."
            ),
            "description": (
                '{{ $value | printf "%.0f" }} entries of the stream '
                "{{ $labels.scorewatch_queue_stream }} moved to its dead-letter stream "
                f"({{{{ $labels.scorewatch_queue_stream }}}}:dead) during the last {window}, "
                "reason {{ $labels.scorewatch_queue_reason }}. They are not scored until "
                "replayed."
            ),
            "runbook_url": _runbook(s, "ScorewatchQueueDeadLetters"),
        },
    }


def _queue_backlog(s: RuleSettings) -> dict[str, Any]:
    threshold = s.queue_backlog_fraction * s.queue_max_backlog
    return {
        "alert": "ScorewatchQueueBacklogHigh",
        "expr": f"max by ({QUEUE_KEY}) (scorewatch_queue_backlog) > {_number(threshold)}",
        "for": s.queue_backlog_for,
        "labels": {"severity": "warning"},
        "annotations": {
            "summary": (
                "The work queue {{ $labels.scorewatch_queue_stream }} is filling up: serve "
                "will refuse work soon."
            ),
            "description": (
                '{{ $value | printf "%.0f" }} accepted evaluations of '
                "{{ $labels.scorewatch_queue_stream }} are not acknowledged yet, above "
                f"{_number(s.queue_backlog_fraction * 100)}% of the "
                f"{s.queue_max_backlog} limit for {s.queue_backlog_for}: the workers do not "
                "keep up, and serve answers 429 once the limit is reached."
            ),
            "runbook_url": _runbook(s, "ScorewatchQueueBacklogHigh"),
        },
    }


AGREEMENT_KEY = "scorewatch_scorer_id, scorewatch_scorer_version"


def _agreement_low(s: RuleSettings) -> dict[str, Any]:
    gauge = "scorewatch_judge_agreement"
    kappa = f'{gauge}{{scorewatch_agreement_measure=~"kappa|kappa_at_threshold"}}'
    labels = f'{gauge}{{scorewatch_agreement_measure="labels"}}'
    floor = _number(s.agreement_floor)
    return {
        "alert": "ScorewatchJudgeAgreementLow",
        # The lower of the two kappas (pass/fail labels; scale labels cut at the threshold),
        # only where enough labels back it: a handful of labels says little either way.
        "expr": (
            f"min by ({AGREEMENT_KEY}) ({kappa}) < {floor}\n"
            f"  and on ({AGREEMENT_KEY})\n"
            f"max by ({AGREEMENT_KEY}) ({labels}) >= {s.agreement_min_labels}"
        ),
        "for": s.agreement_for,
        "labels": {"severity": "warning"},
        "annotations": {
            "summary": (
                "The judge of {{ $labels.scorewatch_scorer_id }} disagrees with the people "
                "who label its runs."
            ),
            "description": (
                "Cohen's kappa of {{ $labels.scorewatch_scorer_id }} (version "
                "{{ $labels.scorewatch_scorer_version }}) with its human labels is "
                '{{ $value | printf "%.2f" }}, '
                f"below the floor of {floor} with at least {s.agreement_min_labels} labels, "
                f"for {s.agreement_for}: its pass/fail verdicts stand in for people's badly."
            ),
            "runbook_url": _runbook(s, "ScorewatchJudgeAgreementLow"),
        },
    }


def rule_groups(s: RuleSettings) -> list[dict[str, Any]]:
    """The rule groups, in the shape of a Prometheus rule file's ``groups``.

    Each alert shares a group with the recording rules it reads: rules of one group run in
    order, so an alert never sees a recorded series one evaluation late (or, when the
    evaluation interval is longer than the 5m lookback, not at all).
    """
    recording = _recording_rules(s)
    score_records = [r for r in recording if r["record"].startswith("scorewatch:evaluation_")]
    other_records = [r for r in recording if r not in score_records]
    return [
        {
            "name": f"{s.group_prefix}.scores",
            "interval": s.evaluation_interval,
            "rules": [*score_records, _score_drop(s)],
        },
        {
            "name": f"{s.group_prefix}.operations",
            "interval": s.evaluation_interval,
            "rules": [
                *other_records,
                _judge_errors(s),
                _stalled(s),
                _live_drops(s),
                _spend(s),
                _budget_binding(s),
            ],
        },
        {
            "name": f"{s.group_prefix}.queue",
            "interval": s.evaluation_interval,
            "rules": [_queue_dead_letters(s), _queue_backlog(s)],
        },
        {
            "name": f"{s.group_prefix}.labels",
            "interval": s.evaluation_interval,
            "rules": [_agreement_low(s)],
        },
    ]


def alert_names(s: RuleSettings = PRODUCTION) -> list[str]:
    return [rule["alert"] for group in rule_groups(s) for rule in group["rules"] if "alert" in rule]


class _Dumper(yaml.SafeDumper):
    pass


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_representer)

HEADER = (
    "# GENERATED by deploy/prometheus/generate_rules.py from RuleSettings; do not edit by hand.\n"
)


def dump_yaml(document: Mapping[str, Any]) -> str:
    return HEADER + yaml.dump(
        dict(document), Dumper=_Dumper, sort_keys=False, width=4096, allow_unicode=True
    )


def _prometheus_rule(s: RuleSettings) -> dict[str, Any]:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {
            "name": "scorewatch",
            "labels": {"app.kubernetes.io/name": "scorewatch", "role": "alert-rules"},
        },
        "spec": {"groups": rule_groups(s)},
    }


def generated_files() -> dict[Path, str]:
    """Every file this generator owns, with its expected content."""
    return {
        HERE / "rules" / "scorewatch.rules.yml": dump_yaml({"groups": rule_groups(PRODUCTION)}),
        SHORT_RULES: dump_yaml({"groups": rule_groups(SHORT_WINDOWS)}),
        DEPLOY / "k8s" / "prometheusrule.yaml": dump_yaml(_prometheus_rule(PRODUCTION)),
    }


def stale_files() -> list[Path]:
    return regenerate.stale_files(generated_files())


def main(argv: list[str] | None = None) -> int:
    description = __doc__.splitlines()[0] if __doc__ else ""
    return regenerate.main(description, generated_files, argv=argv)


if __name__ == "__main__":
    raise SystemExit(main())

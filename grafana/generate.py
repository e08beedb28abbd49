"""Generate scorewatch's Grafana dashboards (as code, with grafana-foundation-sdk).

    python grafana/generate.py           # rewrite grafana/dashboards/*.json
    python grafana/generate.py --check   # exit 1 if a committed dashboard is stale

Three dashboards, each with `datasource`, `scorer`, `target` and `model` variables:
Scores, Judge usage and Live pipeline. Queries use the series of the OpenTelemetry Prometheus
exporter (src/scorewatch/telemetry/names.py) and the recording rules of
deploy/prometheus/generate_rules.py. The committed JSON is what Grafana provisions
(grafana/provisioning/); a test fails when it drifts from this file.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from grafana_foundation_sdk.builders import common as common_builder
from grafana_foundation_sdk.builders import dashboard as dash
from grafana_foundation_sdk.builders import heatmap, prometheus, stat, table, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import heatmap as heatmap_model
from grafana_foundation_sdk.models.dashboard import (
    DashboardCursorSync,
    DashboardLinkType,
    DataSourceRef,
    DynamicConfigValue,
    Threshold,
    ThresholdsMode,
    VariableOption,
    VariableRefresh,
    VariableSort,
)
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

__all__ = ["DASHBOARD_DIR", "build_all", "render_all", "stale_files"]

HERE = Path(__file__).resolve().parent
DASHBOARD_DIR = HERE / "dashboards"
if str(HERE.parent / "tools") not in sys.path:
    sys.path.insert(0, str(HERE.parent / "tools"))

import regenerate  # noqa: E402  (tools/regenerate.py: the command line the generators share)

TAG = "scorewatch"
DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")

# Label filters every panel shares. `gen_ai_evaluation_name!=""` keeps the judge's token usage
# apart from the application's own GenAI metrics on the same Prometheus.
SCORER = 'gen_ai_evaluation_name=~"$scorer"'
TARGET = 'scorewatch_target=~"$target"'
MODEL = 'gen_ai_request_model=~"$model"'
JUDGE = f'{SCORER}, gen_ai_evaluation_name!="", {MODEL}'

# Score units: scorers score on [0, 1] unless they declare a `scale`.
SCORE_STEPS = [(None, "red"), (0.5, "orange"), (0.8, "green")]
RATIO_BAD_ABOVE_5 = [(None, "green"), (0.01, "orange"), (0.05, "red")]
LATENCY_STEPS = [(None, "green"), (10.0, "orange"), (30.0, "red")]
DAILY_BUDGET_USD = 100.0
# `[queue] max_backlog` of the shipped configs (deploy/scorewatch.scale.toml, deploy/k8s/scale/):
# serve answers 429 past it. The limit is not a metric, so the backlog panel's thresholds
# mirror it (80% orange, as ScorewatchQueueBacklogHigh; 100% red).
QUEUE_MAX_BACKLOG = 100_000
QUEUE = 'scorewatch_queue_stream=~".+"'


# -- building blocks ---------------------------------------------------------------------------


def _thresholds(steps: Sequence[tuple[float | None, str]]) -> dash.ThresholdsConfig:
    return (
        dash.ThresholdsConfig()
        .mode(ThresholdsMode.ABSOLUTE)
        .steps([Threshold(value=value, color=color) for value, color in steps])
    )


def _query(expr: str, legend: str, ref_id: str) -> prometheus.Dataquery:
    return prometheus.Dataquery().expr(expr).legend_format(legend).ref_id(ref_id).range()


def _ratio(numerator: str, denominator: str) -> str:
    """`numerator / denominator` that is 0, not empty, when the numerator has no series yet.

    Counters of failures or drops appear only once the first one happens; a healthy system
    would show "No data" instead of 0. `or 0 * denominator` fills in a 0 for every group the
    denominator has (the two must aggregate by the same labels).
    """
    return f"(\n{numerator}\nor 0 * {denominator}\n)\n/ {denominator}"


def _ref_ids() -> Callable[[], str]:
    letters = iter("ABCDEFGHIJ")
    return lambda: next(letters)


def _timeseries(
    title: str,
    description: str,
    queries: Sequence[tuple[str, str]],
    *,
    unit: str,
    steps: Sequence[tuple[float | None, str]],
    width: int = 12,
    thresholds_line: bool = False,
    stacked: bool = False,
    minimum: float | None = 0,
    exemplars: bool = False,
) -> timeseries.Panel:
    ref = _ref_ids()
    panel = (
        timeseries.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .thresholds(_thresholds(steps))
        .height(8)
        .span(width)
        .line_width(1)
        .fill_opacity(10)
        .legend(
            common_builder.VizLegendOptions()
            .display_mode(common.LegendDisplayMode.TABLE)
            .placement(common.LegendPlacement.BOTTOM)
            .show_legend(True)
            .calcs(["lastNotNull", "max"])
        )
        .tooltip(common_builder.VizTooltipOptions().mode(common.TooltipDisplayMode.MULTI))
        .targets([_query(expr, legend, ref()) for expr, legend in queries])
    )
    if exemplars:
        # Exemplars of the histogram buckets behind the queries: trace ids of the runs.
        ref = _ref_ids()
        panel = panel.targets(
            [_query(expr, legend, ref()).exemplar(True) for expr, legend in queries]
        )
    if minimum is not None:
        panel = panel.min(minimum)
    if thresholds_line:
        panel = panel.thresholds_style(
            common_builder.GraphThresholdsStyleConfig().mode(common.GraphThresholdsStyleMode.DASHED)
        )
    if stacked:
        panel = panel.stacking(common_builder.StackingConfig().mode(common.StackingMode.NORMAL))
    return panel


def _stat(
    title: str,
    description: str,
    expr: str,
    legend: str,
    *,
    unit: str,
    steps: Sequence[tuple[float | None, str]],
    width: int = 6,
) -> stat.Panel:
    return (
        stat.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .decimals(2)
        .thresholds(_thresholds(steps))
        .color_mode(common.BigValueColorMode.BACKGROUND)
        .graph_mode(common.BigValueGraphMode.AREA)
        .reduce_options(common_builder.ReduceDataOptions().calcs(["lastNotNull"]))
        .height(8)
        .span(width)
        .targets([_query(expr, legend, "A")])
    )


def _datasource_variable() -> dash.DatasourceVariable:
    return (
        dash.DatasourceVariable("datasource")
        .label("Data source")
        .type("prometheus")
        .description("The Prometheus that scrapes scorewatch's /metrics.")
    )


def _label_variable(name: str, label: str, query: str, description: str) -> dash.QueryVariable:
    return (
        dash.QueryVariable(name)
        .label(label)
        .description(description)
        .datasource(DATASOURCE)
        .query(query)
        .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(VariableSort.ALPHABETICAL_CASE_INSENSITIVE_ASC)
        .multi(True)
        .include_all(True)
        .all_value(".*")
        .current(VariableOption(selected=True, text="All", value="$__all"))
    )


def _common_variables() -> list[Any]:
    return [
        _datasource_variable(),
        _label_variable(
            "scorer",
            "Scorer",
            "label_values(scorewatch_scorer_runs_total, gen_ai_evaluation_name)",
            "Scorer ids (gen_ai.evaluation.name) that ran in the selected time range.",
        ),
        _label_variable(
            "target",
            "Target",
            f"label_values(scorewatch_evaluation_score_count{{{SCORER}}}, scorewatch_target)",
            "The agents or workflows being scored (scorewatch.target).",
        ),
        _label_variable(
            "model",
            "Judge model",
            f"label_values(scorewatch_judge_executions_total{{{SCORER}}}, gen_ai_request_model)",
            "Judge models (gen_ai.request.model) the selected scorers called.",
        ),
    ]


def _dashboard(uid: str, title: str, description: str) -> dash.Dashboard:
    return (
        dash.Dashboard(title)
        .uid(uid)
        .description(description)
        .tags([TAG])
        .editable()
        .tooltip(DashboardCursorSync.CROSSHAIR)
        .refresh("30s")
        .time("now-6h", "now")
        .timezone("browser")
        .link(
            dash.DashboardLink("scorewatch")
            .type(DashboardLinkType.DASHBOARDS)
            .tags([TAG])
            .as_dropdown(True)
            .include_vars(True)
            .keep_time(True)
        )
    )


def _with_variables(board: dash.Dashboard, extra: Sequence[Any] = ()) -> dash.Dashboard:
    for variable in [*_common_variables(), *extra]:
        board = board.with_variable(variable)
    return board


def _evaluations_by_target(width: int = 12) -> timeseries.Panel:
    return _timeseries(
        "Evaluations finished per second by target",
        "Scored evaluations (runs that produced a score) per second, per scored target and "
        "score source (live, experiment, trace, direct).",
        [
            (
                "sum by (scorewatch_target, scorewatch_score_source) (rate("
                f"scorewatch_evaluation_score_count{{{SCORER}, {TARGET}}}[$__rate_interval]))",
                "{{scorewatch_target}} ({{scorewatch_score_source}})",
            )
        ],
        unit="ops",
        steps=[(None, "green")],
        width=width,
    )


# -- Scores ------------------------------------------------------------------------------------


def scores_dashboard() -> dash.Dashboard:
    score = f"{SCORER}, {TARGET}"
    series = "{{gen_ai_evaluation_name}} / {{scorewatch_target}} ({{scorewatch_scorer_version}})"
    mean_vs_baseline = _timeseries(
        "Mean score vs baseline",
        "Per scorer, target and scorer version: the mean score over the alert's short window "
        "(1h in production), its baseline (volume-weighted mean of the same version's scores "
        "over the 7 days ending 1 day ago), the alert threshold (the lower of baseline - 10% and "
        "baseline - 0.05) and the noise band (baseline less 3 standard errors of the difference "
        "of the two means: a mean above it may differ from the baseline by chance). The alert "
        "needs the mean below both. From the recording rules; experiment scores are left out.",
        [
            (f"scorewatch:evaluation_score:mean_short{{{score}}}", f"{series} mean"),
            (f"scorewatch:evaluation_score:baseline{{{score}}}", f"{series} baseline"),
            (
                f"scorewatch:evaluation_score:drop_threshold{{{score}}}",
                f"{series} alert threshold",
            ),
            (
                f"scorewatch:evaluation_score:baseline{{{score}}}\n"
                f"  - scorewatch:evaluation_score:noise_band{{{score}}}",
                f"{series} noise band",
            ),
        ],
        unit="none",
        steps=SCORE_STEPS,
        width=16,
    ).decimals(3)
    mean_vs_baseline = (
        mean_vs_baseline.override_by_regexp(
            ".* baseline$",
            [
                DynamicConfigValue(
                    id_val="custom.lineStyle", value={"fill": "dash", "dash": [10, 10]}
                )
            ],
        )
        .override_by_regexp(
            ".* alert threshold$",
            [
                DynamicConfigValue(
                    id_val="custom.lineStyle", value={"fill": "dot", "dash": [0, 10]}
                ),
                DynamicConfigValue(id_val="color", value={"mode": "fixed", "fixedColor": "red"}),
            ],
        )
        .override_by_regexp(
            ".* noise band$",
            [
                DynamicConfigValue(
                    id_val="custom.lineStyle", value={"fill": "dash", "dash": [2, 6]}
                ),
                DynamicConfigValue(id_val="color", value={"mode": "fixed", "fixedColor": "orange"}),
            ],
        )
    )

    volume = _stat(
        "Scored evaluations (alert window)",
        "Evaluations per scorer and target in the alert's short window (1h in production). "
        "Below 50 the score-drop alert stays quiet: too few samples to tell.",
        f"scorewatch:evaluation_score_count:increase_short{{{score}}}",
        "{{gen_ai_evaluation_name}} / {{scorewatch_target}}",
        unit="short",
        steps=[(None, "orange"), (50, "green")],
        width=8,
    ).decimals(0)

    mean_by_source = _timeseries(
        "Mean score by source",
        "Mean score per scorer and score source at the dashboard's resolution, straight from "
        "the score histogram's _sum and _count (experiments included).",
        [
            (
                "sum by (gen_ai_evaluation_name, scorewatch_score_source) (rate("
                f"scorewatch_evaluation_score_sum{{{score}}}[$__rate_interval]))\n"
                "/ sum by (gen_ai_evaluation_name, scorewatch_score_source) (rate("
                f"scorewatch_evaluation_score_count{{{score}}}[$__rate_interval]))",
                "{{gen_ai_evaluation_name}} ({{scorewatch_score_source}})",
            )
        ],
        unit="none",
        steps=SCORE_STEPS,
    ).decimals(3)

    distribution = (
        heatmap.Panel()
        .title("Score distribution")
        .description(
            "How many scores fell in each 0.05-wide bucket per interval, from the "
            "scorewatch_evaluation_score histogram. A drop shows as a band moving down, or a "
            "new band of low scores. Its exemplars (OpenMetrics scrapes) link each bucket to the "
            "trace of a run that scored in it."
        )
        .datasource(DATASOURCE)
        .height(8)
        .span(12)
        .unit("none")
        .calculate(False)
        .targets(
            [
                _query(
                    "sum by (le) (increase("
                    f"scorewatch_evaluation_score_bucket{{{score}}}[$__rate_interval]))",
                    "{{le}}",
                    "A",
                )
                .format(PromQueryFormat.HEATMAP)
                # Each bucket's exemplar is the trace of a run that scored in it: a click on a
                # band of low scores opens those runs' traces.
                .exemplar(True)
            ]
        )
        .y_axis(heatmap.YAxisConfig().unit("none").decimals(2))
        .color(
            heatmap.HeatmapColorOptions()
            .mode(heatmap_model.HeatmapColorMode.SCHEME)
            .scheme("Oranges")
            .fill("dark-orange")
            .steps(64)
            .scale(heatmap_model.HeatmapColorScale.EXPONENTIAL)
            .exponent(0.5)
        )
        # Prometheus `le` buckets: each row is the bucket below its upper bound.
        .rows_frame(heatmap.RowsHeatmapOptions().layout(common.HeatmapCellLayout.LE))
        .thresholds(_thresholds([(None, "green")]))
        .cell_values(heatmap.CellValues().unit("short"))
    )

    bucket_share = (
        "sum by (gen_ai_evaluation_name) (rate(scorewatch_evaluation_score_bucket"
        f'{{{score}, le="$pass_threshold"}}[$__rate_interval]))\n'
        "/ sum by (gen_ai_evaluation_name) (rate(scorewatch_evaluation_score_count"
        f"{{{score}}}[$__rate_interval]))"
    )
    pass_fail = _timeseries(
        "Pass and fail rate",
        "Share of scores above the pass threshold (variable pass_threshold, a histogram bucket "
        "boundary) and at or below it. Failed runs have no score and are not counted here.",
        [
            (f"1 - (\n{bucket_share}\n)", "{{gen_ai_evaluation_name}} pass"),
            (bucket_share, "{{gen_ai_evaluation_name}} fail"),
        ],
        unit="percentunit",
        steps=[(None, "red"), (0.8, "green")],
    ).max(1)

    runs = "scorewatch_scorer_runs_total"
    all_runs = f"sum by (gen_ai_evaluation_name) (rate({runs}{{{SCORER}}}[$__rate_interval]))"
    failed_runs = _timeseries(
        "Failed-run rate",
        "Share of scorer runs that failed (judge error, step error) or were not scorable, per "
        "scorer. Failed runs produce no score: a judge outage is not a score drop.",
        [
            (
                _ratio(
                    "sum by (gen_ai_evaluation_name) (rate("
                    f'{runs}{{{SCORER}, scorewatch_outcome="failed"}}[$__rate_interval]))',
                    all_runs,
                ),
                "{{gen_ai_evaluation_name}} failed",
            ),
            (
                _ratio(
                    "sum by (gen_ai_evaluation_name) (rate("
                    f'{runs}{{{SCORER}, scorewatch_outcome="not_scorable"}}[$__rate_interval]))',
                    all_runs,
                ),
                "{{gen_ai_evaluation_name}} not scorable",
            ),
        ],
        unit="percentunit",
        steps=RATIO_BAD_ABOVE_5,
        thresholds_line=True,
    ).max(1)

    versions = (
        table.Panel()
        .title("Scorer versions")
        .description(
            "Every scorer version the scorewatch processes have scored with "
            "(scorewatch_scorer_info): the fingerprint of what decides the scores (instructions, "
            "judge model and options, prompts, code) and the version its author declared. Scores, "
            "baselines and the score-drop alert are kept apart per version; a new version is "
            "marked on the time series by the 'Scorer version' annotation."
        )
        .datasource(DATASOURCE)
        .height(8)
        .span(24)
        .thresholds(_thresholds([(None, "green")]))
        .targets(
            [
                _query(
                    "max by (gen_ai_evaluation_name, scorewatch_scorer_version, "
                    f"scorewatch_scorer_declared_version) (scorewatch_scorer_info{{{SCORER}}})",
                    "{{gen_ai_evaluation_name}} {{scorewatch_scorer_version}}",
                    "A",
                )
                .instant()
                .format(PromQueryFormat.TABLE)
            ]
        )
    )

    firing = (
        table.Panel()
        .title("Firing scorewatch alerts")
        .description(
            "Alerts of deploy/prometheus/rules that are firing now (Prometheus ALERTS series). "
            "Each alert's runbook is in docs/runbooks/."
        )
        .datasource(DATASOURCE)
        .height(8)
        .span(24)
        .thresholds(_thresholds([(None, "red")]))
        .targets(
            [
                _query(
                    "sum by (alertname, severity, gen_ai_evaluation_name, scorewatch_target, "
                    "gen_ai_request_model) "
                    '(ALERTS{alertname=~"Scorewatch.*", alertstate="firing"})',
                    "{{alertname}}",
                    "A",
                )
                .instant()
                .format(PromQueryFormat.TABLE)
            ]
        )
    )

    pass_threshold = (
        dash.CustomVariable("pass_threshold")
        .label("Pass threshold")
        .description("Scores above this bucket boundary pass.")
        .values("0.5,0.6,0.7,0.8,0.9")
        .current(VariableOption(selected=True, text="0.7", value="0.7"))
    )
    board = _with_variables(
        _dashboard(
            "scorewatch-scores",
            "scorewatch / Scores",
            "Judge scores per scorer, target and scorer version: mean vs baseline and its noise "
            "band, distribution, pass/fail and failed runs, scorer versions, firing alerts.",
        ),
        [pass_threshold],
    ).annotation(
        dash.AnnotationQuery()
        .name("Scorer version")
        .datasource(DATASOURCE)
        .enable(True)
        .icon_color("purple")
        # A version that was not there 10 minutes earlier: a scorer changed.
        .expr(
            "count by (gen_ai_evaluation_name, scorewatch_scorer_version) "
            f"(scorewatch_scorer_info{{{SCORER}}})\n"
            "unless count by (gen_ai_evaluation_name, scorewatch_scorer_version) "
            f"(scorewatch_scorer_info{{{SCORER}}} offset 10m)"
        )
    )
    for panel in (
        mean_vs_baseline,
        volume,
        mean_by_source,
        distribution,
        pass_fail,
        failed_runs,
        versions,
        firing,
    ):
        board = board.with_panel(panel)
    return board


# -- Judge usage -------------------------------------------------------------------------------


def judge_dashboard() -> dash.Dashboard:
    tokens = _timeseries(
        "Judge tokens per second by model and token type",
        "Tokens the judges consumed (gen_ai.client.token.usage with gen_ai.evaluation.name "
        "set), per judge model and token type (input/output).",
        [
            (
                "sum by (gen_ai_request_model, gen_ai_token_type) (rate("
                f"gen_ai_client_token_usage_sum{{{JUDGE}}}[$__rate_interval]))",
                "{{gen_ai_request_model}} {{gen_ai_token_type}}",
            )
        ],
        unit="suffix: tok/s",
        steps=[(None, "green")],
        stacked=True,
    )

    duration = "gen_ai_client_operation_duration_seconds_bucket"
    latency = _timeseries(
        "Judge latency p50 / p95",
        "Duration of each judge call (one per attempt, retries included) per model: median "
        "and 95th percentile from the gen_ai.client.operation.duration histogram.",
        [
            (
                "histogram_quantile(0.5, sum by (le, gen_ai_request_model) (rate("
                f"{duration}{{{JUDGE}}}[$__rate_interval])))",
                "{{gen_ai_request_model}} p50",
            ),
            (
                "histogram_quantile(0.95, sum by (le, gen_ai_request_model) (rate("
                f"{duration}{{{JUDGE}}}[$__rate_interval])))",
                "{{gen_ai_request_model}} p95",
            ),
        ],
        unit="s",
        steps=LATENCY_STEPS,
        exemplars=True,
        thresholds_line=True,
    )

    executions = "scorewatch_judge_executions_total"
    attempts = "scorewatch_judge_attempts_total"
    calls = _timeseries(
        "Judge executions and attempts",
        "Executions (one per prompt step) and attempts (every model call) per second and model. "
        "Attempts above executions are retries and structured-output fallbacks.",
        [
            (
                f"sum by (gen_ai_request_model) (rate({executions}{{{JUDGE}}}[$__rate_interval]))",
                "{{gen_ai_request_model}} executions",
            ),
            (
                f"sum by (gen_ai_request_model) (rate({attempts}{{{JUDGE}}}[$__rate_interval]))",
                "{{gen_ai_request_model}} attempts",
            ),
            (
                f"sum by (gen_ai_request_model) (rate({attempts}{{{JUDGE}}}[$__rate_interval]))\n"
                "- sum by (gen_ai_request_model) (rate("
                f"{executions}{{{JUDGE}}}[$__rate_interval]))",
                "{{gen_ai_request_model}} retries",
            ),
        ],
        unit="ops",
        steps=[(None, "green")],
    )

    failures = _timeseries(
        "Failed judge calls by error type",
        "Judge calls that ended in an error per second, by model and error type (error.type on "
        "gen_ai.client.operation.duration), and executions that failed after all retries "
        "(scorewatch.judge.executions with status failed).",
        [
            (
                "sum by (gen_ai_request_model, error_type) (rate("
                "gen_ai_client_operation_duration_seconds_count"
                f'{{{JUDGE}, error_type!=""}}[$__rate_interval]))',
                "{{gen_ai_request_model}} {{error_type}}",
            ),
            (
                "sum by (gen_ai_request_model) (rate("
                f'{executions}{{{JUDGE}, scorewatch_status="failed"}}[$__rate_interval]))',
                "{{gen_ai_request_model}} failed executions",
            ),
        ],
        unit="ops",
        steps=[(None, "green")],
    )

    error_ratio = _stat(
        "Judge error ratio",
        "Failed judge executions / all judge executions over the time range, per model. The "
        "ScorewatchJudgeErrorsHigh alert fires above 5% over 15m.",
        _ratio(
            "sum by (gen_ai_request_model) (increase("
            f'{executions}{{{JUDGE}, scorewatch_status="failed"}}[$__range]))',
            f"sum by (gen_ai_request_model) (increase({executions}{{{JUDGE}}}[$__range]))",
        ),
        "{{gen_ai_request_model}}",
        unit="percentunit",
        steps=RATIO_BAD_ABOVE_5,
        width=8,
    )

    spend = _timeseries(
        "Estimated judge spend per scorer (24h)",
        "Judge cost over the preceding 24 hours per scorer, in USD: provider-reported where the "
        "provider reports it, else estimated from litellm's price table. The dashed line is "
        f"the default daily budget of ScorewatchJudgeSpendHigh ({DAILY_BUDGET_USD:g} USD, all "
        "scorers together).",
        [
            (
                "sum by (gen_ai_evaluation_name) (increase("
                f"scorewatch_judge_cost_usd_total{{{JUDGE}}}[1d]))",
                "{{gen_ai_evaluation_name}}",
            ),
            (
                f"sum(increase(scorewatch_judge_cost_usd_total{{{JUDGE}}}[1d]))",
                "all scorers",
            ),
        ],
        unit="currencyUSD",
        steps=[(None, "green"), (DAILY_BUDGET_USD, "red")],
        thresholds_line=True,
        width=16,
    )

    token_sum = "gen_ai_client_token_usage_sum"
    judge_vs_app = _timeseries(
        "Judge vs application tokens",
        "Tokens per second used by the judges (gen_ai.evaluation.name set) next to the tokens "
        "of the application itself (the same GenAI metric without gen_ai.evaluation.name, from "
        "the application's own OpenTelemetry instrumentation on this Prometheus). The "
        "application series is empty when the application does not export it. OpenTelemetry "
        "has no cost metric for applications, so spend is compared through tokens.",
        [
            (
                f'sum(rate({token_sum}{{gen_ai_evaluation_name!=""}}[$__rate_interval]))',
                "judges",
            ),
            (
                f'sum(rate({token_sum}{{gen_ai_evaluation_name=""}}[$__rate_interval]))',
                "application",
            ),
        ],
        unit="suffix: tok/s",
        steps=[(None, "green")],
        width=16,
    )

    judge_share = _stat(
        "Judge share of GenAI tokens",
        "Judge tokens / all GenAI tokens on this Prometheus (judges plus the application) over "
        "the time range. 100% when the application exports no token usage of its own.",
        _ratio(
            f'sum(increase({token_sum}{{gen_ai_evaluation_name!=""}}[$__range]))',
            f"sum(increase({token_sum}[$__range]))",
        ),
        "judges",
        unit="percentunit",
        steps=[(None, "green"), (0.25, "orange"), (0.5, "red")],
        width=8,
    )

    board = _with_variables(
        _dashboard(
            "scorewatch-judge",
            "scorewatch / Judge usage",
            "What the LLM judges cost: tokens, latency, executions and retries, failures, spend.",
        )
    )
    for panel in (
        tokens,
        latency,
        calls,
        failures,
        error_ratio,
        spend,
        judge_vs_app,
        judge_share,
        _evaluations_by_target(width=24),
    ):
        board = board.with_panel(panel)
    return board


# -- Live pipeline -----------------------------------------------------------------------------


def live_dashboard() -> dash.Dashboard:
    decisions = "scorewatch_live_decisions_total"
    by_kind = _timeseries(
        "Live decisions by kind",
        "What happened to each piece of live traffic per second: sampled (queued for scoring), "
        "not_sampled, filtered, skipped_budget (held back by a spend budget), "
        "dropped_queue_full (queue full, not scored) and dropped_shutdown (still queued at "
        "shutdown).",
        [
            (
                f"sum by (scorewatch_decision) (rate({decisions}{{{SCORER}}}[$__rate_interval]))",
                "{{scorewatch_decision}}",
            )
        ],
        unit="ops",
        steps=[(None, "green")],
        stacked=True,
        width=16,
    )
    for kind in ("dropped_queue_full", "dropped_shutdown"):
        by_kind = by_kind.override_by_name(
            kind, [DynamicConfigValue(id_val="color", value={"mode": "fixed", "fixedColor": "red"})]
        )

    dropped_share = _stat(
        "Dropped because the queue was full",
        "Share of the sampled live traffic dropped because the queue was full, over the time "
        "range. ScorewatchLiveDrops fires above 1% over 15m.",
        _ratio(
            f'sum(increase({decisions}{{{SCORER}, scorewatch_decision="dropped_queue_full"}}'
            "[$__range]))",
            f"sum(increase({decisions}{{{SCORER}, "
            'scorewatch_decision=~"sampled|dropped_queue_full"}[$__range]))',
        ),
        "dropped",
        unit="percentunit",
        steps=RATIO_BAD_ABOVE_5,
        width=8,
    )

    queue = _timeseries(
        "Queue depth",
        "Live work items waiting for a worker, per scorewatch process. Items beyond "
        "live.max_queue (default 10000) are dropped.",
        [("sum by (instance) (scorewatch_live_queue_depth)", "{{instance}}")],
        unit="short",
        steps=[(None, "green"), (1000, "orange"), (8000, "red")],
        thresholds_line=True,
        width=12,
    )

    in_flight = _timeseries(
        "In flight",
        "Scorer runs executing now, per scorewatch process (at most live.max_concurrency).",
        [("sum by (instance) (scorewatch_live_in_flight)", "{{instance}}")],
        unit="short",
        steps=[(None, "green")],
        width=12,
    )

    run_duration = "scorewatch_scorer_run_duration_seconds_bucket"
    runs = _timeseries(
        "Scorer run duration p50 / p95",
        "Duration of whole scorer runs (all steps, all judge calls) per scorer.",
        [
            (
                "histogram_quantile(0.5, sum by (le, gen_ai_evaluation_name) (rate("
                f"{run_duration}{{{SCORER}}}[$__rate_interval])))",
                "{{gen_ai_evaluation_name}} p50",
            ),
            (
                "histogram_quantile(0.95, sum by (le, gen_ai_evaluation_name) (rate("
                f"{run_duration}{{{SCORER}}}[$__rate_interval])))",
                "{{gen_ai_evaluation_name}} p95",
            ),
        ],
        unit="s",
        steps=LATENCY_STEPS,
    )

    step_duration = "scorewatch_scorer_step_duration_seconds_bucket"
    steps = _timeseries(
        "Step duration p95",
        "95th percentile duration of each step (preprocess, analyze, generate_score, "
        "generate_reason) per scorer; prompt steps include their judge calls.",
        [
            (
                "histogram_quantile(0.95, sum by (le, gen_ai_evaluation_name, scorewatch_step) "
                f"(rate({step_duration}{{{SCORER}}}[$__rate_interval])))",
                "{{gen_ai_evaluation_name}} {{scorewatch_step}}",
            )
        ],
        unit="s",
        steps=LATENCY_STEPS,
    )

    sink_errors = _timeseries(
        "Sink errors",
        "Errors writing results to a sink (SQLite, JSONL, callback) per second, by sink. Results "
        "that fail to reach a sink are lost for that sink only.",
        [
            (
                "sum by (scorewatch_sink) (rate(scorewatch_sink_errors_total[$__rate_interval]))",
                "{{scorewatch_sink}}",
            )
        ],
        unit="ops",
        steps=[(None, "green"), (0.001, "red")],
        thresholds_line=True,
    )

    board = _with_variables(
        _dashboard(
            "scorewatch-live",
            "scorewatch / Live pipeline",
            "Live scoring: sampling decisions, drops, queue, concurrency, durations, sinks, and "
            "the Redis work queue between serve and workers.",
        )
    )
    for panel in (
        by_kind,
        dropped_share,
        queue,
        in_flight,
        runs,
        steps,
        sink_errors,
        _evaluations_by_target(),
    ):
        board = board.with_panel(panel)
    board = board.with_row(dash.Row("Spend budgets ([budget], docs/live.md)"))
    for panel in _budget_panels():
        board = board.with_panel(panel)
    board = board.with_row(dash.Row("Work queue (serve --queue, scorewatch worker)"))
    for panel in _work_queue_panels():
        board = board.with_panel(panel)
    return board


def _budget_panels() -> list[timeseries.Panel | stat.Panel]:
    """Judge spend budgets: empty without one. Every process deciding for a scorer reports
    the rate its budget allows and the same shared remainder, hence `min by`."""
    key = "gen_ai_evaluation_name, scorewatch_budget"
    rate = _timeseries(
        "Budget: effective sampling rate",
        "The share of each budgeted scorer's traffic sampled now, beside its configured rate: "
        "below it, the spend budget binds and the calls held back count as "
        "skipped_budget. ScorewatchBudgetBinding fires after 15m below 99% of the configured "
        "rate.",
        [
            (
                f"min by ({key}) (scorewatch_budget_sampling_rate{{{SCORER}}})",
                "{{gen_ai_evaluation_name}} effective ({{scorewatch_budget}})",
            ),
            (
                f"max by ({key}) (scorewatch_budget_configured_rate{{{SCORER}}})",
                "{{gen_ai_evaluation_name}} configured",
            ),
        ],
        unit="percentunit",
        steps=[(None, "green")],
        width=8,
    )
    remaining = _timeseries(
        "Budget: remaining today",
        "USD left of each spend budget this UTC day, the runs in flight reserved, against the "
        "daily limit: all is shared by every judged scorer, scorer:<id> is one scorer's own.",
        [
            (
                "min by (scorewatch_budget) (scorewatch_budget_remaining_usd)",
                "{{scorewatch_budget}} remaining",
            ),
            (
                "max by (scorewatch_budget) (scorewatch_budget_limit_usd)",
                "{{scorewatch_budget}} limit",
            ),
        ],
        unit="currencyUSD",
        steps=[(None, "green")],
        width=8,
    )
    decisions = "scorewatch_live_decisions_total"
    skipped = _stat(
        "Budget: calls held back",
        "Share of the budgeted scorers' calls the budgets held back (skipped_budget) over the "
        "time range, of those the sampling rate alone would have scored.",
        _ratio(
            f'sum(increase({decisions}{{{SCORER}, scorewatch_decision="skipped_budget"}}'
            "[$__range]))",
            f"sum(increase({decisions}{{{SCORER}, "
            'scorewatch_decision=~"sampled|skipped_budget|dropped_queue_full"}[$__range]))',
        ),
        "held back",
        unit="percentunit",
        steps=[(None, "green"), (0.5, "orange")],
        width=8,
    )
    return [rate, remaining, skipped]


def _work_queue_panels() -> list[timeseries.Panel]:
    """The Redis stream between `scorewatch serve --queue` and `scorewatch worker`: empty
    without a queue. Every process attached to a stream reports the same stream-wide gauges,
    hence `max by` the stream; the counters count what each process did, hence `sum`."""
    stream = "scorewatch_queue_stream"
    backlog = _timeseries(
        "Work queue backlog",
        "Accepted evaluations not yet acknowledged by a worker (queued or being scored), per "
        f"stream. serve refuses new work with 429 once it reaches [queue] max_backlog "
        f"({QUEUE_MAX_BACKLOG} in the shipped configs); ScorewatchQueueBacklogHigh fires above "
        "80% of it for 10m.",
        [(f"max by ({stream}) (scorewatch_queue_backlog{{{QUEUE}}})", f"{{{{{stream}}}}}")],
        unit="short",
        steps=[(None, "green"), (0.8 * QUEUE_MAX_BACKLOG, "orange"), (QUEUE_MAX_BACKLOG, "red")],
        thresholds_line=True,
        width=8,
    )
    in_progress = _timeseries(
        "Work queue pending and consumer lag",
        "pending: delivered to a worker and not yet acknowledged (at most the workers' summed "
        "concurrency, plus entries of dead workers waiting for visibility_timeout). lag: "
        "accepted and not yet delivered to any worker; lag that stays above zero means the "
        "workers cannot keep up: add workers.",
        [
            (
                f"max by ({stream}) (scorewatch_queue_pending{{{QUEUE}}})",
                f"{{{{{stream}}}}} pending",
            ),
            (f"max by ({stream}) (scorewatch_queue_lag{{{QUEUE}}})", f"{{{{{stream}}}}} lag"),
        ],
        unit="short",
        steps=[(None, "green")],
        width=8,
    )
    redeliveries = _timeseries(
        "Work queue redeliveries",
        "Entries per second claimed again (XAUTOCLAIM) because a worker held them longer than "
        "visibility_timeout: a worker died, or runs take longer than the timeout.",
        [
            (
                f"sum by ({stream}) (rate(scorewatch_queue_redeliveries_total{{{QUEUE}}}"
                "[$__rate_interval]))",
                f"{{{{{stream}}}}}",
            )
        ],
        unit="ops",
        steps=[(None, "green"), (0.001, "orange")],
        width=8,
    )
    dead_lettered = _timeseries(
        "Dead-lettered by reason",
        "Entries moved to the dead-letter stream (<stream>:dead) per second, by reason: failed "
        "(the run failed max_deliveries times), max_deliveries (it kept killing its worker), "
        "unknown_scorer (the workers lack the scorer), malformed (unreadable). They are not "
        "scored until replayed; see the ScorewatchQueueDeadLetters runbook.",
        [
            (
                f"sum by ({stream}, scorewatch_queue_reason) (rate("
                f"scorewatch_queue_dead_lettered_total{{{QUEUE}}}[$__rate_interval]))",
                f"{{{{{stream}}}}} {{{{scorewatch_queue_reason}}}}",
            )
        ],
        unit="ops",
        steps=[(None, "green"), (0.000001, "red")],
        thresholds_line=True,
        stacked=True,
        width=12,
    )
    dead_letters = _timeseries(
        "Dead letters waiting",
        "Entries in the dead-letter stream now, per stream: what is left to inspect and replay "
        "(or delete) with redis-cli.",
        [(f"max by ({stream}) (scorewatch_queue_dead_letters{{{QUEUE}}})", f"{{{{{stream}}}}}")],
        unit="short",
        steps=[(None, "green"), (1, "red")],
        width=12,
    )
    return [backlog, in_progress, redeliveries, dead_lettered, dead_letters]


# -- output ------------------------------------------------------------------------------------

DASHBOARDS: dict[str, Callable[[], dash.Dashboard]] = {
    "scorewatch-scores.json": scores_dashboard,
    "scorewatch-judge.json": judge_dashboard,
    "scorewatch-live.json": live_dashboard,
}


def build_all() -> dict[str, Any]:
    """Each dashboard's JSON model, by file name."""
    return {name: json.loads(render(factory())) for name, factory in DASHBOARDS.items()}


def render(board: dash.Dashboard) -> str:
    model = board.build()
    # Panel ids are what Grafana keys panel links and state on: number them in order.
    for number, panel in enumerate(model.panels or [], start=1):
        panel.id_val = number
    return json.dumps(model, cls=JSONEncoder, indent=2, sort_keys=True) + "\n"


def render_all() -> dict[Path, str]:
    return {DASHBOARD_DIR / name: render(factory()) for name, factory in DASHBOARDS.items()}


def stale_files() -> list[Path]:
    return regenerate.stale_files(render_all(), DASHBOARD_DIR.glob("*.json"))


def main(argv: list[str] | None = None) -> int:
    return regenerate.main(
        "Generate scorewatch's Grafana dashboards.",
        render_all,
        lambda: DASHBOARD_DIR.glob("*.json"),
        argv,
    )


if __name__ == "__main__":
    raise SystemExit(main())

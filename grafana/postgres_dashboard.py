"""Generate the PostgreSQL-backed dashboard: the lowest scores, straight from the score table.

    python grafana/postgres_dashboard.py           # rewrite grafana/dashboards-postgres/*.json
    python grafana/postgres_dashboard.py --check   # exit 1 if the committed dashboard is stale

Prometheus keeps aggregates; the individual runs (score, reason, judge, target, trace id) are
rows that `PostgresSink` writes to `mastra_scorers`. This dashboard reads them through Grafana's
PostgreSQL data source (type `grafana-postgresql-datasource`), so a person can go from "scores
dropped" to the runs that scored lowest, their judge's reason and the trace behind each. Panels
use Grafana's SQL macros (`$__timeFilter`, `$__timeGroupAlias`) and the dashboard variables;
tests/deploy/test_dashboard_postgres.py runs every query against a real PostgreSQL filled by the
real sink. Built with the same SDK and helpers as grafana/generate.py.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from grafana_foundation_sdk.builders import bargauge, table, timeseries
from grafana_foundation_sdk.builders import common as common_builder
from grafana_foundation_sdk.builders import dashboard as dash
from grafana_foundation_sdk.cog import builder as cogbuilder
from grafana_foundation_sdk.cog import variants as cogvariants
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models.dashboard import (
    DashboardCursorSync,
    DataSourceRef,
    DynamicConfigValue,
    VariableOption,
    VariableRefresh,
    VariableSort,
)

HERE = Path(__file__).resolve().parent
for _folder in (HERE, HERE.parent / "tools"):  # generate.py's helpers; tools/regenerate.py
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))

import regenerate  # noqa: E402  (tools/regenerate.py: the command line the generators share)
from generate import SCORE_STEPS, TAG, _thresholds, render  # noqa: E402

__all__ = ["DASHBOARD_DIR", "FILE_NAME", "TRACE_URL", "dashboard", "stale_files"]

DASHBOARD_DIR = HERE / "dashboards-postgres"
FILE_NAME = "scorewatch-low-scores.json"
DATASOURCE_TYPE = "grafana-postgresql-datasource"
DATASOURCE = DataSourceRef(type_val=DATASOURCE_TYPE, uid="${datasource}")
TABLE = "mastra_scorers"
# The trace UI of deploy/compose.yaml (Jaeger); a trace id appended opens that trace.
TRACE_URL = "http://localhost:16686/trace/"

# Every panel shares these filters. A run without a target is listed as "(none)".
TARGET_SQL = """COALESCE(NULLIF("target", ''), '(none)')"""
FILTERS = f"""$__timeFilter("createdAt")
  AND "scorerId" IN ($scorer)
  AND {TARGET_SQL} IN ($target)"""
# The judge models a run called, from its judge records (no prompt or output is read).
JUDGE_SQL = """(SELECT string_agg(DISTINCT model #>> '{}', ', ')
          FROM jsonb_path_query("judge", '$.*.executions[*].judgeModelId') AS model)"""


class SqlQuery(cogvariants.Dataquery):
    """A raw-SQL target of Grafana's SQL data sources (the SDK has no PostgreSQL query type)."""

    def __init__(self, ref_id: str, sql: str, query_format: str) -> None:
        self.ref_id, self.sql, self.query_format = ref_id, sql, query_format

    def to_json(self) -> dict[str, object]:
        return {
            "refId": self.ref_id,
            "datasource": DATASOURCE.to_json(),
            "editorMode": "code",
            "format": self.query_format,
            "rawQuery": True,
            "rawSql": self.sql,
        }


class Sql(cogbuilder.Builder[cogvariants.Dataquery]):
    def __init__(self, sql: str, *, query_format: str = "table", ref_id: str = "A") -> None:
        self._query = SqlQuery(ref_id, sql, query_format)

    def build(self) -> cogvariants.Dataquery:
        return self._query


def _trace_link() -> list[DynamicConfigValue]:
    link = {"title": "Open the trace", "url": "${trace_url}${__value.raw}", "targetBlank": True}
    return [DynamicConfigValue(id_val="links", value=[link])]


def _width(pixels: int) -> list[DynamicConfigValue]:
    return [DynamicConfigValue(id_val="custom.width", value=pixels)]


def lowest_scores_panel() -> table.Panel:
    sql = f"""SELECT
  "score",
  "scorerId" AS "scorer",
  {TARGET_SQL} AS "target",
  "reason",
  COALESCE({JUDGE_SQL}, '') AS "judge",
  "createdAt" AS "time",
  "traceId" AS "trace",
  "runId" AS "run"
FROM {TABLE}
WHERE {FILTERS}
  AND "status" = 'success'
  AND "score" IS NOT NULL
ORDER BY "score" ASC, "createdAt" DESC
LIMIT $limit"""
    return (
        table.Panel()
        .title("Lowest-scored runs")
        .description(
            "The runs with the lowest scores in the time range (successful runs; failed ones are "
            "below), lowest first: score, scorer, target, the judge's reason, the judge model(s), "
            "when it was scored and its trace id, which links to the trace (variable trace_url)."
        )
        .datasource(DATASOURCE)
        .height(12)
        .span(24)
        .unit("none")
        .decimals(3)
        .thresholds(_thresholds(SCORE_STEPS))
        .cell_height(common.TableCellHeight.SM)
        .filterable(True)
        .targets([Sql(sql)])
        .override_by_name(
            "score",
            [
                DynamicConfigValue(
                    id_val="custom.cellOptions", value={"type": "color-background", "mode": "basic"}
                ),
                *_width(80),
            ],
        )
        .override_by_name("time", [DynamicConfigValue(id_val="unit", value="dateTimeAsIso")])
        .override_by_name("trace", [*_trace_link(), *_width(280)])
        .override_by_name("reason", [DynamicConfigValue(id_val="custom.inspect", value=True)])
    )


def mean_score_panel() -> timeseries.Panel:
    sql = f"""SELECT
  $__timeGroupAlias("createdAt", $__interval),
  "scorerId" AS "metric",
  avg("score") AS "mean score"
FROM {TABLE}
WHERE {FILTERS}
  AND "status" = 'success'
  AND "score" IS NOT NULL
GROUP BY 1, 2
ORDER BY 1, 2"""
    return (
        timeseries.Panel()
        .title("Mean score per scorer")
        .description("Mean score of the successful runs per scorer, per time bucket.")
        .datasource(DATASOURCE)
        .height(8)
        .span(12)
        .unit("none")
        .decimals(3)
        .min(0)
        .thresholds(_thresholds(SCORE_STEPS))
        .line_width(1)
        .fill_opacity(10)
        .legend(
            common_builder.VizLegendOptions()
            .display_mode(common.LegendDisplayMode.TABLE)
            .placement(common.LegendPlacement.BOTTOM)
            .show_legend(True)
            .calcs(["mean", "min"])
        )
        .targets([Sql(sql, query_format="time_series")])
    )


def low_share_panel() -> bargauge.Panel:
    sql = f"""SELECT
  "scorerId" AS "scorer",
  avg(CASE WHEN "score" <= $low_score THEN 1.0 ELSE 0.0 END) AS "share at or below"
FROM {TABLE}
WHERE {FILTERS}
  AND "status" = 'success'
  AND "score" IS NOT NULL
GROUP BY 1
ORDER BY 1"""
    return (
        bargauge.Panel()
        .title("Share of runs at or below the low-score mark")
        .description(
            "Per scorer: the share of successful runs scoring at or below the variable low_score. "
            "0 when no run scored that low."
        )
        .datasource(DATASOURCE)
        .height(8)
        .span(12)
        .unit("percentunit")
        .min(0)
        .max(1)
        .decimals(1)
        .thresholds(_thresholds([(None, "green"), (0.1, "orange"), (0.25, "red")]))
        .reduce_options(common_builder.ReduceDataOptions().values(True).calcs(["lastNotNull"]))
        .orientation(common.VizOrientation.HORIZONTAL)
        .display_mode(common.BarGaugeDisplayMode.BASIC)
        .targets([Sql(sql)])
    )


def failed_runs_panel() -> table.Panel:
    sql = f"""SELECT
  "createdAt" AS "time",
  "scorerId" AS "scorer",
  {TARGET_SQL} AS "target",
  "status",
  "errorCode" AS "code",
  "failedStep" AS "step",
  "error",
  "traceId" AS "trace"
FROM {TABLE}
WHERE {FILTERS}
  AND "status" <> 'success'
ORDER BY "createdAt" DESC
LIMIT $limit"""
    return (
        table.Panel()
        .title("Failed runs")
        .description(
            "Runs that produced no score (judge error, step error, not scorable), newest first: "
            "the error code, the step that failed, the message and the trace."
        )
        .datasource(DATASOURCE)
        .height(10)
        .span(24)
        .thresholds(_thresholds([(None, "red")]))
        .cell_height(common.TableCellHeight.SM)
        .filterable(True)
        .targets([Sql(sql)])
        .override_by_name("time", [DynamicConfigValue(id_val="unit", value="dateTimeAsIso")])
        .override_by_name("trace", [*_trace_link(), *_width(280)])
    )


# Labels joined with the judge's score of their run (docs/labels.md); the runs are filtered as
# every other panel's are. A label is a pass/fail verdict or a score on the scale; a score label
# counts as pass at or above the pass mark, as the judge's score does.
LABELS = "scorewatch_labels"
LABELLED_RUNS = f"""(SELECT "id", "score", "scorerId", "traceId", {TARGET_SQL} AS "target"
        FROM {TABLE} WHERE {FILTERS} AND "status" = 'success') AS s
  JOIN {LABELS} AS l ON l."runId" = s."id" AND l."scorerId" = s."scorerId"
"""
PEOPLE_SQL = """COALESCE(l."verdict",
           CASE WHEN l."score" >= $pass_mark THEN 'pass' ELSE 'fail' END)"""
JUDGE_VERDICT_SQL = """CASE WHEN s."score" >= $pass_mark THEN 'pass' ELSE 'fail' END"""


def disagreements_panel() -> table.Panel:
    sql = f"""SELECT
  abs(COALESCE(l."score", CASE WHEN l."verdict" = 'pass' THEN 1.0 ELSE 0.0 END) - s."score")
    AS "gap",
  s."scorerId" AS "scorer",
  s."score" AS "judge",
  COALESCE(l."verdict", l."score"::text) AS "people",
  l."annotator",
  l."comment",
  s."target",
  s."traceId" AS "trace",
  s."id" AS "run"
FROM {LABELLED_RUNS}
ORDER BY 1 DESC, s."id"
LIMIT $limit"""
    return (
        table.Panel()
        .title("Where judge and people disagree most")
        .description(
            "Labelled runs (scored in the time range) by how far the judge's score is from the "
            "person's label (a pass counts as 1, a fail as 0), widest first, with the person's "
            "comment and the trace."
        )
        .datasource(DATASOURCE)
        .height(10)
        .span(24)
        .decimals(3)
        .cell_height(common.TableCellHeight.SM)
        .filterable(True)
        .targets([Sql(sql)])
        .override_by_name("trace", [*_trace_link(), *_width(280)])
    )


def confusion_panel() -> table.Panel:
    sql = f"""SELECT
  s."scorerId" AS "scorer",
  {PEOPLE_SQL} AS "people",
  {JUDGE_VERDICT_SQL} AS "judge",
  count(*) AS "labels"
FROM {LABELLED_RUNS}
GROUP BY 1, 2, 3
ORDER BY 1, 2, 3"""
    return (
        table.Panel()
        .title("Judge and people: pass/fail confusion")
        .description(
            "Per scorer: how many labels pass or fail by the person and by the judge (its score "
            "cut at the variable pass_mark). Kappa and its interval: GET /v1/agreement and the "
            "scorewatch_judge_agreement metric."
        )
        .datasource(DATASOURCE)
        .height(8)
        .span(12)
        .targets([Sql(sql)])
    )


def agreement_over_time_panel() -> timeseries.Panel:
    sql = f"""SELECT
  $__timeGroupAlias(l."updatedAt", $__interval),
  s."scorerId" AS "metric",
  avg(CASE WHEN {PEOPLE_SQL} = {JUDGE_VERDICT_SQL} THEN 1.0 ELSE 0.0 END) AS "agreement"
FROM {LABELLED_RUNS}
GROUP BY 1, 2
ORDER BY 1, 2"""
    return (
        timeseries.Panel()
        .title("Share of labels the judge agrees with")
        .description(
            "Per scorer, per time bucket of the labels: the share where the person's pass/fail "
            "and the judge's (at the variable pass_mark) are the same."
        )
        .datasource(DATASOURCE)
        .height(8)
        .span(12)
        .unit("percentunit")
        .min(0)
        .max(1)
        .line_width(1)
        .targets([Sql(sql, query_format="time_series")])
    )


def review_backlog_panel() -> table.Panel:
    # The review sample is marked in the score rows when the runs are scored (reviewSampled,
    # under a partial index): the backlog is counted from the marks, exactly.
    sql = f"""SELECT
  s."scorerId" AS "scorer",
  count(*) AS "marked",
  count(*) FILTER (WHERE s."labelled") AS "labelled",
  count(*) FILTER (WHERE NOT s."labelled") AS "pending",
  min(s."createdAt") FILTER (WHERE NOT s."labelled") AS "oldest pending"
FROM (SELECT r."scorerId", r."createdAt",
        EXISTS (SELECT 1 FROM {LABELS} AS l
                WHERE l."runId" = r."id" AND l."scorerId" = r."scorerId") AS "labelled"
      FROM {TABLE} AS r
      WHERE {FILTERS} AND r."reviewSampled") AS s
GROUP BY 1
ORDER BY 4 DESC, 1"""
    return (
        table.Panel()
        .title("Review backlog")
        .description(
            "Per scorer: the runs of its review sample (review_rate, marked when they were "
            "scored in the time range), how many carry a human label and how many wait for one "
            "(GET /v1/review lists them), with the oldest waiting. Live counts of the whole "
            "sample: the scorewatch_review_runs metric."
        )
        .datasource(DATASOURCE)
        .height(6)
        .span(24)
        .targets([Sql(sql)])
        .override_by_name(
            "oldest pending", [DynamicConfigValue(id_val="unit", value="dateTimeAsIso")]
        )
    )


def _column_variable(name: str, label: str, column_sql: str, description: str) -> Any:
    return (
        dash.QueryVariable(name)
        .label(label)
        .description(description)
        .datasource(DATASOURCE)
        .query(
            f'SELECT DISTINCT {column_sql} FROM {TABLE} WHERE $__timeFilter("createdAt") ORDER BY 1'
        )
        .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(VariableSort.ALPHABETICAL_CASE_INSENSITIVE_ASC)
        .multi(True)
        .include_all(True)
        .current(VariableOption(selected=True, text="All", value="$__all"))
    )


def _variables() -> Sequence[Any]:
    return [
        dash.DatasourceVariable("datasource")
        .label("Data source")
        .type(DATASOURCE_TYPE)
        .description("The PostgreSQL database PostgresSink writes to (table mastra_scorers)."),
        _column_variable("scorer", "Scorer", '"scorerId"', "Scorer ids with runs in the range."),
        _column_variable("target", "Target", TARGET_SQL, "Scored targets with runs in the range."),
        dash.CustomVariable("limit")
        .label("Rows")
        .description("How many runs the tables list.")
        .values("20,50,100,500")
        .current(VariableOption(selected=True, text="50", value="50")),
        dash.CustomVariable("low_score")
        .label("Low-score mark")
        .description("Scores at or below this count as low (the bar gauge).")
        .values("0.2,0.3,0.5,0.7")
        .current(VariableOption(selected=True, text="0.5", value="0.5")),
        dash.CustomVariable("pass_mark")
        .label("Pass mark")
        .description("Scores at or above this pass (the label panels).")
        .values("0.5,0.6,0.7,0.8")
        .current(VariableOption(selected=True, text="0.5", value="0.5")),
        dash.TextBoxVariable("trace_url")
        .label("Trace URL prefix")
        .description("A trace id appended to this opens the trace (Jaeger, Tempo, ...).")
        .default_value(TRACE_URL),
    ]


def dashboard() -> dash.Dashboard:
    board = (
        dash.Dashboard("scorewatch / Lowest scores (PostgreSQL)")
        .uid("scorewatch-low-scores")
        .description(
            "The individual runs behind the scores, from the PostgreSQL score table: the lowest "
            "scores with the judge's reason and a link to each trace, the mean per scorer, the "
            "share of low scores and the failed runs; the review backlog, and where human labels "
            "(scorewatch_labels) and the judge agree and disagree."
        )
        .tags([TAG, "postgresql"])
        .editable()
        .tooltip(DashboardCursorSync.CROSSHAIR)
        .refresh("1m")
        .time("now-24h", "now")
        .timezone("browser")
    )
    for variable in _variables():
        board = board.with_variable(variable)
    for panel in (
        lowest_scores_panel(),
        mean_score_panel(),
        low_share_panel(),
        failed_runs_panel(),
        confusion_panel(),
        agreement_over_time_panel(),
        review_backlog_panel(),
        disagreements_panel(),
    ):
        board = board.with_panel(panel)
    return board


def build() -> dict[str, Any]:
    """The dashboard's JSON model."""
    loaded: dict[str, Any] = json.loads(render(dashboard()))
    return loaded


def _expected() -> dict[Path, str]:
    return {DASHBOARD_DIR / FILE_NAME: render(dashboard())}


def stale_files() -> list[Path]:
    return regenerate.stale_files(_expected(), DASHBOARD_DIR.glob("*.json"))


def main(argv: list[str] | None = None) -> int:
    return regenerate.main(
        "Generate the PostgreSQL-backed dashboard.",
        _expected,
        lambda: DASHBOARD_DIR.glob("*.json"),
        argv,
    )


if __name__ == "__main__":
    raise SystemExit(main())

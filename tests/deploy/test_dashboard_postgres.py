"""The PostgreSQL-backed dashboard (grafana/postgres_dashboard.py): generated, provisioned, and
every panel's and variable's SQL run against a real PostgreSQL filled by the real PostgresSink.

Grafana expands its SQL macros and variables before it sends a query; `grafana_sql` below does
the same expansion, as Grafana's PostgreSQL data source documents it:
`$__timeFilter(col)` -> `col BETWEEN '<from>' AND '<to>'`, `$__timeGroupAlias(col, $__interval)`
-> `floor(extract(epoch from col)/<seconds>)*<seconds> AS "time"`, a multi-value variable ->
its values quoted and comma-separated, any other variable -> its value.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

import scorewatch as sw
from deploy_support import GRAFANA, load_script, load_yaml
from scale_support import PG_DSN, require_postgres, unique_prefix
from scorewatch.core.call import AgentCall
from scorewatch.live import PostgresSink
from scorewatch.live.engine import score_call
from scorewatch.sinks.labels import Label
from scorewatch.sinks.postgres_labels import PostgresLabelStore
from scorewatch.testing.judge_server import LoopbackJudgeServer, Reply

pytestmark = pytest.mark.integration

MULTI = ("scorer", "target")


def generator() -> Any:
    return load_script(GRAFANA / "postgres_dashboard.py", "scorewatch_postgres_dashboard")


def board() -> dict[str, Any]:
    path = GRAFANA / "dashboards-postgres" / "scorewatch-low-scores.json"
    loaded: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return loaded


def panel_sql(title: str) -> str:
    panel = next(p for p in board()["panels"] if p["title"] == title)
    (target,) = panel["targets"]
    sql: str = target["rawSql"]
    return sql


def variable_sql(name: str) -> str:
    variable = next(v for v in board()["templating"]["list"] if v["name"] == name)
    query = variable["query"]
    return str(query["query"] if isinstance(query, dict) else query)


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def grafana_sql(sql: str, window: tuple[datetime, datetime], values: dict[str, Any]) -> str:
    start, end = (moment.strftime("%Y-%m-%dT%H:%M:%SZ") for moment in window)
    sql = re.sub(r"\$__timeFilter\(([^)]+)\)", rf"\1 BETWEEN '{start}' AND '{end}'", sql)
    sql = re.sub(
        r"\$__timeGroupAlias\(([^,]+),\s*\$__interval\)",
        r'floor(extract(epoch from \1)/60)*60 AS "time"',
        sql,
    )
    for name, value in sorted(values.items(), key=lambda item: -len(item[0])):
        text = ",".join(_quote(v) for v in value) if name in MULTI else str(value)
        sql = sql.replace(f"${{{name}}}", text).replace(f"${name}", text)
    assert "$__" not in sql and not re.search(r"\$[a-z]", sql), sql
    return sql


# -- the generated file ------------------------------------------------------------------------


def test_committed_dashboard_matches_the_generator() -> None:
    assert generator().stale_files() == [], "run python grafana/postgres_dashboard.py"


def test_every_panel_reads_postgresql_and_is_described() -> None:
    model = board()
    assert model["uid"] == "scorewatch-low-scores"
    assert {p["title"] for p in model["panels"]} == {
        "Lowest-scored runs",
        "Mean score per scorer",
        "Share of runs at or below the low-score mark",
        "Failed runs",
        "Judge and people: pass/fail confusion",
        "Share of labels the judge agrees with",
        "Where judge and people disagree most",
        "Review backlog",
    }
    for panel in model["panels"]:
        assert panel["description"], panel["title"]
        assert panel["datasource"]["type"] == "grafana-postgresql-datasource"
        for target in panel["targets"]:
            assert target["datasource"]["type"] == "grafana-postgresql-datasource"
            assert target["rawQuery"] is True and target["rawSql"]
    variables = {v["name"]: v for v in model["templating"]["list"]}
    assert variables["datasource"]["query"] == "grafana-postgresql-datasource"
    # The trace column links to the trace by its id.
    lowest = next(p for p in model["panels"] if p["title"] == "Lowest-scored runs")
    trace = next(
        o for o in lowest["fieldConfig"]["overrides"] if o["matcher"]["options"] == "trace"
    )
    links = next(p["value"] for p in trace["properties"] if p["id"] == "links")
    assert links[0]["url"] == "${trace_url}${__value.raw}"
    assert variables["trace_url"]["query"] == generator().TRACE_URL


def test_grafana_provisions_the_postgresql_datasource_and_the_dashboard() -> None:
    sources = load_yaml(GRAFANA / "provisioning" / "datasources" / "postgres.yaml")["datasources"]
    (postgres,) = sources
    assert postgres["type"] == "grafana-postgresql-datasource"
    assert postgres["jsonData"]["database"] == "scorewatch"
    # The password comes from the environment, never from the file.
    assert postgres["secureJsonData"]["password"] == "$POSTGRES_PASSWORD"
    providers = load_yaml(GRAFANA / "provisioning" / "dashboards" / "scorewatch.yaml")
    provider = next(p for p in providers["providers"] if p["name"] == "scorewatch-postgresql")
    compose = load_yaml(GRAFANA.parent / "deploy" / "compose.yaml")
    grafana = compose["services"]["grafana"]
    assert any(
        m.startswith("../grafana/dashboards-postgres:")
        and m.split(":")[1] == provider["options"]["path"]
        for m in grafana["volumes"]
    ), grafana["volumes"]
    assert "POSTGRES_PASSWORD" in grafana["environment"]


# -- the SQL, on a real PostgreSQL -------------------------------------------------------------


def _judge_reply(body: dict[str, Any]) -> Reply:
    prompt = body["messages"][-1]["content"]
    if prompt.startswith("Explain"):
        return Reply(text="the answer " + ("misses the point" if "0.1" in prompt else "is fine"))
    return Reply(text='{"score": 0.1}' if "wrong" in prompt else '{"score": 0.9}')


def _scorers(base_url: str) -> list[sw.Scorer]:
    judge = sw.JudgeConfig(
        model="openai/loopback-judge",
        instructions="Rate the answer.",
        model_options={"api_base": base_url, "api_key": "sk-test", "max_retries": 0},
    )
    judged = (
        sw.create_scorer(id="judged", description="judge-rated", judge=judge)
        .generate_score(sw.PromptStep("rate", lambda ctx: f"Rate: {ctx.run.output}"))
        .generate_reason(sw.PromptStep("explain", lambda ctx: f"Explain {ctx.score}"))
    )
    length = sw.create_scorer(id="length", description="words / 10").generate_score(
        lambda ctx: min(1.0, len(str(ctx.run.output).split()) / 10)
    )

    def explode(ctx: sw.StepContext) -> float:
        raise ValueError("no score for this one")

    failing = sw.create_scorer(id="failing", description="always fails").generate_score(explode)
    return [judged, length, failing]


CALLS = [
    # (output, target, trace id)
    ("a right answer with enough words to score well here", "support-bot", "a" * 32),
    ("a wrong answer", "support-bot", "b" * 32),
    ("wrong", None, "c" * 32),
    ("another right answer", "billing-bot", None),
]


@pytest.fixture(scope="module")
def filled() -> Iterator[tuple[str, datetime]]:
    """A schema with the score table, filled by PostgresSink with real scorer runs."""
    require_postgres()
    schema = unique_prefix().replace("-", "_")

    async def fill(base_url: str) -> None:
        sink = PostgresSink(PG_DSN, schema=schema)
        try:
            # Every run of `length` is in its review sample (review_rate 1), none of the others.
            results = [
                await score_call(
                    scorer,
                    call,
                    f"run-{index}-{scorer.id}",
                    review_rate=1.0 if scorer.id == "length" else 0.0,
                )
                for index, (output, target, trace_id) in enumerate(CALLS)
                for call in [AgentCall("q", output, target, trace_id, None, f"agent-{index}")]
                for scorer in _scorers(base_url)
            ]
            await sink.write(results)
        finally:
            await sink.aclose()

    with LoopbackJudgeServer(_judge_reply) as server:
        asyncio.run(fill(server.base_url))
    try:
        yield schema, datetime.now(UTC)
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'.encode())


def query(schema: str, sql: str) -> list[dict[str, Any]]:
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema}"'.encode())
        cursor = conn.execute(sql.encode())
        columns = [column.name for column in cursor.description or []]
        return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]


def _values(schema: str, window: tuple[datetime, datetime], **overrides: Any) -> dict[str, Any]:
    """The variables as Grafana fills them: "All" is every value the variable's query lists."""
    values: dict[str, Any] = {"limit": 50, "low_score": 0.5, "pass_mark": 0.5}
    for name in MULTI:
        listed = query(schema, grafana_sql(variable_sql(name), window, {}))
        values[name] = [next(iter(row.values())) for row in listed]
    values.update(overrides)
    return values


def _window(now: datetime) -> tuple[datetime, datetime]:
    return now - timedelta(hours=1), now + timedelta(minutes=1)


def test_variables_list_the_scorers_and_targets(filled: tuple[str, datetime]) -> None:
    schema, now = filled
    values = _values(schema, _window(now))
    assert values["scorer"] == ["failing", "judged", "length"]
    assert values["target"] == ["(none)", "billing-bot", "support-bot"]
    # Outside the time range there is nothing to list.
    past = (now - timedelta(days=3), now - timedelta(days=2))
    assert query(schema, grafana_sql(variable_sql("scorer"), past, {})) == []


def test_lowest_scored_runs_with_reason_judge_target_time_and_trace(
    filled: tuple[str, datetime],
) -> None:
    schema, now = filled
    window = _window(now)
    rows = query(
        schema, grafana_sql(panel_sql("Lowest-scored runs"), window, _values(schema, window))
    )
    assert [row["score"] for row in rows] == sorted(row["score"] for row in rows)
    assert len(rows) == 8  # two successful scorers x four calls; failed runs are not listed
    assert rows[0]["score"] == pytest.approx(0.1)
    lowest = next(row for row in rows if row["scorer"] == "judged")
    assert lowest["score"] == pytest.approx(0.1)
    assert lowest["reason"] == "the answer misses the point"
    assert lowest["judge"] == "openai/loopback-judge"
    assert lowest["target"] in ("support-bot", "(none)")
    assert lowest["trace"] in ("b" * 32, "c" * 32)
    assert abs(lowest["time"] - now) < timedelta(minutes=5)
    length_rows = [row for row in rows if row["scorer"] == "length"]
    assert {row["judge"] for row in length_rows} == {""}  # model-free: no judge
    assert {row["trace"] for row in rows} == {"a" * 32, "b" * 32, "c" * 32, None}
    # Narrowed by the variables, and by the row limit.
    only = _values(schema, window, scorer=["length"], target=["support-bot"], limit=1)
    (one,) = query(schema, grafana_sql(panel_sql("Lowest-scored runs"), window, only))
    assert (one["scorer"], one["target"], one["score"]) == ("length", "support-bot", 0.3)


def test_mean_score_per_scorer(filled: tuple[str, datetime]) -> None:
    schema, now = filled
    window = _window(now)
    rows = query(
        schema, grafana_sql(panel_sql("Mean score per scorer"), window, _values(schema, window))
    )
    means: dict[str, list[float]] = {}
    for row in rows:
        assert float(row["time"]) % 60 == 0
        means.setdefault(row["metric"], []).append(row["mean score"])
    assert set(means) == {"judged", "length"}
    if len(means["judged"]) == 1:  # all in one minute bucket (almost always)
        assert means["judged"][0] == pytest.approx((0.9 + 0.1 + 0.1 + 0.9) / 4)


def test_share_of_low_scores(filled: tuple[str, datetime]) -> None:
    schema, now = filled
    window = _window(now)
    sql = panel_sql("Share of runs at or below the low-score mark")
    rows = query(schema, grafana_sql(sql, window, _values(schema, window)))
    shares = {row["scorer"]: float(row["share at or below"]) for row in rows}
    # judged: 0.1 twice of four; length: 1.0, 0.3, 0.1, 0.3 -> three of four at or below 0.5.
    assert shares == {"judged": 0.5, "length": 0.75}
    none_low = query(schema, grafana_sql(sql, window, _values(schema, window, low_score=0.05)))
    assert {float(row["share at or below"]) for row in none_low} == {0.0}


def test_failed_runs_with_code_step_and_trace(filled: tuple[str, datetime]) -> None:
    schema, now = filled
    window = _window(now)
    rows = query(schema, grafana_sql(panel_sql("Failed runs"), window, _values(schema, window)))
    assert len(rows) == 4 and {row["scorer"] for row in rows} == {"failing"}
    assert {row["step"] for row in rows} == {"generateScore"}
    assert all("no score for this one" in row["error"] and row["code"] for row in rows)
    assert {row["trace"] for row in rows} == {"a" * 32, "b" * 32, "c" * 32, None}
    assert [row["time"] for row in rows] == sorted((row["time"] for row in rows), reverse=True)


def test_queries_never_read_prompts_or_evaluated_content() -> None:
    for panel in board()["panels"]:
        sql = panel["targets"][0]["rawSql"]
        for column in ("input", "output", "Prompt", "prompt"):
            assert f'"{column}"' not in sql and f"'{column}'" not in sql, (panel["title"], column)


def test_label_panels_show_confusion_agreement_and_the_widest_disagreements(
    filled: tuple[str, datetime],
) -> None:
    schema, now = filled
    # The length scorer gave run 0 1.0, run 1 0.3 and run 3 0.3 (words / 10, capped at 1).
    labels = [
        Label("run-0-length", "length", "ana", verdict="fail", comment="wrong"),
        Label("run-1-length", "length", "ana", score=0.2),
        Label("run-3-length", "length", "ben", verdict="pass"),
    ]
    asyncio.run(PostgresLabelStore(PG_DSN, schema=schema).put(labels))
    window = _window(now)
    values = _values(schema, window)
    confusion = query(
        schema, grafana_sql(panel_sql("Judge and people: pass/fail confusion"), window, values)
    )
    assert [(r["scorer"], r["people"], r["judge"], r["labels"]) for r in confusion] == [
        ("length", "fail", "fail", 1),
        ("length", "fail", "pass", 1),
        ("length", "pass", "fail", 1),
    ]
    shares = query(
        schema, grafana_sql(panel_sql("Share of labels the judge agrees with"), window, values)
    )
    assert sum(float(r["agreement"]) for r in shares) == pytest.approx(1 / 3)
    widest = query(
        schema, grafana_sql(panel_sql("Where judge and people disagree most"), window, values)
    )
    assert [r["run"] for r in widest] == ["run-0-length", "run-3-length", "run-1-length"]
    assert [float(r["gap"]) for r in widest] == pytest.approx([1.0, 0.7, 0.1])
    assert widest[0]["comment"] == "wrong" and widest[0]["trace"] == "a" * 32
    # The review backlog: of the 4 marked runs of `length`, 3 are labelled; run-2 waits.
    backlog = query(schema, grafana_sql(panel_sql("Review backlog"), window, values))
    assert [(r["scorer"], r["marked"], r["labelled"], r["pending"]) for r in backlog] == [
        ("length", 4, 3, 1)
    ]
    (run_2,) = query(
        schema, """SELECT "createdAt" FROM mastra_scorers WHERE "id" = 'run-2-length'"""
    )
    assert backlog[0]["oldest pending"] == run_2["createdAt"]
    # Scored outside the time range: not in the backlog of the range.
    earlier = (now - timedelta(days=3), now - timedelta(days=2))
    assert query(schema, grafana_sql(panel_sql("Review backlog"), earlier, values)) == []

"""A run declared not scorable, everywhere downstream of the scorer (issue 16, item 3): live sinks
store a row with status `not_scorable` and no score, telemetry counts outcome `not_scorable` with
no score on the evaluation event and no histogram observation, Prometheus exposes it under
`scorewatch_outcome="not_scorable"`. (`run_evals` is in test_evals_reference.py, serve's API in
test_server_api.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

import scorewatch as sw
from scale_support import PG_DSN
from scorewatch import telemetry
from scorewatch.live import CallbackSink, JsonlSink, LiveScoring, ScoreRecord, SqliteSink
from scorewatch.sinks.postgres import PostgresSink
from scorewatch.telemetry import names
from telemetry_helpers import in_memory_telemetry

pytestmark = pytest.mark.integration

SKIPPED = {"step": "preprocess", "reason": "empty output"}


def picky() -> sw.Scorer:
    return (
        sw.create_scorer(id="picky", description="nothing to judge in an empty output")
        .preprocess(lambda ctx: sw.not_scorable("empty output") if not ctx.run.output else {"n": 1})
        .generate_score(lambda ctx: 1)
    )


async def _live(sinks: list[Any]) -> LiveScoring:
    live = LiveScoring({"picky": picky()}, sinks=sinks, drain_on_exit=False)
    live.submit(input="q", output="", target="bot", run_id="skipped-run")
    live.submit(input="q", output="answer", target="bot", run_id="scored-run")
    await live.aclose()
    return live


def _check_rows(rows: list[dict[str, Any]]) -> None:
    by_id = {row["metadata"]["agentRunId"]: row for row in rows}
    skipped, scored = by_id["skipped-run"], by_id["scored-run"]
    assert skipped["status"] == "not_scorable"
    assert skipped["score"] is None and skipped["error"] is None
    assert skipped["failedStep"] is None
    assert skipped["metadata"]["notScorable"] == SKIPPED
    assert scored["status"] == "success" and scored["score"] == 1
    assert "notScorable" not in scored["metadata"]


async def test_sqlite_jsonl_and_callback_sinks_store_status_not_scorable(tmp_path: Path) -> None:
    sqlite = SqliteSink(tmp_path / "scores.db")
    jsonl = JsonlSink(tmp_path / "scores.jsonl")
    delivered: list[ScoreRecord] = []
    live = await _live([sqlite, jsonl, CallbackSink(delivered.append)])
    stats = live.stats()
    assert (stats["not_scorable"], stats["scored"], stats["failed"]) == (1, 1, 0)
    _check_rows(sqlite.query(limit=10))
    assert [r["metadata"]["agentRunId"] for r in sqlite.query(status="not_scorable")] == [
        "skipped-run"
    ]
    lines = [json.loads(line) for line in (tmp_path / "scores.jsonl").read_text().splitlines()]
    _check_rows(lines)
    (skipped,) = [r for r in delivered if r.call.run_id == "skipped-run"]
    assert skipped.status == "not_scorable" and skipped.score is None
    assert skipped.not_scorable == sw.core.NotScorableInfo(step="preprocess", reason="empty output")
    # A stored row reads back as what it was.
    (row,) = sqlite.query(status="not_scorable")
    again = ScoreRecord.from_row(row, skipped.call)
    assert again.status == "not_scorable" and again.not_scorable == skipped.not_scorable
    await sqlite.aclose()


async def test_postgres_sink_stores_status_not_scorable(schema: str) -> None:
    await _live([PostgresSink(PG_DSN, schema=schema)])  # closed with the live scoring
    sink = PostgresSink(PG_DSN, schema=schema)
    try:
        _check_rows(await sink.aquery(limit=10))
        skipped = await sink.aquery(status="not_scorable")
        assert [r["metadata"]["agentRunId"] for r in skipped] == ["skipped-run"]
    finally:
        await sink.aclose()


async def test_telemetry_counts_the_outcome_and_records_no_score() -> None:
    with in_memory_telemetry() as sink:
        await picky().run(output="", run_id="skipped-run")
        await picky().run(output="answer", run_id="scored-run")
        runs = sink.points(names.METRIC_SCORER_RUNS)
        outcomes = {p.attributes[names.ATTR_OUTCOME]: p.value for p in runs}
        assert outcomes == {names.OUTCOME_NOT_SCORABLE: 1, names.OUTCOME_SUCCESS: 1}
        (histogram,) = sink.points(names.METRIC_SCORE)
        assert (histogram.count, histogram.sum) == (1, 1)  # the scored run only
        events = {event[names.ATTR_RUN_ID]: event for event in sink.evaluation_events()}
        assert names.ATTR_EVALUATION_SCORE_VALUE not in events["skipped-run"]
        assert names.ATTR_ERROR_TYPE not in events["skipped-run"]
        assert events["scored-run"][names.ATTR_EVALUATION_SCORE_VALUE] == 1
        scored_spans = [s for s in sink.spans() if names.ATTR_SCORE in (s.attributes or {})]
        assert [s.attributes[names.ATTR_SCORE] for s in scored_spans] == [1]


def _samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return samples


async def test_prometheus_exposes_the_not_scorable_outcome() -> None:
    handle = telemetry.configure(
        service_name="scorewatch-test", prometheus="127.0.0.1:0", otlp=False, set_global=False
    )
    try:
        await picky().run(output="")
        await picky().run(output="")
        await picky().run(output="answer")
        transport = httpx.ASGITransport(app=telemetry.prometheus_asgi_app())
        async with httpx.AsyncClient(transport=transport, base_url="http://sw") as client:
            samples = _samples((await client.get("/")).text)
    finally:
        handle.shutdown()
    runs = {
        labels["scorewatch_outcome"]: value for labels, value in samples[names.PROM_SCORER_RUNS]
    }
    assert runs == {"not_scorable": 2, "success": 1}
    assert sum(v for _, v in samples[f"{names.PROM_SCORE}_count"]) == 1

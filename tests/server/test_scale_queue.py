"""The Redis work queue and the PostgreSQL sink, in this process, against the real Redis and
PostgreSQL on loopback: admission, backlog limit, dead letters, idempotent redelivery,
migrations, queue metrics and the span link from the enqueuing request to the run."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest
from redis.asyncio import Redis

import scorewatch as sw
from scale_support import (
    PG_DSN,
    REDIS_URL,
    pg_dsn,
    redis_url,
    require_redis,
    unique_prefix,
)
from scorewatch.core.call import AgentCall
from scorewatch.live import CallbackSink, LiveScorerEntry, Sampling
from scorewatch.live.entry import in_review_sample
from scorewatch.server.config.file import ServeConfig
from scorewatch.server.config.stores import Stores
from scorewatch.server.intake.choice import build_intake
from scorewatch.server.intake.in_process import InProcessIntake
from scorewatch.server.intake.interface import QueueFullError, ScoreItem
from scorewatch.server.intake.redis_queue import IntakeUnavailableError, RedisIntake
from scorewatch.server.queue.stream import StreamNames, connect, read_gauges
from scorewatch.server.queue.worker import StreamWorker
from scorewatch.sinks.postgres import MIGRATIONS, PostgresSink
from scorewatch.sinks.record import ScoreRecord
from scorewatch.sinks.sqlite import SCORE_COLUMNS
from scorewatch.telemetry import names
from scorewatch.testing import in_memory_telemetry

pytestmark = pytest.mark.integration

# -- fixtures -------------------------------------------------------------------------------


@pytest.fixture
async def redis() -> AsyncIterator[tuple[Redis, StreamNames]]:
    require_redis()
    prefix = unique_prefix()
    names_ = StreamNames(f"{prefix}:work", f"{prefix}-workers", f"{prefix}:work:dead")
    client = connect(REDIS_URL)
    yield client, names_
    keys = [key async for key in client.scan_iter(match=f"{prefix}*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()


def _length_scorer() -> sw.Scorer:
    scorer = sw.create_scorer(id="length", description="Output length, capped at 100")
    return scorer.generate_score(lambda ctx: min(1.0, len(str(ctx.run.output)) / 100))


def _picky_scorer() -> sw.Scorer:
    def judge(ctx: Any) -> float:
        if ctx.run.output == "poison":
            raise RuntimeError("this item always fails")
        return 1.0

    return sw.create_scorer(id="picky", description="Fails on poison").generate_score(judge)


def _intake(
    client: Redis, stream: StreamNames, scorers: dict[str, sw.Scorer], **options: Any
) -> RedisIntake:
    entries = {sid: LiveScorerEntry(s, sampling=Sampling.none()) for sid, s in scorers.items()}
    return RedisIntake(entries, client=client, names=stream, stats_interval=0.1, **options)


def _worker(
    scorers: dict[str, sw.Scorer], stream: StreamNames, sinks: list[Any], **options: Any
) -> StreamWorker:
    settings: dict[str, Any] = {
        "visibility_timeout": 0.3,
        "claim_interval": 0.1,
        "max_deliveries": 3,
        "block_ms": 100,
        "stats_interval": 0.1,
        "concurrency": 4,
    }
    settings.update(options)
    return StreamWorker(scorers, client=connect(REDIS_URL), names=stream, sinks=sinks, **settings)


async def _until(predicate: Any, limit_s: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + limit_s
    while not await predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


def _result(run_id: str, output: str, score: float) -> ScoreRecord:
    call = AgentCall(
        input="q", output=output, target="bot", trace_id=None, span_id=None, run_id="r"
    )
    snapshot = sw.ScorerRunResult(run_id=run_id, input="q", output=output, score=score)
    return ScoreRecord(
        id=run_id,
        scorer_id="length",
        scorer_name="length",
        scorer_description="d",
        has_judge=False,
        call=call,
        status="success",
        result=snapshot,
    )


# -- PostgresSink ------------------------------------------------------------------------------


async def test_postgres_migrations_are_versioned_and_run_once(schema: str) -> None:
    first, second = PostgresSink(PG_DSN, schema=schema), PostgresSink(PG_DSN, schema=schema)
    applied = await asyncio.gather(first.migrate(), second.migrate())
    # Two sinks migrating at once: the advisory lock lets exactly one apply each version.
    assert sorted(v for versions in applied for v in versions) == [m[0] for m in MIGRATIONS]
    assert await first.migrate() == []
    with psycopg.connect(PG_DSN) as conn:
        versions = conn.execute(
            f'SELECT version FROM "{schema}".scorewatch_migrations'.encode()
        ).fetchall()
        columns = conn.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = %s AND table_name = 'mastra_scorers'",
            (schema,),
        ).fetchall()
    assert sorted(v[0] for v in versions) == [m[0] for m in MIGRATIONS]
    assert {c[0] for c in columns} == set(SCORE_COLUMNS)


async def test_postgres_upserts_on_the_run_id_and_reads_like_sqlite(schema: str) -> None:
    sink = PostgresSink(PG_DSN, schema=schema)
    try:
        await sink.write([_result("run-1", "first", 0.1), _result("run-2", "x" * 50, 0.5)])
        await sink.write([_result("run-1", "again", 0.9)])  # a redelivery of run-1
        rows = await sink.aquery(limit=10)
        assert sorted(row["id"] for row in rows) == ["run-1", "run-2"]
        by_id = {row["id"]: row for row in rows}
        assert by_id["run-1"]["score"] == 0.9
        assert by_id["run-1"]["output"] == "again"
        assert by_id["run-2"]["scorer"]["id"] == "length"
        assert set(by_id["run-2"]) == set(SCORE_COLUMNS)
        assert by_id["run-2"]["createdAt"].endswith("Z")
        assert [r["id"] for r in await sink.aquery(ids=["run-2"])] == ["run-2"]
        assert await sink.aquery(scorer="other") == []
        assert len(await sink.aquery(target="bot", status="success")) == 2
    finally:
        await sink.aclose()


# -- admission ---------------------------------------------------------------------------------


async def test_accepted_work_is_in_the_stream_before_admit_returns(
    redis: tuple[Redis, StreamNames],
) -> None:
    client, stream = redis
    intake = _intake(client, stream, {"length": _length_scorer()}, max_backlog=100)
    items = [ScoreItem(AgentCall(input="q", output=f"answer {i}", target="bot")) for i in range(5)]
    admissions = await intake.admit(items)
    assert sum(len(a.accepted) for a in admissions) == 5
    entries = await client.xrange(stream.stream)
    assert len(entries) == 5
    run_ids = {fields[b"run_id"].decode() for _id, fields in entries}
    assert run_ids == {a.accepted[0].run_id for a in admissions}
    assert intake.stats()["sampled"] == 5
    await intake.shutdown(1.0)


async def test_backlog_limit_refuses_whole_requests_and_never_trims(
    redis: tuple[Redis, StreamNames],
) -> None:
    client, stream = redis
    intake = _intake(client, stream, {"length": _length_scorer()}, max_backlog=4)
    await intake.admit(
        [ScoreItem(AgentCall(input="q", output=str(i), target="bot")) for i in range(3)]
    )
    with pytest.raises(QueueFullError) as refused:
        await intake.admit(
            [ScoreItem(AgentCall(input="q", output=str(i), target="bot")) for i in range(2)]
        )
    assert (refused.value.needed, refused.value.free) == (2, 1)
    assert await client.xlen(stream.stream) == 3  # nothing of the refused request, nothing lost
    await intake.admit([ScoreItem(AgentCall(input="q", output="fits", target="bot"))])
    assert await client.xlen(stream.stream) == 4
    stats = intake.stats()
    assert stats["dropped_queue_full"] == 2 and stats["rejected_requests"] == 1
    await intake.shutdown(1.0)


def test_without_a_queue_serve_keeps_the_in_process_intake(tmp_path: Any) -> None:
    config = ServeConfig.from_mapping(
        {"scorers": [{"id": "x", "kind": "completeness"}], "sinks": {"sqlite": False}},
        base_dir=tmp_path,
    )
    entries = {"x": LiveScorerEntry(_length_scorer())}
    intake = build_intake(config, entries, Stores([], None, []))
    assert isinstance(intake, InProcessIntake)


# -- workers -----------------------------------------------------------------------------------


async def test_poison_item_is_dead_lettered_after_n_deliveries_without_blocking_others(
    redis: tuple[Redis, StreamNames], schema: str
) -> None:
    client, stream = redis
    scorers = {"picky": _picky_scorer()}
    sink = PostgresSink(PG_DSN, schema=schema)
    with in_memory_telemetry() as otel:
        try:
            intake = _intake(client, stream, scorers, max_backlog=100)
            items = [ScoreItem(AgentCall(input="q", output="poison", target="bot", run_id="bad"))]
            items += [
                ScoreItem(AgentCall(input="q", output=f"fine {i}", target="bot")) for i in range(6)
            ]
            admissions = await intake.admit(items)
            poison_run = admissions[0].accepted[0].run_id
            # A visibility timeout well above any stall of a loaded machine: only the poison item
            # is ever redelivered.
            worker = _worker(scorers, stream, [sink], concurrency=2, visibility_timeout=1.0)
            running = asyncio.create_task(worker.run(drain_timeout=5))

            async def dead_lettered() -> bool:
                return int(await client.xlen(stream.dead_letters)) == 1

            await _until(dead_lettered)
            worker.stop()
            stats = await running
            assert stats["scored"] == 6  # the others went through while the poison was retried
            assert stats["failed_attempts"] == 2 and stats["failed"] == 1
            assert stats["dead_lettered"] == 1
            ((_dead_id, dead),) = await client.xrange(stream.dead_letters)
            assert dead[b"dead.reason"] == b"failed"
            assert dead[b"dead.deliveries"] == b"3"
            assert dead[b"run_id"].decode() == poison_run
            gauges = await read_gauges(client, stream)
            assert (gauges.backlog, gauges.pending, gauges.dead_letters) == (0, 0, 1)
            rows = {row["id"]: row for row in await sink.aquery(limit=100)}
            assert len(rows) == 7
            assert rows[poison_run]["status"] == "failed" and rows[poison_run]["score"] is None
            (dead_point,) = otel.points(names.METRIC_QUEUE_DEAD_LETTERED)
            assert dead_point.value == 1
            assert dead_point.attributes[names.ATTR_QUEUE_REASON] == "failed"
            assert sum(p.value or 0 for p in otel.points(names.METRIC_QUEUE_REDELIVERIES)) == 2
            assert otel.points(names.METRIC_QUEUE_BACKLOG)
        finally:
            await sink.aclose()
            await intake.aclose()


async def test_redelivered_run_is_stored_once_and_unknown_scorers_are_dead_lettered(
    redis: tuple[Redis, StreamNames], schema: str
) -> None:
    client, stream = redis
    sink = PostgresSink(PG_DSN, schema=schema)
    scorers = {"length": _length_scorer()}
    intake = _intake(client, stream, {**scorers, "gone": _picky_scorer()}, max_backlog=100)
    await intake.admit(
        [ScoreItem(AgentCall(input="q", output="once", target="bot"), scorers=("length",))]
    )
    await intake.admit(
        [ScoreItem(AgentCall(input="q", output="x", target="bot"), scorers=("gone",))]
    )
    # A consumer that read the entries and died without acknowledging them.
    await client.xreadgroup(stream.group, "dead-consumer", {stream.stream: ">"}, count=10)
    worker = _worker(scorers, stream, [sink])
    running = asyncio.create_task(worker.run(drain_timeout=5))

    async def drained() -> bool:
        return int(await client.xlen(stream.stream)) == 0

    await _until(drained)
    worker.stop()
    stats = await running
    assert stats["redelivered"] == 2 and stats["scored"] == 1
    ((_dead_id, dead),) = await client.xrange(stream.dead_letters)
    assert dead[b"dead.reason"] == b"unknown_scorer"
    rows = await sink.aquery(limit=10)
    assert [row["output"] for row in rows] == ["once"]
    await sink.aclose()
    await intake.aclose()


async def test_a_worker_stores_the_review_mark_of_its_scorers_sample(
    redis: tuple[Redis, StreamNames], schema: str
) -> None:
    """The worker decides the review sample as serve's own engine does: from the run id, at
    the scorer entry's review rate, stored with the score row in PostgreSQL."""
    client, stream = redis
    sink = PostgresSink(PG_DSN, schema=schema)
    scorers = {"length": _length_scorer()}
    intake = _intake(client, stream, scorers, max_backlog=100)
    items = [
        ScoreItem(AgentCall(input="q", output="x" * n, target="bot"), scorers=("length",))
        for n in range(1, 21)
    ]
    await intake.admit(items)
    worker = _worker(scorers, stream, [sink], review_rates={"length": 0.5})
    running = asyncio.create_task(worker.run(drain_timeout=5))

    async def stored() -> bool:
        return len(await sink.aquery(limit=100)) == len(items)

    await _until(stored)
    worker.stop()
    await running
    rows = await sink.aquery(limit=100)
    marked = {row["id"] for row in rows if row["reviewSampled"]}
    assert marked == {row["id"] for row in rows if in_review_sample(row["id"], 0.5)}
    assert 0 < len(marked) < len(rows)
    await sink.aclose()
    await intake.aclose()


async def test_run_span_links_to_the_request_that_enqueued_it(
    redis: tuple[Redis, StreamNames],
) -> None:
    client, stream = redis
    stored: list[ScoreRecord] = []
    with in_memory_telemetry() as otel:
        provider = otel.tracer_provider
        scorers = {"length": _length_scorer()}
        intake = _intake(client, stream, scorers, max_backlog=100)
        tracer = provider.get_tracer("agent")
        with tracer.start_as_current_span("POST /v1/scores") as request_span:
            await intake.admit([ScoreItem(AgentCall(input="q", output="hello", target="bot"))])
        worker = _worker(scorers, stream, [CallbackSink(stored.append)])
        running = asyncio.create_task(worker.run(drain_timeout=5))

        async def scored() -> bool:
            return len(stored) == 1

        await _until(scored)
        worker.stop()
        await running
    spans = {span.name: span for span in otel.spans()}
    send = spans[names.queue_send_span_name(stream.stream)]
    run = spans[names.run_span_name("length")]
    assert send.parent is not None
    assert send.parent.span_id == request_span.get_span_context().span_id
    linked = {(link.context.trace_id, link.context.span_id) for link in run.links}
    assert (send.context.trace_id, send.context.span_id) in linked
    process = spans[names.queue_process_span_name(stream.stream)]
    assert [link.context.span_id for link in process.links] == [send.context.span_id]
    assert process.parent is None  # a trace of its own: the request's trace is not held open
    assert run.parent is not None and run.parent.span_id == process.context.span_id
    await intake.aclose()


async def test_unreachable_redis_accepts_nothing_and_is_not_ready() -> None:
    stream = StreamNames("swtest-unreachable:work", "g", "swtest-unreachable:work:dead")
    client = connect(redis_url(port=1))  # nothing listens on port 1
    intake = _intake(client, stream, {"length": _length_scorer()}, max_backlog=100)
    with pytest.raises(IntakeUnavailableError):
        await intake.admit([ScoreItem(AgentCall(input="q", output="lost?", target="bot"))])
    stats = intake.stats()
    assert stats["sampled"] == 0 and stats["queue_errors"] == 1
    intake.saturated()  # starts the gauge poller
    await intake._poller.refresh()
    assert intake.saturated()  # /readyz reports the queue as not ready
    await intake.shutdown(1.0)
    await intake.aclose()


async def test_a_sink_outage_keeps_the_entry_and_burns_no_delivery(
    redis: tuple[Redis, StreamNames],
) -> None:
    client, stream = redis
    scorers = {"length": _length_scorer()}
    intake = _intake(client, stream, scorers, max_backlog=100)
    await intake.admit([ScoreItem(AgentCall(input="q", output="kept", target="bot"))])
    attempts: list[str] = []

    def flaky(result: ScoreRecord) -> None:
        attempts.append(result.id)
        if len(attempts) <= 2:
            raise ConnectionError("the database is restarting")

    # Visibility 1 s and the retries back off 0.5 s then 1 s: without the heartbeat keeping the
    # entry claimed, it would be redelivered meanwhile.
    worker = _worker(scorers, stream, [CallbackSink(flaky)], visibility_timeout=1.0)
    running = asyncio.create_task(worker.run(drain_timeout=5))

    async def drained() -> bool:
        return int(await client.xlen(stream.stream)) == 0

    await _until(drained)
    worker.stop()
    stats = await running
    assert len(attempts) == 3 and len(set(attempts)) == 1
    assert stats["sink_errors"] == 2 and stats["scored"] == 1
    assert stats["redelivered"] == 0 and stats["dead_lettered"] == 0
    await intake.aclose()


async def test_waiting_for_results_reads_them_back_from_postgres(
    redis: tuple[Redis, StreamNames], schema: str
) -> None:
    client, stream = redis
    sink = PostgresSink(PG_DSN, schema=schema)
    scorers = {"length": _length_scorer()}
    intake = _intake(client, stream, scorers, max_backlog=100, lookup=sink, wait_limit=20)
    worker = _worker(scorers, stream, [sink])
    running = asyncio.create_task(worker.run(drain_timeout=5))
    try:
        (admission,) = await intake.admit(
            [ScoreItem(AgentCall(input="q", output="x" * 40, target="bot"))], want_results=True
        )
        assert admission.results is not None
        (future,) = admission.results.values()
        result = await asyncio.wait_for(future, 20)
        assert result.status == "success" and result.score == 0.4
        assert result.id == admission.accepted[0].run_id
    finally:
        worker.stop()
        await running
        await intake.aclose()
        await sink.aclose()


async def test_unreadable_entries_and_entries_that_kill_workers_are_dead_lettered(
    redis: tuple[Redis, StreamNames],
) -> None:
    client, stream = redis
    ran: list[str] = []

    def counting(ctx: Any) -> float:
        ran.append(str(ctx.run.output))
        return 1.0

    scorers = {"length": sw.create_scorer(id="length", description="d").generate_score(counting)}
    intake = _intake(client, stream, scorers, max_backlog=100)
    await intake.admit([ScoreItem(AgentCall(input="q", output="crashes workers", target="bot"))])
    await client.xadd(stream.stream, {"v": "1", "scorer": "length", "call": "{not json"})
    # The first entry was taken by workers that died while scoring it, three times already.
    await client.xreadgroup(stream.group, "crashed-1", {stream.stream: ">"}, count=1)
    ((first_id, _fields),) = await client.xrange(stream.stream, count=1)
    for name in ("crashed-2", "crashed-3"):
        await client.xclaim(stream.stream, stream.group, name, 0, [first_id])
    worker = _worker(scorers, stream, [CallbackSink(lambda result: None)])
    running = asyncio.create_task(worker.run(drain_timeout=5))

    async def both_dead() -> bool:
        return int(await client.xlen(stream.dead_letters)) == 2

    await _until(both_dead)
    worker.stop()
    stats = await running
    reasons = sorted(f[b"dead.reason"] for _id, f in await client.xrange(stream.dead_letters))
    assert reasons == [b"malformed", b"max_deliveries"]
    assert ran == []  # the entry that kept killing workers was not run a fourth time
    assert stats["dead_lettered"] == 2 and await client.xlen(stream.stream) == 0
    await intake.aclose()


async def test_a_worker_never_runs_an_entry_it_is_still_running_again(
    redis: tuple[Redis, StreamNames],
) -> None:
    # A loop running late misses its heartbeats: the entry it is scoring looks idle past the
    # visibility timeout, its own look for idle entries claims it, and it must not be started
    # a second time beside the run still going.
    client, stream = redis
    started: list[str] = []
    release = asyncio.Event()

    async def slow(ctx: Any) -> float:
        started.append(str(ctx.run.output))
        await release.wait()
        return 1.0

    scorers = {"length": sw.create_scorer(id="length", description="d").generate_score(slow)}
    intake = _intake(client, stream, scorers, max_backlog=100)
    await intake.admit([ScoreItem(AgentCall(input="q", output="slow", target="bot"))])
    stored: list[Any] = []
    # A heartbeat every 10 s: none falls in this test, as none does on a stalled loop.
    worker = _worker(scorers, stream, [CallbackSink(stored.append)], visibility_timeout=30.0)
    running = asyncio.create_task(worker.run(drain_timeout=5))

    async def one_started() -> bool:
        return len(started) == 1

    await _until(one_started)
    ((entry_id, _fields),) = await client.xrange(stream.stream)
    await client.xclaim(
        stream.stream, stream.group, worker.consumer, 0, [entry_id], idle=60_000, justid=True
    )

    async def claimed_again() -> bool:  # by the worker's own look for idle entries
        (pending,) = await client.xpending_range(
            stream.stream, stream.group, min=entry_id, max=entry_id, count=1
        )
        return int(pending["times_delivered"]) >= 2

    await _until(claimed_again)
    await asyncio.sleep(0.2)  # a second run, were one started, reaches the scorer meanwhile
    assert started == ["slow"]
    release.set()

    async def stored_once() -> bool:
        return len(stored) == 1

    await _until(stored_once)
    worker.stop()
    stats = await running
    assert started == ["slow"] and len(stored) == 1
    assert stats["redelivered"] == 0 and stats["dead_lettered"] == 0
    assert stats["acknowledged"] == 1 and await client.xlen(stream.stream) == 0
    await intake.aclose()


async def test_only_silent_consumers_holding_nothing_are_forgotten(
    redis: tuple[Redis, StreamNames],
) -> None:
    client, stream = redis
    intake = _intake(client, stream, {"length": _length_scorer()}, max_backlog=100)
    await intake.admit([ScoreItem(AgentCall(input="q", output="held", target="bot"))])
    await client.xreadgroup(stream.group, "holds-one", {stream.stream: ">"}, count=1)
    await client.xgroup_createconsumer(stream.stream, stream.group, "holds-none")
    await asyncio.sleep(0.05)
    worker = _worker({"length": _length_scorer()}, stream, [])
    assert await worker._forget_dead_consumers(quiet_ms=10) == 1
    left = {_text(c["name"]) for c in await client.xinfo_consumers(stream.stream, stream.group)}
    assert left == {"holds-one"}  # its pending entry stays claimable
    await intake.aclose()


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def test_sync_query_never_ties_the_pool_to_a_short_lived_loop(schema: str) -> None:
    sink = PostgresSink(PG_DSN, schema=schema)
    assert sink.query() == []  # migrates on a connection of its own
    assert sink._pool is None and sink._pool_loop is None

    async def write_then_read() -> list[dict[str, Any]]:
        await sink.write([_result("run-sync", "x", 0.5)])
        rows = await sink.aquery()
        assert sink._pool is not None  # the pool belongs to the loop that uses it
        await sink.aclose()
        return rows

    assert [row["id"] for row in asyncio.run(write_then_read())] == ["run-sync"]
    assert [row["id"] for row in sink.query(ids=["run-sync"])] == ["run-sync"]


async def test_an_application_role_without_create_on_the_database_can_migrate(
    schema: str,
) -> None:
    role = f"{schema}_app"
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"'.encode())
        conn.execute(f'CREATE ROLE "{role}" LOGIN'.encode())
        conn.execute(f'GRANT USAGE, CREATE ON SCHEMA "{schema}" TO "{role}"'.encode())
    try:
        sink = PostgresSink(pg_dsn(user=role), schema=schema)
        assert await sink.migrate() == [m[0] for m in MIGRATIONS]
        await sink.write([_result("run-app", "x", 1.0)])
        assert [row["id"] for row in await sink.aquery()] == ["run-app"]
        await sink.aclose()
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE'.encode())
            conn.execute(f'DROP ROLE "{role}"'.encode())

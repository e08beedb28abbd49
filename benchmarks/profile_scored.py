"""serve's scored path in one process: CPU per scored item, and where the scoring thread spends it.

    .venv/bin/python benchmarks/profile_scored.py [--items 3000] [--rate 500] [--profile]
    .venv/bin/python benchmarks/profile_scored.py --encode-only [--encode-sink jsonl]

What `scorewatch serve` runs for the `scored` case of `bench_floor.py`, without HTTP: telemetry
configured as serve configures it (Prometheus registry, no push exporter), one content-similarity
scorer sampling every call, the SQLite sink with serve's linger, the in-process intake with its
scoring loop. Items are admitted from a loop of their own at `--rate` per second (as the open-loop
generator offers them) and the process's CPU is counted until every run is stored. `--profile`
adds a cProfile of the scoring thread (self time grouped as in `profile_telemetry.py`).
`--serve-gc` sets the collector as serve does once started (`settle_collector`: start-up's
objects frozen, young collections less often) after the warm-up.
`--encode-only` measures instead what the SQLite writer spends encoding one such run's record
as its row (CPU per row, best of five batches, on one thread with nothing else running);
`--encode-sink jsonl`, the JSONL sink's line instead.

`--rows-callgrind N` stores N such runs' records (new ids and times, as serve makes them) inside
one `functools.reduce` call, for `valgrind --tool=callgrind --toggle-collect=functools_reduce`:
instructions / N is a stored row's cost. `--stage` says how far: `record` (the record made,
`ScoreRecord.success`), `encode` (and its row encoded), `store` (and written as serve writes
it: `Storage.store_then` on a running loop, the SQLite sink storing on that loop after its
linger, `--batch` runs a transaction, each acknowledged); `--policy` makes every record with a
redactor (`redact = ["all"]`; the text holds nothing to replace).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import cProfile
import inspect
import os
import pstats
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import _common  # noqa: F401  (sets the environment before scorewatch is imported)
from profile_telemetry import GROUPS, group_of


def _thread_cpu() -> dict[str, tuple[float, int]]:
    """CPU seconds and context switches (voluntary and not) of each live thread of this
    process, by thread name (Linux)."""
    tick = os.sysconf("SC_CLK_TCK")
    named = {thread.native_id: thread.name for thread in threading.enumerate()}
    seen: dict[str, tuple[float, int]] = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            status = (task / "status").read_text().splitlines()
        except OSError:
            continue
        switches = sum(int(line.split()[1]) for line in status if "ctxt_switches" in line)
        name = named.get(int(task.name), "other")
        cpu, count = seen.get(name, (0.0, 0))
        seen[name] = (cpu + (int(fields[11]) + int(fields[12])) / tick, count + switches)
    return seen


# serve's parts told apart: the scorer, the sinks and the live engine besides the core.
_GROUPS = (
    *GROUPS[:-2],
    ("scorewatch/scorers", "scorewatch scorer"),
    ("scorewatch/sinks", "scorewatch sinks"),
    ("scorewatch/live", "scorewatch live engine"),
    ("scorewatch/core", "scorewatch core"),
    ("scorewatch", "scorewatch other"),
    ("asyncio", "asyncio"),
)


async def _scored(intake: Any, count: int) -> None:
    # The intake signals nothing when a run is stored: its counts are polled.
    while intake.stats().get("scored", 0) < count:  # noqa: ASYNC110
        await asyncio.sleep(0.002)


async def _run(
    items: int,
    rate: float,
    profile: bool,
    cumulative: int,
    thread: str,
    directory: Path,
    with_telemetry: bool = True,
    linger: float | None = None,
    writer_thread: bool = False,
    trace_bodies: Path | None = None,
    serve_gc: bool = False,
) -> None:
    from scorewatch import telemetry
    from scorewatch.core.call import AgentCall
    from scorewatch.live.entry import LiveScorerEntry, Sampling
    from scorewatch.scorers.registry import build_scorer
    from scorewatch.server.intake.in_process import InProcessIntake
    from scorewatch.server.intake.interface import ScoreItem
    from scorewatch.server.intake.scoring_loop import ScoringLoop
    from scorewatch.sinks.sqlite import SERVICE_LINGER_S, SqliteSink

    profiler = cProfile.Profile(time.thread_time) if profile else None
    if profiler is not None and thread == "sqlite":
        # The writer thread starts with the sink: its whole life is profiled (warm-up included).
        from scorewatch.sinks.batch_thread import BatchWriterThread

        serve = BatchWriterThread._serve

        def profiled(writer: Any) -> None:
            profiler.runcall(serve, writer)

        BatchWriterThread._serve = profiled  # type: ignore[method-assign]
    handle = (
        telemetry.configure(prometheus="127.0.0.1:0", prometheus_server=False)
        if with_telemetry
        else None
    )
    if trace_bodies is None:
        scorer = build_scorer("content-similarity")
    else:  # bench_floor.py's traces-scored scorer
        scorer = build_scorer("tool-call-accuracy-code", expected_tool="lookup_order")
    entries = {"similarity": LiveScorerEntry(scorer, sampling=Sampling.ratio(1.0))}
    # Transactions counted (how many rows share one: the linger's batching under this load).
    transactions = collections.Counter[str]()
    store = SqliteSink._store

    def counted(self: Any, rows: list[Any]) -> None:
        transactions["transactions"] += 1
        transactions["rows"] += len(rows)
        store(self, rows)

    SqliteSink._store = counted  # type: ignore[method-assign]
    sink = SqliteSink(
        str(directory / "scores.db"),
        linger=SERVICE_LINGER_S if linger is None else linger,
        on_caller_loop=not writer_thread,  # as serve: the scoring loop stores its runs
    )
    scoring = ScoringLoop()
    intake = InProcessIntake(
        entries, sinks=[sink], max_concurrency=64, max_queue=100_000, scoring=scoring
    )

    async def on_scoring_loop(start: bool) -> None:
        if profiler is not None and thread == "scoring":
            profiler.enable() if start else profiler.disable()

    def call(index: int) -> ScoreItem:
        return ScoreItem(
            AgentCall(
                input="What is our refund policy for items bought in a sale?",
                output=f"Sale items can be refunded within 30 days with the receipt. {index}",
                target="support-bot",
            ),
            size=200,
        )

    if trace_bodies is not None:
        traced = _trace_items(trace_bodies, items + 200)

        def call(index: int) -> ScoreItem:  # the traces' runs instead
            return traced[index % len(traced)]

    # Warm-up: the first runs build profiles, statements and caches.
    for index in range(200):
        await intake.admit([call(index)])
    await _scored(intake, 200)
    if serve_gc:
        _settle_collector()
    await scoring.run(on_scoring_loop(True))
    transactions.clear()
    threads_before = _thread_cpu()
    started_cpu, started = time.process_time(), time.monotonic()
    for index in range(items):
        await intake.admit([call(index)])
        delay = started + (index + 1) / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
    await _scored(intake, items + 200)
    cpu = time.process_time() - started_cpu
    threads_after = _thread_cpu()
    await scoring.run(on_scoring_loop(False))
    print(f"- process CPU per scored item: **{cpu / items * 1e6:.0f} µs** ({items} items)")
    print(
        f"- SQLite transactions: {transactions['transactions']}, "
        f"{transactions['rows'] / max(transactions['transactions'], 1):.1f} rows each"
    )
    for name in sorted(threads_after, key=lambda n: -threads_after[n][0]):
        cpu_before, switches_before = threads_before.get(name, (0.0, 0))
        spent = threads_after[name][0] - cpu_before
        switches = threads_after[name][1] - switches_before
        if spent > 0 or switches > 0:
            print(
                f"  - thread {name}: {spent / items * 1e6:.0f} µs per item, "
                f"{switches / items:.2f} context switches per item"
            )
    await intake.shutdown(10)
    await intake.aclose()
    if handle is not None:
        handle.shutdown()
    if profiler is not None:
        stats = pstats.Stats(profiler)
        groups: collections.Counter[str] = collections.Counter()
        rows = []
        for (path, line, function), (_, calls, own, _c, _) in stats.stats.items():  # type: ignore[attr-defined]
            groups[group_of(path, function, _GROUPS)] += own
            rows.append((own, calls, f"{path.rsplit('site-packages/', 1)[-1]}:{line}({function})"))
        total = sum(groups.values()) or 1.0
        per_item = total / items * 1e6
        print(f"\nscoring thread, profiled: {per_item:.0f} µs per item (with cProfile)\n")
        print("| self time share | group |\n|---:|---|")
        for name, own in groups.most_common(14):
            print(f"| {own / total:5.1%} | {name} |")
        print("\n| self time share | calls/item | function |\n|---:|---:|---|")
        for own, calls, name in sorted(rows, reverse=True)[:20]:
            print(f"| {own / total:5.1%} | {calls / items:.1f} | `{name}` |")
        if cumulative:
            print("\n| cumulative share | calls/item | function |\n|---:|---:|---|")
            rows = [
                (cum, calls, f"{path.rsplit('site-packages/', 1)[-1]}:{line}({function})")
                for (path, line, function), (_, calls, _o, cum, _) in stats.stats.items()  # type: ignore[attr-defined]
            ]
            for cum, calls, name in sorted(rows, reverse=True)[:cumulative]:
                print(f"| {cum / total:5.1%} | {calls / items:.1f} | `{name}` |")


def _settle_collector() -> None:
    """The collector as serve sets it once started (`settle_collector`); a tree from before
    that function only froze what start-up made."""
    import gc

    try:
        from scorewatch.server.http.serve_process import settle_collector
    except ImportError:
        gc.freeze()
        return
    settle_collector()


def _trace_items(bodies_file: Path, count: int) -> list[Any]:
    """The queue items of serve's trace intake for `profile_traces.py`'s batches (`--bodies`),
    `count` of them (runs of later batches have other trace ids), built before the measurement."""
    import pickle

    from scorewatch.server.intake.otlp_traces import _item
    from scorewatch.traces.assembly import BufferLimits, TraceBuffer
    from scorewatch.traces.collect import Extraction, extract_ready
    from scorewatch.traces.otlp import parse_protobuf
    from scorewatch.traces.spans import split_request

    found: list[Any] = []
    buffer = TraceBuffer(None, BufferLimits(max_traces=100_000, max_bytes=10**10))
    for body in pickle.loads(bodies_file.read_bytes()):  # our own file (profile_traces.py)
        split = split_request(parse_protobuf(body), lambda trace_id: True)
        buffer.offer(split.spans, "bench", split.unsampled)
        extraction = Extraction()
        extract_ready(buffer.pop_ready(flush=True), extraction, None)
        found.extend(_item(run, None) for run in extraction.runs)
        if len(found) >= count:
            break
    return found


def _encode_only(rows: int, kind: str = "sqlite") -> None:
    from scorewatch.core.call import AgentCall
    from scorewatch.live.engine import score_call
    from scorewatch.scorers.registry import build_scorer
    from scorewatch.sinks.jsonl import JsonlSink
    from scorewatch.sinks.sqlite import SqliteSink

    call = AgentCall(
        input="What is our refund policy for items bought in a sale?",
        output="Sale items can be refunded within 30 days with the receipt. 7",
        target="support-bot",
    )
    record = asyncio.run(score_call(build_scorer("content-similarity"), call, "scoring-a-b-c"))
    with tempfile.TemporaryDirectory() as directory:
        sink = (
            SqliteSink(Path(directory) / "scores.db")
            if kind == "sqlite"
            else JsonlSink(Path(directory) / "scores.jsonl")
        )
        sink.close()
        encode = sink._encode
        for _ in range(500):  # warm-up
            encode(record)
        batches = []
        for _ in range(5):
            started = time.thread_time()
            for _ in range(rows):
                encode(record)
            batches.append((time.thread_time() - started) / rows * 1e6)
    name = "SQLite row" if kind == "sqlite" else "JSONL line"
    print(f"- {name} encoding: **{min(batches):.1f} µs** per row (best of 5 x {rows})")


def _rows_callgrind(rows: int, stage: str, batch: int, policy: bool) -> None:
    from functools import reduce

    from scorewatch.core.call import AgentCall
    from scorewatch.live.engine import score_call
    from scorewatch.privacy import PrivacyPolicy
    from scorewatch.scorers.registry import build_scorer
    from scorewatch.sinks.delivery import Storage
    from scorewatch.sinks.record import ScoreRecord
    from scorewatch.sinks.sqlite import SERVICE_LINGER_S, SqliteSink

    call = AgentCall(
        input="What is our refund policy for items bought in a sale?",
        output="Sale items can be refunded within 30 days with the receipt. 7",
        target="support-bot",
    )
    scorer = build_scorer("content-similarity")
    result = asyncio.run(score_call(scorer, call, "scoring-a-b-c")).result
    start = PrivacyPolicy(redact=["all"]).start if policy else None
    made = 0

    def record() -> Any:
        nonlocal made
        made += 1
        redaction = None if start is None else start()
        return ScoreRecord.success(f"scoring-{made}", scorer, call, result, redaction=redaction)

    with tempfile.TemporaryDirectory() as directory:
        sink = SqliteSink(
            Path(directory) / "scores.db", linger=SERVICE_LINGER_S, on_caller_loop=True
        )
        storage = Storage([sink])
        loop = asyncio.new_event_loop()

        # A tree before batched acknowledgements: `then(delivery)` per result, no token.
        batched = "token" in inspect.signature(storage.store_then).parameters

        async def stored(count: int) -> None:
            for first in range(0, count, batch):
                size = min(batch, count - first)
                done = loop.create_future()
                left = [size]

                def then(stored: Any, done: Any = done, left: list[int] = left) -> None:
                    left[0] -= len(stored) if batched else 1
                    if not left[0]:
                        done.set_result(None)

                for _ in range(size):
                    if batched:
                        storage.store_then(record(), then, None)
                    else:
                        storage.store_then(record(), then)
                await done

        def run(count: int) -> None:
            if stage == "record":
                for _ in range(count):
                    record()
            elif stage == "encode":
                encode = sink._encode
                for _ in range(count):
                    encode(record())
            else:
                loop.run_until_complete(stored(count))

        run(max(batch * 20, 200))  # warm-up: statements, caches
        reduce(lambda _, count: run(count), [rows], None)
        loop.close()
        sink.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=3000)
    parser.add_argument("--rate", type=float, default=500.0)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--no-telemetry", action="store_true", help="serve without telemetry")
    parser.add_argument("--linger", type=float, help="the SQLite writer's linger (serve's)")
    parser.add_argument(
        "--writer-thread",
        action="store_true",
        help="store the runs on the SQLite writer's thread (before serve stored them on its loop)",
    )
    parser.add_argument(
        "--thread", choices=("scoring", "sqlite"), default="scoring", help="the thread profiled"
    )
    parser.add_argument(
        "--switch-interval",
        type=float,
        help="sys.setswitchinterval for the run (serve sets 0.001; the interpreter's 0.005)",
    )
    parser.add_argument(
        "--trace-bodies",
        type=Path,
        help="score serve's trace runs of these batches (profile_traces.py --bodies) instead, "
        "with bench_floor.py's traces-scored scorer",
    )
    parser.add_argument(
        "--serve-gc",
        action="store_true",
        help="after the warm-up, set the collector as serve does once started (freeze, threshold)",
    )
    parser.add_argument("--cumulative", type=int, default=0, help="also the top N by cumulative")
    parser.add_argument(
        "--encode-only", action="store_true", help="only the SQLite writer's row encoding"
    )
    parser.add_argument(
        "--encode-sink", choices=("sqlite", "jsonl"), default="sqlite", help="whose encoding"
    )
    parser.add_argument(
        "--rows-callgrind", type=int, help="store this many rows inside functools.reduce"
    )
    parser.add_argument("--stage", choices=("record", "encode", "store"), default="store")
    parser.add_argument("--batch", type=int, default=10, help="rows a transaction (`store`)")
    parser.add_argument("--policy", action="store_true", help="records with a redactor")
    args = parser.parse_args()
    if args.rows_callgrind:
        _rows_callgrind(args.rows_callgrind, args.stage, args.batch, args.policy)
        return
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval)
    if args.encode_only:
        _encode_only(max(args.items, 1000) * 10, args.encode_sink)
        return
    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(
            _run(
                args.items,
                args.rate,
                args.profile,
                args.cumulative,
                args.thread,
                Path(directory),
                not args.no_telemetry,
                args.linger,
                args.writer_thread,
                args.trace_bodies,
                args.serve_gc,
            )
        )


if __name__ == "__main__":
    main()

"""What grows in serve over the batches it takes: `traces-scored` over time, block by block.

    PYTHONPATH=src .venv/bin/python benchmarks/traces_growth.py [--duration 64] [--block 4]
        [--rate 4] [--baseline OLD/src] [-o result.json]

Runs a real `scorewatch serve` with `bench_floor.py`'s `traces-scored` configuration (OTLP
batches of 512 spans, a scorer on every agent span, SQLite sink) under the same open-loop load,
with a probe in serve's process (`--probe`: this file run as the server's entry point) that
writes, every `--block` seconds: the process's CPU, the cyclic collector's collections and the
time they took per generation (`gc.callbacks`), its longest pause, `gc.get_count()`, the
objects it tracks (`len(gc.get_objects())`, the probe's own CPU not counted), and the
frozen ones. Besides, from outside: the trace buffer's traces and spans held (`/v1/stats`) and
the SQLite file's and WAL's sizes. One table row per block, so what grows with the batches a
process has taken shows as a trend down the rows. `--baseline DIR` runs serve from another
source tree afterwards, the same way. `--heap BATCHES`: no serve, the trace buffer alone in
this process after that many batches, and what a full collection costs with it.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent


def _probe(log: Path, block: float) -> None:
    """In serve's process: a collector timer and a thread writing one JSON line per block."""
    started = [0.0, 0.0]
    spent = [0.0, 0.0, 0.0]
    counts = [0, 0, 0]
    longest = [0.0, 0.0]  # the longest collection of the block: CPU, wall

    def on_gc(phase: str, info: dict[str, int]) -> None:
        # A collection runs on the thread that set it off, holding the GIL: its thread CPU is
        # what it costs, its wall time what every thread waits (the machine's load included).
        if phase == "start":
            started[:] = time.thread_time(), time.perf_counter()
            return
        cpu, wall = time.thread_time() - started[0], time.perf_counter() - started[1]
        generation = info["generation"]
        spent[generation] += cpu
        counts[generation] += 1
        longest[0], longest[1] = max(longest[0], cpu), max(longest[1], wall)

    gc.callbacks.append(on_gc)

    def sample() -> None:
        probe_cpu = 0.0
        with log.open("a") as out:
            while True:
                time.sleep(block)
                own = time.thread_time()
                tracked = len(gc.get_objects())
                probe_cpu += time.thread_time() - own
                line = {
                    "t": time.monotonic(),
                    "cpu_s": time.process_time() - probe_cpu,
                    "gc_s": list(spent),
                    "gc_n": list(counts),
                    "gc_longest_ms": longest[0] * 1e3,
                    "gc_longest_wall_ms": longest[1] * 1e3,
                    "gc_count": gc.get_count(),
                    "tracked": tracked,
                    "frozen": gc.get_freeze_count(),
                }
                longest[:] = 0.0, 0.0
                out.write(json.dumps(line) + "\n")
                out.flush()

    threading.Thread(target=sample, name="growth-probe", daemon=True).start()


def _run(source: str | None, args: argparse.Namespace, bodies: list[bytes]) -> dict[str, Any]:
    import httpx
    from bench_floor import CASES, CONFIG, TRACES_TABLE, _stop, _wait_url
    from openloop import run_open_loop

    case = CASES["traces-scored"]
    with tempfile.TemporaryDirectory(prefix="traces-growth-") as folder:
        directory = Path(folder)
        (directory / "scorewatch.toml").write_text(
            CONFIG.format(
                http=case["http"],
                sampling=case["sampling"],
                kind=case["kind"],
                options=case["options"],
                extra=TRACES_TABLE + args.extra_traces,
            )
        )
        log = directory / "probe.jsonl"
        env = dict(os.environ)
        if source is not None:
            env["PYTHONPATH"] = source
        # serve runs in a temporary directory: a relative `PYTHONPATH=src` would fall through
        # to the installed package (another tree).
        env["PYTHONPATH"] = os.pathsep.join(
            str(Path(entry).resolve())
            for entry in env.get("PYTHONPATH", "").split(os.pathsep)
            if entry
        )
        env["TRACES_GROWTH_PROBE"] = f"{log}:{args.block}"
        command = [
            sys.executable, str(Path(__file__).resolve()), "--probe",
            "serve", "--config", "scorewatch.toml", "--listen", "127.0.0.1:0", "--workers", "1",
        ]  # fmt: skip
        import subprocess

        stderr = directory / "serve.stderr"
        with stderr.open("wb") as sink:
            process = subprocess.Popen(
                command, cwd=directory, stdout=subprocess.DEVNULL, stderr=sink, env=env
            )
        try:
            url = _wait_url(stderr, process, "scorewatch serve: listening on")
            time.sleep(1.0)
            held: list[dict[str, Any]] = []
            stop = threading.Event()

            def watch() -> None:
                with httpx.Client(timeout=30) as client:
                    while not stop.wait(args.block):
                        stats = client.get(f"{url}/v1/stats").json()
                        wal = directory / "scores.db-wal"
                        held.append(
                            {
                                "t": time.monotonic(),
                                "traces_held": stats.get("traces_held"),
                                "spans_held": stats.get("traces_spans_held"),
                                "queued": stats.get("queued"),
                                "db_kb": (directory / "scores.db").stat().st_size // 1024,
                                "wal_kb": wal.stat().st_size // 1024 if wal.exists() else 0,
                            }
                        )

            watcher = threading.Thread(target=watch, daemon=True)
            watcher.start()
            load = run_open_loop(
                f"{url}/v1/traces",
                bodies,
                rate=args.rate,
                duration=args.duration,
                pid=process.pid,
                content_type="application/x-protobuf",
            )
            time.sleep(args.block + 1)
            stop.set()
            watcher.join()
        finally:
            _stop(process)
        probe = [json.loads(line) for line in log.read_text().splitlines()]
    return {"load": load, "probe": probe, "held": held}


def _table(result: dict[str, Any], rate: float) -> str:
    rows = [
        "| block end (s) | CPU ms/batch | gc CPU ms/batch (g0/g1/g2) | g2 runs "
        "| longest gc CPU / wall ms | tracked objects | traces held | spans held "
        "| db KB | WAL KB |",
        "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    probe, held = result["probe"], result["held"]
    first = probe[0]["t"]
    for before, after in itertools.pairwise(probe):
        seconds = after["t"] - before["t"]
        batches = rate * seconds
        cpu = (after["cpu_s"] - before["cpu_s"]) / batches * 1e3
        gcs = [(a - b) / batches * 1e3 for a, b in zip(after["gc_s"], before["gc_s"], strict=True)]
        full = after["gc_n"][2] - before["gc_n"][2]
        near = min(held, key=lambda h: abs(h["t"] - after["t"])) if held else {}
        rows.append(
            f"| {after['t'] - first:.0f} | {cpu:.1f} | "
            + "/".join(f"{g:.2f}" for g in gcs)
            + f" | {full} | {after['gc_longest_ms']:.1f} / {after['gc_longest_wall_ms']:.0f} "
            f"| {after['tracked']:,} | "
            f"{near.get('traces_held')} | {near.get('spans_held')} | {near.get('db_kb')} | "
            f"{near.get('wal_kb')} |"
        )
    load = result["load"]
    latency = load["latency_ms"]
    rows.append(
        f"\nload: {load['statuses']}, CPU {load['server_cpu_us_per_2xx'] / 1e3:.1f} ms per 2xx; "
        f"p50 {latency['p50']} p90 "
        f"{latency['p90']} p99 {latency['p99']} max {latency['max']} ms"
    )
    return "\n".join(rows)


def _heap(batches: int) -> None:
    """In this process: the trace buffer after `batches` batches (extracted, every trace complete
    and lingering, as in serve at 2 new batches a second), the objects the collector tracks
    besides what start-up made (frozen), and what a full collection costs then and empty."""
    import collections

    from bench_floor import _traces_bodies

    from scorewatch.traces.assembly import BufferLimits, TraceBuffer
    from scorewatch.traces.collect import Extraction, extract_ready
    from scorewatch.traces.otlp import parse_protobuf
    from scorewatch.traces.spans import split_request

    bodies, _ = _traces_bodies()
    now = [0.0]
    buffer = TraceBuffer(None, BufferLimits(), clock=lambda: now[0])
    gc.collect()
    gc.freeze()

    def full_collection_ms() -> float:
        best = float("inf")
        for _ in range(3):
            started = time.thread_time()
            gc.collect()
            best = min(best, time.thread_time() - started)
        return best * 1e3

    for index in range(batches):
        split = split_request(parse_protobuf(bodies[index % len(bodies)]), lambda _: True)
        buffer.offer(split.spans, f"client-{index // len(bodies)}", split.unsampled)
        now[0] += 0.5
        extract_ready(buffer.pop_ready(), Extraction(), None)
    tracked = collections.Counter(type(o).__name__ for o in gc.get_objects())
    print(f"held: {len(buffer)} traces, {buffer.spans_held} spans")
    print(f"tracked (not frozen): {sum(tracked.values()):,}: {tracked.most_common(6)}")
    print(f"full collection: {full_collection_ms():.1f} ms CPU (best of 3)")
    # What a full collection leaves tracked: it untracks tuples and dicts holding only
    # untracked values (a young collection, tuples only), so the steady count is this one.
    after = collections.Counter(type(o).__name__ for o in gc.get_objects())
    print(f"tracked after it: {sum(after.values()):,}: {after.most_common(6)}")
    buffer.pop_ready(flush=True)
    now[0] += 3600
    buffer.pop_ready()
    print(f"the buffer empty: {full_collection_ms():.1f} ms CPU")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--probe":
        log, block = os.environ["TRACES_GROWTH_PROBE"].rsplit(":", 1)
        _probe(Path(log), float(block))
        from scorewatch.cli import main as scorewatch

        sys.argv = ["scorewatch", *sys.argv[2:]]
        sys.exit(scorewatch())

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=64.0)
    parser.add_argument("--rate", type=float, default=4.0, help="batches per second")
    parser.add_argument("--block", type=float, default=4.0, help="seconds per row")
    parser.add_argument("--baseline", help="also serve from this source tree (its src)")
    parser.add_argument(
        "--extra-traces", default="", help="more lines of [traces.buffer], e.g. 'linger_s = 1'"
    )
    parser.add_argument("-o", "--output")
    parser.add_argument(
        "--heap", type=int, metavar="BATCHES", help="only the in-process heap after BATCHES"
    )
    args = parser.parse_args()

    sys.path.insert(0, str(BENCH))
    import _common  # noqa: F401  (the environment, before serve starts)
    from bench_floor import _traces_bodies

    if args.heap:
        _heap(args.heap)
        return

    bodies, _ = _traces_bodies()
    results = {"serve": _run(None, args, bodies)}
    if args.baseline:
        results["baseline"] = _run(args.baseline, args, bodies)
    for name, result in results.items():
        print(f"\n### {name}\n\n{_table(result, args.rate)}")
    if args.output:
        Path(args.output).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()

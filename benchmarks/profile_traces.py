"""The trace side of a sampled run in one thread: CPU per run, by phase.

    PYTHONPATH=src .venv/bin/python benchmarks/profile_traces.py [--repeats 3] [--no-gc]

What serve's trace thread does with `bench_floor.py`'s `traces-scored` payload (64 batches of
103 runs of 5 spans), without HTTP nor scoring: `file` parses a batch, converts its spans
(every trace sampled) and offers them to the trace buffer; `pop` hands out the runs (flushed);
`extract` reads them (`extract_ready`); `item` builds each run's queue item. Thread CPU time
(`time.thread_time`), so other processes on the machine move it less than wall time. `--no-gc`
turns the cyclic garbage collector off, to tell what the phases allocate from what they do.
Run it alternately against a `git archive` of the code before (PYTHONPATH=/tmp/before/src).

Under callgrind (instructions per run, which the machine's load does not move), build the
batches once outside it (`--bodies FILE` writes them when FILE does not exist; building them
runs the OpenTelemetry SDK, minutes under valgrind) and take the difference of two pass counts:

    python benchmarks/profile_traces.py --batches 8 --bodies /tmp/bodies.pickle --repeats 0
    PYTHONHASHSEED=0 valgrind --tool=callgrind python benchmarks/profile_traces.py \
        --batches 8 --bodies /tmp/bodies.pickle --repeats N     # N = 1 and 3; 824 runs a pass
"""

from __future__ import annotations

import argparse
import gc
import pickle
import time
from pathlib import Path

import _common  # noqa: F401  (sets the environment before scorewatch is imported)
from bench_floor import _traces_bodies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="passes over the 64 batches")
    parser.add_argument("--no-gc", action="store_true")
    parser.add_argument("--batches", type=int, default=64, help="how many batches (≤ 64)")
    parser.add_argument("--bodies", type=Path, help="read the batches here; write them first")
    args = parser.parse_args()

    from scorewatch.server.intake.otlp_traces import _item
    from scorewatch.traces.assembly import BufferLimits, TraceBuffer
    from scorewatch.traces.collect import Extraction, extract_ready
    from scorewatch.traces.otlp import parse_protobuf
    from scorewatch.traces.spans import split_request

    if args.bodies is not None and args.bodies.exists():
        bodies = pickle.loads(args.bodies.read_bytes())  # our own file, written below
    else:
        bodies, _ = _traces_bodies()
        if args.bodies is not None:
            args.bodies.write_bytes(pickle.dumps(bodies))
    bodies = bodies[: args.batches]
    if args.no_gc:
        gc.disable()
    phases = dict.fromkeys(("file", "pop", "extract", "item"), 0.0)
    runs = 0
    for _ in range(args.repeats):
        buffer = TraceBuffer(None, BufferLimits(max_traces=100_000, max_bytes=10**10))
        for body in bodies:
            started = time.thread_time()
            split = split_request(parse_protobuf(body), lambda trace_id: True)
            buffer.offer(split.spans, "bench", split.unsampled)
            filed = time.thread_time()
            ready = buffer.pop_ready(flush=True)
            popped = time.thread_time()
            extraction = Extraction()
            extract_ready(ready, extraction, None)
            extracted = time.thread_time()
            items = [_item(run, ("scorer",)) for run in extraction.runs]
            built = time.thread_time()
            runs += len(items)
            phases["file"] += filed - started
            phases["pop"] += popped - filed
            phases["extract"] += extracted - popped
            phases["item"] += built - extracted
    per_run = {name: seconds / max(runs, 1) * 1e6 for name, seconds in phases.items()}
    print(
        f"runs {runs}: "
        + " ".join(f"{name} {value:.1f}" for name, value in per_run.items())
        + f" total {sum(per_run.values()):.1f} µs per run (thread CPU)"
    )


if __name__ == "__main__":
    main()

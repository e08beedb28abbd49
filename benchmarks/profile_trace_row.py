"""The stored row of `bench_floor.py`'s `traces-scored` runs alone, for callgrind.

    python benchmarks/profile_traces.py --batches 8 --bodies /tmp/bodies.pickle --repeats 0
    PYTHONHASHSEED=0 valgrind --tool=callgrind python benchmarks/profile_trace_row.py \
        --bodies /tmp/bodies.pickle --passes N     # N = 1 and 5

Builds serve's items of the first batch's runs as its trace thread does (`split_request`,
`TraceBuffer`, `extract_ready`, `_item`), scores each with the case's scorer (tool-call
accuracy, model-free) and makes its `ScoreRecord`, then encodes every record for the SQLite
sink (`encode_record`) `--passes` times. Instructions per row: (Ir(5) - Ir(1)) / 4 / runs.
"""

from __future__ import annotations

import argparse
import asyncio
import pickle
from pathlib import Path

import _common  # noqa: F401  (sets the environment before scorewatch is imported)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bodies", type=Path, required=True, help="profile_traces.py's batches")
    parser.add_argument("--passes", type=int, default=1)
    args = parser.parse_args()

    from scorewatch.core.result import ScorerRun
    from scorewatch.scorers.tool_call_accuracy_code import (
        create_tool_call_accuracy_code_scorer,
    )
    from scorewatch.server.intake.otlp_traces import _item
    from scorewatch.sinks.record import ScoreRecord, encode_record
    from scorewatch.sinks.sqlite import _ENCODE
    from scorewatch.traces.assembly import BufferLimits, TraceBuffer
    from scorewatch.traces.collect import Extraction, extract_ready
    from scorewatch.traces.otlp import parse_protobuf
    from scorewatch.traces.spans import split_request

    body = pickle.loads(args.bodies.read_bytes())[0]  # our own file (profile_traces.py)
    buffer = TraceBuffer(None, BufferLimits(max_traces=100_000, max_bytes=10**10))
    split = split_request(parse_protobuf(body), lambda trace_id: True)
    buffer.offer(split.spans, "bench", split.unsampled)
    extraction = Extraction()
    extract_ready(buffer.pop_ready(flush=True), extraction, None)
    scorer = create_tool_call_accuracy_code_scorer(expected_tool="lookup_order")
    records = []
    for run in extraction.runs:
        call = _item(run, ("scorer",)).call
        result = asyncio.run(scorer.run(ScorerRun.of_call(call)))
        records.append(ScoreRecord.success(f"run-{call.span_id}", scorer, call, result))
    for _ in range(args.passes):
        for record in records:
            encode_record(record, convert=_ENCODE)
    print(f"{len(records)} rows, {args.passes} passes")


if __name__ == "__main__":
    main()

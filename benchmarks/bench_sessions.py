"""A flood of never-ending conversations against the session bounds (issue #35).

    .venv/bin/python benchmarks/bench_sessions.py [--turns 200000] [--conversations 50000]
        [--max-bytes 4194304] [--repeat 3] [-o result.json]

Turns are runs as trace extraction makes them (a user message, an assistant message with two
tool invocations, ~1.3 KB of JSON), of `--conversations` conversations in turn, every one of
them still going on (the clock never lets one go idle), fed to a `SessionBuffer` with
`max_sessions` 10,000 and `--max-bytes`. Each closed session is taken at once and let go, as the
intake hands it to the scoring queue. Reported per repeat: CPU per turn (`add` + `pop_closed`,
the closing session's run built), the largest `bytes_held` and open sessions seen, RSS growth
over the flood from a warm baseline (peak, and over its second half), what the full buffer
itself takes (RSS after the warm-up less RSS before it), and the counts.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from datetime import UTC, datetime
from typing import Any

import _common
from _common import rss_bytes

from scorewatch.traces import ExtractedRun, SessionBuffer, SessionLimits


def _turn(conversation: int, number: int) -> ExtractedRun:
    created = datetime.now(UTC)
    invocations = [
        {
            "toolCallId": f"call_{k}",
            "toolName": name,
            "toolId": name,
            "args": {"order": number, "detail": "x" * 40},
            "result": {"status": "shipped", "eta": "Monday"},
            "state": "result",
        }
        for k, name in enumerate(("lookup_order", "notify_customer"))
    ]
    answer = f"Order {number} has shipped and will arrive on Monday; the customer was told."
    return ExtractedRun(
        trace_id=f"{number:032x}",
        span_id=f"{number:016x}",
        span_name="invoke_agent shop",
        convention="genai",
        input={
            "inputMessages": [{"id": "", "role": "user", "content": f"Where is order {number}?"}],
            "rememberedMessages": [],
            "systemMessages": [{"role": "system", "content": "You track orders."}],
            "taggedSystemMessages": {},
        },
        output=[
            {
                "id": "",
                "role": "assistant",
                "content": {
                    "format": 2,
                    "parts": [
                        *({"type": "tool-invocation", "toolInvocation": i} for i in invocations),
                        {"type": "text", "text": answer},
                    ],
                    "content": answer,
                    "toolInvocations": invocations,
                },
                "createdAt": created,
            }
        ],
        tool_calls=["lookup_order", "notify_customer"],
        agent="shop",
        service_name="shop",
        start_ns=number,
        conversation_id=f"conversation-{conversation}",
    )


def flood(turns: int, conversations: int, max_bytes: int) -> dict[str, Any]:
    now = 0.0
    buffer = SessionBuffer(
        SessionLimits(idle_s=1e9, max_sessions=10_000, max_bytes=max_bytes), clock=lambda: now
    )
    gc.collect()
    empty = rss_bytes()
    # Warm-up: the buffer full, sessions closing, so the baseline is the steady state.
    warm = 0
    while buffer.counts.closed.total() < 1_000:
        buffer.add(_turn(warm % conversations, warm))
        buffer.pop_closed()
        warm += 1
    gc.collect()
    baseline = rss_bytes()
    samples = [baseline]
    peak_bytes = peak_open = 0
    cpu = 0.0
    for i in range(turns):
        run = _turn(i % conversations, warm + i)  # a fresh turn each time, as the intake's
        started = time.thread_time()
        buffer.add(run)
        buffer.pop_closed()
        cpu += time.thread_time() - started
        now += 0.001
        peak_bytes = max(peak_bytes, buffer.bytes_held)
        peak_open = max(peak_open, len(buffer))
        if (i + 1) % 10_000 == 0:
            samples.append(rss_bytes())
    half = samples[len(samples) // 2]
    return {
        "cpu_us_per_turn": cpu / turns * 1e6,
        "peak_bytes_held": peak_bytes,
        "peak_open_sessions": peak_open,
        "rss_full_buffer_bytes": baseline - empty,
        "rss_growth_bytes": max(samples) - baseline,
        "rss_growth_second_half_bytes": samples[-1] - half,
        "counts": {
            "turns": buffer.counts.turns,
            "opened": buffer.counts.opened,
            **buffer.counts.outcomes(),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=200_000)
    parser.add_argument("--conversations", type=int, default=50_000)
    parser.add_argument("--max-bytes", type=int, default=4 << 20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("-o", "--output")
    args = parser.parse_args()
    runs = [flood(args.turns, args.conversations, args.max_bytes) for _ in range(args.repeat)]
    result = {
        "name": "sessions-flood",
        "turns": args.turns,
        "conversations": args.conversations,
        "max_bytes": args.max_bytes,
        "cpu_us_per_turn": _common.summary([r["cpu_us_per_turn"] for r in runs]),
        "rss_growth_mb_median": statistics.median(r["rss_growth_bytes"] for r in runs) / 2**20,
        "rss_full_buffer_mb_median": statistics.median(r["rss_full_buffer_bytes"] for r in runs)
        / 2**20,
        "runs": runs,
        "machine": _common.machine(),
    }
    _common.emit(result, args.output)


if __name__ == "__main__":
    main()

"""`/metrics` scrape time with about 10,000 series (issue #5).

    .venv/bin/python benchmarks/bench_scrape.py [--series 10000] [--scrapes 30] [-o result.json]

`telemetry.configure` with its own Prometheus HTTP server on 127.0.0.1; real scorer runs (the
quality scorer under as many scorer ids as it takes) fill the registry until the exposition has
`--series` sample lines, then an HTTP client scrapes `/metrics` repeatedly (after warm-up
scrapes). Reported: wall time per scrape, from request to the last byte.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import urllib.request
from typing import Any

import _common
from _common import QUESTION, TWELVE_WORDS, quality_scorer

from scorewatch import telemetry


def sample_lines(body: bytes) -> int:
    return sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))


def fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as response:
        body: bytes = response.read()
    return body


async def fill(url: str, series: int) -> int:
    base = quality_scorer()
    count = 0
    scorer_index = 0
    while True:
        # One run per scorer id adds ~110 series (runs, run and step durations, score buckets).
        for _ in range(10):
            scorer = base.__class__(
                id=f"quality-{scorer_index:05d}",
                description=base.description,
                name=base.name,
                steps=base.steps,
            )
            await scorer.run(input=QUESTION, output=TWELVE_WORDS, target="agent")
            scorer_index += 1
        count = sample_lines(fetch(url))
        if count >= series:
            return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=10_000)
    parser.add_argument("--scrapes", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("-o", "--output")
    args = parser.parse_args()
    handle = telemetry.configure(prometheus="127.0.0.1:0", otlp=False, set_global=False)
    try:
        url = f"{handle.prometheus_url}"
        if not url.endswith("/metrics"):
            url = url.rstrip("/") + "/metrics"
        series = asyncio.run(fill(url, args.series))
        for _ in range(args.warmup):
            fetch(url)
        timings: list[float] = []
        size = 0
        for _ in range(args.scrapes):
            started = time.perf_counter()
            body = fetch(url)
            timings.append((time.perf_counter() - started) * 1000)
            size = len(body)
    finally:
        handle.shutdown()
    result: dict[str, Any] = {
        "series": series,
        "bytes": size,
        "scrape_ms": _common.summary(timings),
    }
    _common.emit(result, args.output)


if __name__ == "__main__":
    main()

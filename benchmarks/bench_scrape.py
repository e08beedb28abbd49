"""`/metrics` scrape time with about 10,000 series (issue #5).

    .venv/bin/python benchmarks/bench_scrape.py [--series 10000] [--scrapes 30] [-o result.json]

`telemetry.configure` with its own Prometheus HTTP server on 127.0.0.1; real scorer runs (the
quality scorer under as many scorer ids as it takes) fill the registry until the exposition has
`--series` sample lines, then an HTTP client scrapes `/metrics` repeatedly (after warm-up
scrapes). Reported: wall time per scrape, from request to the last byte, for a plain scrape
(`scrape_ms`, the 0.0.4 text format) and for a scrape as Prometheus sends it
(`prometheus_scrape_ms`: OpenMetrics with exemplars, gzip); and, in-process, the encoding time
of scorewatch's encoders against prometheus-client's for both formats (`encode_ms`), which is
what decides where the fast encoders are kept.
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


PROMETHEUS_HEADERS = {
    "Accept": "application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
    "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
    "Accept-Encoding": "gzip",
}


def fetch(url: str, headers: dict[str, str] | None = None) -> bytes:
    request = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(request, timeout=30) as response:
        body: bytes = response.read()
    return body


def _timed(action: Any, repeat: int) -> list[float]:
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def encode_timings(registry: Any, repeat: int) -> dict[str, Any]:
    """Encoding only (the families collected once), ours against prometheus-client's."""
    from prometheus_client import generate_latest
    from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_latest

    from scorewatch.telemetry.exposition import render_openmetrics, render_text

    class Collected:
        def __init__(self) -> None:
            self.families = list(registry.collect())

        def collect(self) -> Any:
            return iter(self.families)

    collected = Collected()
    return {
        "text_scorewatch": _common.summary(_timed(lambda: render_text(collected), repeat)),
        "text_prometheus_client": _common.summary(
            _timed(lambda: generate_latest(collected), repeat)  # type: ignore[arg-type]
        ),
        "openmetrics_scorewatch": _common.summary(
            _timed(lambda: render_openmetrics(collected), repeat)
        ),
        "openmetrics_prometheus_client": _common.summary(
            _timed(lambda: openmetrics_latest(collected), repeat)
        ),
    }


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
        prometheus_timings = _timed(lambda: fetch(url, PROMETHEUS_HEADERS), args.scrapes)
        compressed = len(fetch(url, PROMETHEUS_HEADERS))
        encodings = encode_timings(handle.registry, max(5, args.scrapes // 3))
    finally:
        handle.shutdown()
    result: dict[str, Any] = {
        "series": series,
        "bytes": size,
        "scrape_ms": _common.summary(timings),
        "prometheus_scrape_bytes": compressed,
        "prometheus_scrape_ms": _common.summary(prometheus_timings),
        "encode_ms": encodings,
    }
    _common.emit(result, args.output)


if __name__ == "__main__":
    main()

"""A real Prometheus scrapes scorewatch with gzip and OpenMetrics and stores its exemplars.

Between Prometheus and the scrape endpoint sits a recording pass-through proxy, so the test sees
what was negotiated on the wire (Accept, Accept-Encoding, Content-Type, Content-Encoding), and
Prometheus's exemplar API shows that the score buckets point at the runs' traces.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from prometheus_support import query, running_prometheus

pytestmark = pytest.mark.e2e

_PROCESS = textwrap.dedent(
    """
    import asyncio, json, sys
    import scorewatch as sw
    from scorewatch import telemetry

    async def main():
        handle = telemetry.configure(prometheus="127.0.0.1:0", otlp=False)
        scorer = sw.create_scorer(id="quality", description="d").generate_score(
            lambda ctx: ctx.run.output
        )
        traces = []
        for score in (0.2, 0.9, 0.9, 0.4):
            result = await scorer.run(output=score, target="support-agent")
            traces.append(result.score_trace_id)
        print(json.dumps({"port": handle.prometheus_port, "traces": traces}), flush=True)
        sys.stdin.read()
        handle.shutdown()

    asyncio.run(main())
    """
)


class _Recorder:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.exchanges: list[dict[str, str]] = []
        self.lock = threading.Lock()


@contextmanager
def _recording_proxy(upstream: str) -> Iterator[tuple[int, _Recorder]]:
    recorder = _Recorder(upstream)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            forwarded = {
                name: value
                for name, value in self.headers.items()
                if name.lower() in ("accept", "accept-encoding")
            }
            request = urllib.request.Request(recorder.upstream + self.path, headers=forwarded)
            # urllib leaves the body as sent (gzip stays gzip), unlike httpx.
            with urllib.request.urlopen(request, timeout=10) as response:
                body = response.read()
                headers = dict(response.headers.items())
            with recorder.lock:
                recorder.exchanges.append(
                    {
                        "accept": self.headers.get("Accept", ""),
                        "accept-encoding": self.headers.get("Accept-Encoding", ""),
                        "content-type": headers.get("Content-Type", ""),
                        "content-encoding": headers.get("Content-Encoding", ""),
                    }
                )
            self.send_response(200)
            for name in ("Content-Type", "Content-Encoding"):
                if headers.get(name):
                    self.send_header(name, headers[name])
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1]), recorder
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.needs_binary
def test_real_prometheus_negotiates_gzip_openmetrics_and_keeps_the_exemplars(
    prometheus_bin: str, tmp_path: Path
) -> None:
    script = tmp_path / "scorewatch_process.py"
    script.write_text(_PROCESS)
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    process = subprocess.Popen(
        [sys.executable, str(script)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        started = json.loads(process.stdout.readline())
        traces = set(started["traces"])
        upstream = f"http://127.0.0.1:{started['port']}"
        with (
            _recording_proxy(upstream) as (proxy_port, recorder),
            running_prometheus(
                prometheus_bin,
                tmp_path / "prometheus",
                [f"127.0.0.1:{proxy_port}"],
                # Prometheus 2.x keeps exemplars only with this feature flag.
                extra_args=["--enable-feature=exemplar-storage"],
            ) as base,
        ):
            deadline = time.monotonic() + 60
            exemplars: list[dict[str, Any]] = []
            while not exemplars and time.monotonic() < deadline:
                now = time.time()
                response = httpx.get(
                    f"{base}/api/v1/query_exemplars",
                    params={
                        "query": "scorewatch_evaluation_score_bucket",
                        "start": now - 600,
                        "end": now + 60,
                    },
                    timeout=10,
                )
                response.raise_for_status()
                exemplars = [
                    exemplar
                    for series in response.json()["data"]
                    for exemplar in series["exemplars"]
                ]
                if not exemplars:
                    time.sleep(0.5)
            assert exemplars, "Prometheus stored no exemplar of the score histogram"
            stored = {exemplar["labels"]["trace_id"] for exemplar in exemplars}
            assert stored <= traces  # each points at the trace of a run that gave that score
            by_value = {float(e["value"]): e["labels"]["trace_id"] for e in exemplars}
            assert 0.2 in by_value and 0.4 in by_value

            count = query(
                base, 'sum(scorewatch_evaluation_score_count{scorewatch_target="support-agent"})'
            )
            assert float(count[0]["value"][1]) == 4

            with recorder.lock:
                exchanges = list(recorder.exchanges)
            assert exchanges
            for exchange in exchanges:
                assert "application/openmetrics-text" in exchange["accept"]
                assert "gzip" in exchange["accept-encoding"]
                assert exchange["content-type"].startswith("application/openmetrics-text")
                assert exchange["content-encoding"] == "gzip"
    finally:
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)

"""A real `scorewatch serve` with `[traces]` for the trace-intake tests, and hand-made OTLP spans
(protobuf, as any exporter encodes them) for the requests a hostile or unlucky client sends."""

from __future__ import annotations

import gzip
import json
import re
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from opentelemetry.sdk.trace import ReadableSpan

from serve_support import ServeProcess, write_config
from traces_support import protobuf_request

TOKEN = "trace-intake-test-token"
_TRACES_ON = re.compile(r"scorewatch serve: traces on (http://\S+)/v1/traces")

CONFIG = """
[server]
auth_token_env = "SW_TRACES_TOKEN"

[[scorers]]
id = "length"
factory = "sw_test_scorers:make_length_scorer"

[[scorers]]
id = "failing"
factory = "sw_test_scorers:make_failing_scorer"

[[scorers]]
id = "tools"
kind = "tool-call-accuracy-code"
options = {{ expected_tool = "lookup_order" }}
{extra}
[sinks]
sqlite = "scores.db"

[telemetry]
service_name = "scorewatch-traces-test"

[traces]
listen = "127.0.0.1:0"
scorers = {trace_scorers}
assembly_interval = 0.1

[traces.buffer]
quiet_period_s = 0.5
parent_wait_s = 1.0
{buffer}
"""

_BUFFER_DEFAULTS = {"max_age_s": 60, "max_bytes": 64 << 20, "linger_s": 2.0}


def traces_config(
    *,
    extra: str = "",
    trace_scorers: Sequence[str] = ("length", "tools"),
    **buffer: Any,
) -> str:
    """The test configuration: `buffer` overrides `[traces.buffer]` keys, `extra` adds tables."""
    settings = {**_BUFFER_DEFAULTS, **buffer}
    lines = "\n".join(f"{key} = {json.dumps(value)}" for key, value in settings.items())
    return CONFIG.format(extra=extra, trace_scorers=json.dumps(list(trace_scorers)), buffer=lines)


class TracesServe:
    """A running serve with `[traces] listen`, and what the tests ask of it."""

    def __init__(self, process: ServeProcess) -> None:
        self.process = process
        self.url = process.url
        found = _TRACES_ON.search(process.stderr())
        assert found, process.stderr()
        self.traces_url = found.group(1)
        self.client = httpx.Client(timeout=60, headers={"Authorization": f"Bearer {TOKEN}"})

    def post(
        self,
        body: bytes,
        media: str,
        *,
        gzipped: bool = False,
        client: httpx.Client | None = None,
    ) -> httpx.Response:
        headers = {"Content-Type": media}
        if gzipped:
            body = gzip.compress(body, compresslevel=1)
            headers["Content-Encoding"] = "gzip"
        sender = client or self.client
        return sender.post(f"{self.traces_url}/v1/traces", content=body, headers=headers)

    def post_spans(self, spans: Sequence[ReadableSpan]) -> httpx.Response:
        """`spans` as an OTLP protobuf export request, the way the SDK's exporter sends them."""
        return self.post(protobuf_request(spans).SerializeToString(), "application/x-protobuf")

    def post_raw(self, request: ExportTraceServiceRequest, **options: Any) -> httpx.Response:
        return self.post(request.SerializeToString(), "application/x-protobuf", **options)

    def rows(self) -> list[dict[str, Any]]:
        """Every stored row (none before the sink has made its table)."""
        with sqlite3.connect(self.process.config.parent / "scores.db") as db:
            db.row_factory = sqlite3.Row
            try:
                found = db.execute("SELECT * FROM mastra_scorers").fetchall()
            except sqlite3.OperationalError as error:
                if "no such table" not in str(error):
                    raise
                found = []
        return [dict(row) for row in found]

    def rows_for(
        self, span_id: str, timeout: float = 20, scorer: str = "length"
    ) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                found = [
                    row
                    for row in self.rows()
                    if row["spanId"] == span_id and row["scorerId"] == scorer
                ]
            except sqlite3.OperationalError:
                found = []
            if found:
                return found
            time.sleep(0.1)
        raise AssertionError(f"no row for span {span_id}:\n{self.process.stderr()[-3000:]}")

    def stats(self) -> dict[str, int]:
        answer: dict[str, int] = self.client.get(f"{self.url}/v1/stats").json()
        return answer

    def metrics(self) -> str:
        return httpx.get(f"{self.url}/metrics", timeout=60).text

    def wait_metric(self, line: str, timeout: float = 15) -> str:
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.metrics()
            if line in text:
                return text
            time.sleep(0.1)
        raise AssertionError(f"{line!r} not in /metrics:\n{text[-4000:]}")


def start_traces_serve(
    directory: Path, body: str | None = None, env: Mapping[str, str] | None = None
) -> TracesServe:
    """A serve process on `body` (default: `traces_config()`), listening; kill it when done."""
    process = ServeProcess(
        write_config(directory, body or traces_config()),
        env={"SW_TRACES_TOKEN": TOKEN, **(env or {})},
    )
    try:
        process.wait_listening()
        return TracesServe(process)
    except BaseException:
        process.kill()
        raise


@dataclass
class QueuedTraces:
    """Serve with `[traces]` putting runs on a Redis stream, the worker reading it, the stream."""

    serve: TracesServe
    worker: Any  # scale_support.WorkerProcess
    client: Any  # redis.Redis
    stream: str


@contextmanager
def queued_traces_serve(
    directory: Path, body: str, env: Mapping[str, str] | None = None
) -> Iterator[QueuedTraces]:
    """Serve on `body` plus a `[queue]` table of a fresh stream, `--queue` on the local Redis,
    and one `scorewatch worker`, both listening; killed and the stream deleted afterwards."""
    import redis

    from scale_support import REDIS_URL, WorkerProcess, require_redis, unique_prefix

    require_redis()
    stream = unique_prefix()
    body += f'\n[queue]\nstream = "{stream}"\ngroup = "{stream}-workers"\nstats_interval = 0.25\n'
    config = write_config(directory, body)
    environment = {"SW_TRACES_TOKEN": TOKEN, **(env or {})}
    process = ServeProcess(config, env=environment, extra_args=("--queue", REDIS_URL))
    worker = WorkerProcess(config, name="traces-worker", env=environment)
    client = redis.Redis.from_url(REDIS_URL)
    try:
        process.wait_listening()
        worker.wait_consuming()
        yield QueuedTraces(TracesServe(process), worker, client, stream)
    finally:
        worker.kill9()
        process.kill()
        client.delete(stream, f"{stream}:dead")
        client.close()


def raw_span(
    trace: int,
    span: int,
    parent: int | None = None,
    *,
    name: str = "step",
    payload: int = 0,
    **attributes: str,
) -> Span:
    """A finished span; a name starting `invoke_agent` makes it an agent span (selected)."""
    pairs = {k.replace("__", "."): v for k, v in attributes.items()}
    if payload:
        pairs["payload"] = "x" * payload
    if name.startswith("invoke_agent"):
        pairs.setdefault("gen_ai.operation.name", "invoke_agent")
    now = time.time_ns()
    return Span(
        trace_id=trace.to_bytes(16, "big"),
        span_id=span.to_bytes(8, "big"),
        parent_span_id=b"" if parent is None else parent.to_bytes(8, "big"),
        name=name,
        start_time_unix_nano=now,
        end_time_unix_nano=now,
        attributes=[KeyValue(key=k, value=AnyValue(string_value=v)) for k, v in pairs.items()],
    )


def raw_request(
    spans: Sequence[Span], *, service: str = "raw-client", **resource: str
) -> ExportTraceServiceRequest:
    """One resource (its `service.name` and `resource` attributes) holding `spans`."""
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    attributes = {"service.name": service, **{k.replace("__", "."): v for k, v in resource.items()}}
    resource_spans.resource.attributes.extend(
        KeyValue(key=k, value=AnyValue(string_value=v)) for k, v in attributes.items()
    )
    resource_spans.scope_spans.add().spans.extend(spans)
    return request


def messages(role: str, text: str) -> str:
    """GenAI-convention messages (`gen_ai.input.messages` / `gen_ai.output.messages`)."""
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])

"""A provider's error text never leaves the process with content capture off (issue 17, item 4).

The loopback judge answers 401 with an OpenAI-style error body that quotes the API key and a
piece of "content" (as real providers echo parts of the request). A real serve process exports
spans, logs and metrics over OTLP to the test receiver, serves /metrics, writes SQLite and JSONL
rows and logs at debug level; none of those bytes may hold the key or the echoed content. The
span still says what failed: the stable error code and the error's class.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from otlp_receiver import OtlpReceiver
from scorewatch.testing import HttpError, LoopbackJudgeServer
from serve_support import JUDGE_KEY_ENV, ServeProcess, judge_table, write_config

pytestmark = pytest.mark.e2e

SENTINEL_KEY = "sk-SENTINEL-4f1e9d0c7b2a"
ECHOED_CONTENT = "CANARY-ECHOED-BY-PROVIDER-8c3d"

CONFIG = """\
[server]
log_level = "debug"

{judge}

[[scorers]]
id = "relevancy"
kind = "answer-relevancy"

[sinks]
sqlite = "scores.db"
jsonl = "scores.jsonl"

[telemetry]
service_name = "scorewatch-error-content"
"""


def test_provider_error_text_reaches_no_exported_byte(tmp_path: Path) -> None:
    error = HttpError(
        401,
        f"Incorrect API key provided: {SENTINEL_KEY}. Request began: {ECHOED_CONTENT}",
        error_type="invalid_request_error",
        error_code="invalid_api_key",
    )
    with LoopbackJudgeServer(default=error) as judge, OtlpReceiver(grpc_enabled=False) as otlp:
        body = CONFIG.format(judge=judge_table(judge.base_url))
        # The planted key, from the environment as required.
        served, answer, metrics = _score_once(tmp_path, body, SENTINEL_KEY, otlp)
        assert judge.request_count >= 1
        exported = [request.message.SerializeToString() for request in otlp.requests]
        spans = otlp.spans()
    result = answer.json()["results"][0]
    assert result["status"] == "failed", result

    every_byte = {
        "otlp": b"".join(exported),
        "metrics": metrics.encode(),
        "sqlite": (tmp_path / "scores.db").read_bytes() + _wal(tmp_path / "scores.db"),
        "jsonl": (tmp_path / "scores.jsonl").read_bytes(),
        "log": served.stderr_path.read_bytes(),
        "answer": answer.content,
    }
    assert b"AUTHENTICATION_FAILED" in every_byte["otlp"]  # the failure itself is exported
    for where, data in every_byte.items():
        assert SENTINEL_KEY.encode() not in data, f"the API key reached the {where}"
        assert ECHOED_CONTENT.encode() not in data, f"the provider's error text reached the {where}"

    failed = [span for span in spans if "ERROR" in span.status_code]
    assert failed, [(span.name, span.status_code) for span in spans]
    for span in failed:
        assert span.attributes.get("error.type") == "AUTHENTICATION_FAILED", span
        assert span.status_message == "AUTHENTICATION_FAILED"
        exceptions = [attributes for name, attributes in span.events if name == "exception"]
        assert exceptions, span
        for attributes in exceptions:
            assert "exception.stacktrace" not in attributes
            assert attributes["exception.message"] == "AUTHENTICATION_FAILED"


def _score_once(
    directory: Path, config: str, key: str, otlp: OtlpReceiver
) -> tuple[ServeProcess, httpx.Response, str]:
    """Serve `config` exporting to `otlp`, score one pair (`?wait=true`), read `/metrics`,
    and stop the process (which flushes every exporter)."""
    env = {
        JUDGE_KEY_ENV: key,
        "OTEL_EXPORTER_OTLP_ENDPOINT": otlp.http_endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
    }
    served = ServeProcess(write_config(directory, config, module=False), env=env)
    try:
        served.wait_listening()
        with httpx.Client(base_url=served.url, timeout=60) as http:
            answer = http.post(
                "/v1/scores",
                params={"wait": "true"},
                json={"input": "What is 2+2?", "output": "4", "target": "agent"},
            )
            metrics = http.get("/metrics").text
        assert served.terminate() == 0
    finally:
        served.kill()
    return served, answer, metrics


def _wal(path: Path) -> bytes:
    wal = path.with_name(path.name + "-wal")
    return wal.read_bytes() if wal.exists() else b""


@pytest.mark.parametrize("transport", ["openai_http", "litellm"])
def test_with_content_capture_on_a_provider_error_still_quotes_no_key(
    tmp_path: Path, transport: str
) -> None:
    # Issue 28 item 17: with content capture on, the provider's error code (here the key
    # itself, as a hostile or broken provider may send) reached 7 spans' exception.stacktrace.
    error = HttpError(
        401,
        f"Incorrect API key provided: {SENTINEL_KEY}",
        error_type="invalid_request_error",
        error_code=SENTINEL_KEY,
    )
    with LoopbackJudgeServer(default=error) as judge, OtlpReceiver(grpc_enabled=False) as otlp:
        table = judge_table(judge.base_url, transport=transport)
        body = CONFIG.format(judge=table) + "capture_content = true\n"
        served, answer, _metrics = _score_once(tmp_path, body, "sk-the-configured-key-0d9a", otlp)
        exported = b"".join(request.message.SerializeToString() for request in otlp.requests)
        spans = otlp.spans()
    assert answer.json()["results"][0]["status"] == "failed"
    assert SENTINEL_KEY.encode() not in exported
    assert b"sk-the-configured-key-0d9a" not in exported
    assert SENTINEL_KEY not in served.stderr()
    traces = [
        attributes["exception.stacktrace"]
        for span in spans
        for name, attributes in span.events
        if name == "exception" and "exception.stacktrace" in attributes
    ]
    assert traces  # with content on, the stack trace is exported: frames, not messages
    assert any("JudgeProviderError: judge provider for model" in trace for trace in traces)

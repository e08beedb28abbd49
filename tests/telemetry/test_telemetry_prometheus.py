"""The Prometheus endpoint: a real scrape of /metrics, the ASGI app, and the real Prometheus."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

import scorewatch as sw
from scorewatch import telemetry
from scorewatch.judge import JudgeProviderError, JudgeReply, RetryPolicy
from scorewatch.telemetry import names
from scorewatch.testing import ScriptedJudge
from telemetry_helpers import prompt_scorer, verdicts

pytestmark = pytest.mark.e2e


@pytest.fixture
def handle() -> Iterator[telemetry.TelemetryHandle]:
    configured = telemetry.configure(
        service_name="scorewatch-test", prometheus="127.0.0.1:0", otlp=False, set_global=False
    )
    try:
        yield configured
    finally:
        configured.shutdown()


def _samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return samples


def _total(
    samples: dict[str, list[tuple[dict[str, str], float]]], name: str, **labels: str
) -> float:
    return sum(
        value
        for found, value in samples.get(name, [])
        if all(found.get(k) == v for k, v in labels.items())
    )


async def test_scraped_token_totals_equal_the_judge_records(
    handle: telemetry.TelemetryHandle,
) -> None:
    results: list[sw.core.ScorerRunSnapshot] = []
    for index in range(12):
        usage = sw.judge.JudgeUsage(input_tokens=100 + index, output_tokens=10 * index + 1)
        script: list[object] = []
        if index % 3 == 0:
            script.append(
                JudgeProviderError(
                    "flaky",
                    code="UNAVAILABLE",
                    retryable=True,
                    usage=sw.judge.JudgeUsage(input_tokens=5, output_tokens=0),
                    model_call_count=1,
                )
            )
        if index % 4 == 0:
            script.append(JudgeProviderError("refused", code="BAD_REQUEST"))
        else:
            script += [JudgeReply(text=verdicts(index % 5), usage=usage), "why"]
        judge = ScriptedJudge(
            script,  # type: ignore[arg-type]
            usage=usage,
            retry_policy=RetryPolicy(max_retries=1, base_delay=0.0, jitter=False),
        )
        try:
            results.append(await prompt_scorer(judge).run(output=f"answer {index}"))
        except sw.ScorerRunError as error:
            assert error.result is not None
            results.append(error.result)

    assert handle.prometheus_url is not None
    async with httpx.AsyncClient() as client:
        response = await client.get(handle.prometheus_url)
    assert response.status_code == 200
    samples = _samples(response.text)

    executions = [
        execution
        for result in results
        for record in (result.judge or {}).values()
        for execution in record.executions
    ]
    assert {e.status for e in executions} == {"success", "failed"}
    for token_type, key in (("input", "input_tokens"), ("output", "output_tokens")):
        expected = sum(getattr(e.usage, key) or 0 for e in executions if e.usage is not None)
        scraped = _total(samples, f"{names.PROM_TOKEN_USAGE}_sum", gen_ai_token_type=token_type)
        assert scraped == expected
    assert _total(samples, names.PROM_JUDGE_EXECUTIONS) == len(executions)
    assert _total(samples, names.PROM_JUDGE_EXECUTIONS, scorewatch_status="failed") == sum(
        1 for e in executions if e.status == "failed"
    )
    assert _total(samples, names.PROM_JUDGE_ATTEMPTS) == sum(e.attempt_count for e in executions)
    assert _total(samples, names.PROM_SCORER_RUNS, scorewatch_outcome="failed") == 3
    assert _total(samples, names.PROM_SCORER_RUNS, scorewatch_outcome="success") == 9
    assert _total(samples, f"{names.PROM_SCORE}_count") == 9
    for series in (
        f"{names.PROM_TOKEN_USAGE}_bucket",
        f"{names.PROM_OPERATION_DURATION}_bucket",
        f"{names.PROM_RUN_DURATION}_bucket",
        f"{names.PROM_STEP_DURATION}_bucket",
        f"{names.PROM_SCORE}_bucket",
    ):
        assert series in samples, series
    # The resource names the service on target_info.
    assert samples["target_info"][0][0]["service_name"] == "scorewatch-test"


async def test_asgi_app_serves_the_configured_registry(handle: telemetry.TelemetryHandle) -> None:
    app = telemetry.prometheus_asgi_app()
    await prompt_scorer(ScriptedJudge([verdicts(2), "ok"])).run(output="x")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://scorewatch") as client:
        response = await client.get("/")
    assert response.status_code == 200
    samples = _samples(response.text)
    assert _total(samples, f"{names.PROM_SCORE}_sum") == 0.5
    assert _total(samples, names.PROM_SCORER_RUNS) == 1


def test_shutdown_stops_the_endpoint_and_the_observer() -> None:
    configured = telemetry.configure(prometheus="127.0.0.1:0", otlp=False, set_global=False)
    url = configured.prometheus_url
    assert url is not None
    assert httpx.get(url).status_code == 200
    assert telemetry.is_instrumented()
    configured.shutdown()
    assert not telemetry.is_instrumented()
    with pytest.raises(httpx.TransportError):
        httpx.get(url, timeout=2)


# -- the real Prometheus -----------------------------------------------------------------------

SCORES = (0.25, 0.5, 0.75, 1.0, 0.5, 0.25, 1.0, 0.75)

_SCOREWATCH_PROCESS = textwrap.dedent(
    """
    import asyncio, os, sys
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    import scorewatch as sw
    from scorewatch import telemetry

    SCORES = {scores!r}

    async def main():
        # A process of its own: the global providers may be set, as an application would.
        handle = telemetry.configure(prometheus="127.0.0.1:0", otlp=False)
        scorer = sw.create_scorer(id="quality", description="d").generate_score(
            lambda ctx: ctx.run.output
        )
        for score in SCORES:
            await scorer.run(output=score, target="support-agent")
        print(handle.prometheus_port, flush=True)
        sys.stdin.read()  # serve until the test closes our stdin
        handle.shutdown()

    asyncio.run(main())
    """
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _query(base: str, expr: str) -> list[dict[str, object]]:
    response = httpx.get(f"{base}/api/v1/query", params={"query": expr}, timeout=5)
    response.raise_for_status()
    body = response.json()
    assert body["status"] == "success", body
    result: list[dict[str, object]] = body["data"]["result"]
    return result


def _wait_for_result(base: str, expr: str, deadline_s: float = 30.0) -> list[dict[str, object]]:
    deadline = time.monotonic() + deadline_s
    while True:
        result = _query(base, expr)
        if result or time.monotonic() > deadline:
            return result
        time.sleep(0.25)


@pytest.mark.needs_binary
def test_real_prometheus_scrapes_and_queries_the_score_histogram(
    prometheus_bin: str, tmp_path: Path
) -> None:
    script = tmp_path / "serve_metrics.py"
    script.write_text(_SCOREWATCH_PROCESS.format(scores=SCORES))
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    scorewatch_proc = subprocess.Popen(
        [sys.executable, str(script)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    prometheus_proc: subprocess.Popen[bytes] | None = None
    try:
        assert scorewatch_proc.stdout is not None
        metrics_port = int(scorewatch_proc.stdout.readline())
        web_port = _free_port()
        config = tmp_path / "prometheus.yml"
        config.write_text(
            textwrap.dedent(
                f"""
                global:
                  scrape_interval: 1s
                  evaluation_interval: 1s
                scrape_configs:
                  - job_name: scorewatch
                    static_configs:
                      - targets: ["127.0.0.1:{metrics_port}"]
                """
            )
        )
        prometheus_proc = subprocess.Popen(
            [
                prometheus_bin,
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{web_port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{web_port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{base}/-/ready", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "Prometheus did not become ready"
            time.sleep(0.1)

        count = _wait_for_result(
            base,
            'sum(scorewatch_evaluation_score_bucket{gen_ai_evaluation_name="quality",le="+Inf"})',
        )
        assert count, "Prometheus never scraped the score histogram"
        assert float(count[0]["value"][1]) == len(SCORES)  # type: ignore[index]

        mean = _query(
            base,
            'sum(scorewatch_evaluation_score_sum{gen_ai_evaluation_name="quality"})'
            " / sum(scorewatch_evaluation_score_bucket"
            '{gen_ai_evaluation_name="quality",le="+Inf"})',
        )
        assert float(mean[0]["value"][1]) == pytest.approx(sum(SCORES) / len(SCORES))  # type: ignore[index]

        at_most_half = _query(
            base,
            'sum(scorewatch_evaluation_score_bucket{scorewatch_target="support-agent",le="0.5"})',
        )
        assert float(at_most_half[0]["value"][1]) == sum(1 for s in SCORES if s <= 0.5)  # type: ignore[index]
    finally:
        if prometheus_proc is not None:
            prometheus_proc.terminate()
            prometheus_proc.wait(10)
        if scorewatch_proc.stdin is not None:
            scorewatch_proc.stdin.close()
        try:
            scorewatch_proc.wait(10)
        except subprocess.TimeoutExpired:
            scorewatch_proc.kill()
            scorewatch_proc.wait(5)


def test_a_taken_prometheus_address_fails_cleanly() -> None:
    first = telemetry.configure(prometheus="127.0.0.1:0", otlp=False, set_global=False)
    try:
        with pytest.raises(OSError):
            telemetry.configure(
                prometheus=f"127.0.0.1:{first.prometheus_port}", otlp=False, set_global=False
            )
        # The first set-up is still the active one.
        assert telemetry.is_instrumented()
        assert first.prometheus_url is not None
        assert httpx.get(first.prometheus_url).status_code == 200
    finally:
        first.shutdown()


def test_parse_address() -> None:
    from scorewatch.telemetry.prometheus import parse_address

    assert parse_address(None) == ("127.0.0.1", 9464)
    assert parse_address("0.0.0.0:9000") == ("0.0.0.0", 9000)
    assert parse_address("[::1]:9464") == ("::1", 9464)
    assert parse_address(":9464") == ("127.0.0.1", 9464)
    with pytest.raises(ValueError):
        parse_address("localhost")


async def test_registry_without_a_server_is_served_by_the_asgi_app() -> None:
    configured = telemetry.configure(
        prometheus="127.0.0.1:0", prometheus_server=False, otlp=False, set_global=False
    )
    try:
        assert configured.prometheus_url is None
        await prompt_scorer(ScriptedJudge([verdicts(4), "ok"])).run(output="x")
        transport = httpx.ASGITransport(app=telemetry.prometheus_asgi_app())
        async with httpx.AsyncClient(transport=transport, base_url="http://s") as client:
            response = await client.get("/metrics")
            refused = await client.post("/metrics")
        assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
        assert _total(_samples(response.text), f"{names.PROM_SCORE}_sum") == 1.0
        assert refused.status_code == 405
    finally:
        configured.shutdown()


def test_exemplars_survive_series_with_fewer_labels_than_their_family() -> None:
    """The exporter gives every series of a family all the family's labels ("" where a series
    has none: a score without a target beside one with): each still shows its exemplar."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.trace import TracerProvider
    from prometheus_client import CollectorRegistry

    from scorewatch.telemetry.exposition import render_openmetrics
    from scorewatch.telemetry.instruments import Instruments, metric_views
    from scorewatch.telemetry.prometheus import prometheus_metric_reader

    registry = CollectorRegistry()
    provider = MeterProvider(
        metric_readers=[prometheus_metric_reader(registry)], views=metric_views()
    )
    scores = Instruments(provider).score_histogram(1.0)
    tracer = TracerProvider().get_tracer("test")
    base = {names.ATTR_EVALUATION_NAME: "q", names.ATTR_SCORE_SOURCE: "live"}
    trace_ids = []
    for value, attributes in ((0.2, base), (0.7, {**base, names.ATTR_TARGET: "agent"})):
        with tracer.start_as_current_span("run") as span:
            scores.record(value, attributes)
            trace_ids.append(format(span.get_span_context().trace_id, "032x"))
    text = render_openmetrics(registry).decode()
    provider.shutdown()
    exemplars = [line for line in text.splitlines() if " # {" in line]
    assert len(exemplars) == 2
    assert 'le="0.2",scorewatch_score_source="live",scorewatch_target=""' in exemplars[0]
    assert trace_ids[0] in exemplars[0] and trace_ids[1] in exemplars[1]


@pytest.mark.parametrize("with_target_first", [True, False])
def test_score_histograms_of_two_scales_keep_their_own_labels(with_target_first: bool) -> None:
    """Each scale's score histogram is on a meter of its own, and the exporter fixes a family's
    label names from the first metric of a name: the two are joined before it sees them, so a
    series of either scale keeps exactly its labels, and the other's missing ones read ""."""
    from opentelemetry.sdk.metrics import MeterProvider
    from prometheus_client import CollectorRegistry

    from scorewatch.telemetry.exposition import render_openmetrics
    from scorewatch.telemetry.instruments import Instruments, metric_views
    from scorewatch.telemetry.prometheus import prometheus_metric_reader

    registry = CollectorRegistry()
    provider = MeterProvider(
        metric_readers=[prometheus_metric_reader(registry)], views=metric_views()
    )
    instruments = Instruments(provider)
    plain = {names.ATTR_EVALUATION_NAME: "unit", names.ATTR_SCORE_SOURCE: "live"}
    targeted = {
        names.ATTR_EVALUATION_NAME: "tenfold",
        names.ATTR_SCORE_SOURCE: "live",
        names.ATTR_TARGET: "agent",
    }
    recordings = [(1.0, 0.5, plain), (10.0, 7.0, targeted)]
    if with_target_first:
        recordings.reverse()
    for scale, value, attributes in recordings:
        instruments.score_histogram(scale).record(value, attributes)
    text = render_openmetrics(registry).decode()
    provider.shutdown()
    counts = {
        line.split("{", 1)[1].split("}", 1)[0]: line.rsplit(" ", 1)[1]
        for line in text.splitlines()
        if line.startswith(names.PROM_SCORE + "_count{")
    }
    assert counts == {
        'gen_ai_evaluation_name="unit",scorewatch_score_source="live",scorewatch_target=""': "1.0",
        'gen_ai_evaluation_name="tenfold",scorewatch_score_source="live",'
        'scorewatch_target="agent"': "1.0",
    }

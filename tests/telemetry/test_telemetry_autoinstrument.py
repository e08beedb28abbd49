"""scorewatch under the real `opentelemetry-instrument` (opentelemetry-distro's SDK set-up).

- `opentelemetry-instrument python app.py` turns scorewatch's telemetry on in an application
  through the `opentelemetry_instrumentor` entry point, exporting through the providers the
  launcher set up (their resource carries `telemetry.auto.version`);
- `opentelemetry-instrument scorewatch serve --config FILE` parses, and serve joins those
  providers instead of building a second pipeline: every run span arrives once, through them,
  and `/metrics` still answers from the same MeterProvider.

The entry points come from pyproject.toml. When the installed scorewatch metadata predates them
(an editable install made before they were added), an equivalent `.dist-info` holding exactly
pyproject's entry points is put on PYTHONPATH, so the launcher finds them the way it finds any
installed distribution's.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import textwrap
import tomllib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from otlp_receiver import OtlpReceiver
from serve_support import ServeProcess, write_config

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
LAUNCHER = BIN / "opentelemetry-instrument"


def _declared_entry_points() -> dict[str, dict[str, str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared: dict[str, dict[str, str]] = project["entry-points"]
    return declared


def _entry_point_path(tmp_path: Path) -> list[str]:
    declared = _declared_entry_points()
    assert "scorewatch" in declared["opentelemetry_instrumentor"]
    installed = {
        (ep.group, ep.name) for ep in importlib.metadata.distribution("scorewatch").entry_points
    }
    missing = {
        group: entries
        for group, entries in declared.items()
        if any((group, name) not in installed for name in entries)
    }
    if not missing:
        return []
    info = tmp_path / "entry_points" / "scorewatch_entry_points-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: scorewatch-entry-points\nVersion: 0\n", encoding="utf-8"
    )
    lines = []
    for group, entries in missing.items():
        lines.append(f"[{group}]")
        lines.extend(f"{name} = {value}" for name, value in entries.items())
        lines.append("")
    (info / "entry_points.txt").write_text("\n".join(lines), encoding="utf-8")
    return [str(info.parent)]


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as running:
        yield running


def _environment(receiver: OtlpReceiver, tmp_path: Path) -> dict[str, str]:
    if not LAUNCHER.exists():
        pytest.fail("opentelemetry-instrument is not installed (dev dependency)")
    path = [str(ROOT / "src"), *_entry_point_path(tmp_path)]
    if os.environ.get("PYTHONPATH"):
        path.append(os.environ["PYTHONPATH"])
    return {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join(path),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "OTEL_SERVICE_NAME": "auto-instrumented",
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.grpc_endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
        "OTEL_METRIC_EXPORT_INTERVAL": "500",
        "OTEL_BSP_SCHEDULE_DELAY": "200",
        "OTEL_BLRP_SCHEDULE_DELAY": "200",
    }


APP = textwrap.dedent(
    """
    import scorewatch as sw

    # No telemetry call here: opentelemetry-instrument turns it on.
    scorer = sw.create_scorer(id="auto-quality", description="d").generate_score(
        lambda ctx: ctx.run.output
    )
    for score in (0.25, 0.75):
        scorer.run_sync(output=score, target="app-agent")
    print("scored", flush=True)
    """
)


def test_opentelemetry_instrument_turns_on_scorewatch_in_an_application(
    receiver: OtlpReceiver, tmp_path: Path
) -> None:
    app = tmp_path / "app.py"
    app.write_text(APP, encoding="utf-8")
    done = subprocess.run(
        [str(LAUNCHER), "python", str(app)],
        env=_environment(receiver, tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "scored" in done.stdout
    receiver.wait_for(
        lambda r: (
            len(r.spans_named("evaluation auto-quality")) == 2
            and len(r.log_records("gen_ai.evaluation.result")) == 2
            and r.metric_points("scorewatch.evaluation.score")
        ),
        timeout=30,
    )
    runs = receiver.spans_named("evaluation auto-quality")
    # Exported by the launcher's providers (the SDK configurator marks their resource).
    assert all("telemetry.auto.version" in span.resource for span in runs)
    assert {span.resource["service.name"] for span in runs} == {"auto-instrumented"}
    scores = {r.attributes["gen_ai.evaluation.score.value"] for r in receiver.log_records()}
    assert scores == {0.25, 0.75}


SERVE_CONFIG = """\
[[scorers]]
id = "length"
factory = "sw_test_scorers:make_length_scorer"

[telemetry]
service_name = "ignored-when-joining"
"""


def test_opentelemetry_instrument_scorewatch_serve_joins_its_providers(
    receiver: OtlpReceiver, tmp_path: Path
) -> None:
    config = write_config(tmp_path / "serve", SERVE_CONFIG)
    process = ServeProcess(
        config, env=_environment(receiver, tmp_path), command=(str(LAUNCHER), "scorewatch")
    )
    try:
        process.wait_listening()
        with httpx.Client(base_url=process.url, timeout=30) as client:
            for output in ("short", "a longer output"):
                response = client.post(
                    "/v1/scores",
                    params={"wait": "true"},
                    json={"scorers": ["length"], "input": "q", "output": output, "target": "svc"},
                )
                assert response.json().get("results", [{}])[0].get("status") == "success", (
                    response.text
                )
            metrics = client.get(
                "/metrics", params={"name[]": "scorewatch_evaluation_score_count"}
            ).text
        assert 'scorewatch_evaluation_score_count{gen_ai_evaluation_name="length"' in metrics
        assert process.terminate() == 0
    finally:
        process.kill()
    assert "ambiguous option" not in process.stderr()
    receiver.wait_for(lambda r: len(r.spans_named("evaluation length")) >= 2, timeout=30)
    runs = receiver.spans_named("evaluation length")
    assert len(runs) == 2  # one pipeline: each span exported once
    assert all("telemetry.auto.version" in span.resource for span in runs)
    assert {span.resource["service.name"] for span in runs} == {"auto-instrumented"}


APP_WITH_ITS_OWN_SDK = textwrap.dedent(
    """
    import json, urllib.request
    from opentelemetry import _logs, metrics, trace
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import scorewatch as sw
    from scorewatch import telemetry

    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    reader = InMemoryMetricReader()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    meter_provider = MeterProvider(metric_readers=[reader])
    trace.set_tracer_provider(tracer_provider)
    metrics.set_meter_provider(meter_provider)
    _logs.set_logger_provider(logger_provider)

    handle = telemetry.configure(prometheus="127.0.0.1:0")
    scorer = sw.create_scorer(id="joined", description="d").generate_score(lambda ctx: 0.5)
    scorer.run_sync(output="x")
    with urllib.request.urlopen(handle.prometheus_url) as response:
        scraped = response.read().decode()
    handle.shutdown()
    scorer.run_sync(output="y")  # no longer observed
    # The application's MeterProvider was left running: its reader still collects.
    points = [
        m.name
        for rm in reader.get_metrics_data().resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
    ]
    print(json.dumps({
        "reused": handle.reused_providers,
        "same": [handle.tracer_provider is tracer_provider, handle.meter_provider is meter_provider,
                 handle.logger_provider is logger_provider],
        "spans": [s.name for s in spans.get_finished_spans()],
        "events": len(logs.get_finished_logs()),
        "metrics": sorted(set(points)),
        "scraped": "scorewatch_evaluation_score_count" in scraped,
    }))
    """
)


def test_configure_joins_the_providers_an_application_set_up(tmp_path: Path) -> None:
    script = tmp_path / "app.py"
    script.write_text(APP_WITH_ITS_OWN_SDK, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(
        PYTHONPATH=os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")]),
        LITELLM_LOCAL_MODEL_COST_MAP="True",
    )
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["reused"] is True and report["same"] == [True, True, True]
    # The run's span and event went through the application's own processors (one pipeline);
    # the run after shutdown is not observed any more, and the application's providers still
    # run (shutdown left them to their owner).
    assert sorted(report["spans"]) == ["evaluation joined", "evaluation.step generate_score"]
    assert report["events"] == 1
    assert "scorewatch.evaluation.score" in report["metrics"]
    assert report["scraped"] is True  # /metrics from a reader added to the app's provider

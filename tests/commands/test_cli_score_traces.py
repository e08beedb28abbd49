"""`scorewatch score-traces` end to end: Collector `file` exporter files written from real
instrumented spans (the official GenAI instrumentation of an `openai` client talking to the
loopback server), plain and gzipped, scored by the command in a subprocess with a judge on the
loopback server; rows in a SQLite sink name the evaluated spans."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan

from otlp_receiver import OtlpReceiver
from scorewatch.live import SqliteSink
from scorewatch.testing.batch_server import BatchStandInServer
from scorewatch.testing.judge_server import LoopbackJudgeServer
from traces_support import order_agent_spans, order_claims_judge, otlp_json

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
PYTHONPATH = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
SECRET = "sk-loopback-score-traces-5521"

SCORERS_FILE = """
[[scorers]]
id = "tool-order"
kind = "tool-call-accuracy-code"
options = { expected_tool_order = ["lookup_order", "notify_customer"] }
"""


def scorewatch(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    environment.update(PYTHONPATH=PYTHONPATH, LITELLM_LOCAL_MODEL_COST_MAP="True", **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "scorewatch", "score-traces", *args],
        capture_output=True,
        text=True,
        env=environment,
        timeout=timeout,
        cwd=ROOT,
    )


def _ids(span: ReadableSpan) -> tuple[str, str]:
    context = span.get_span_context()
    assert context is not None
    return f"{context.trace_id:032x}", f"{context.span_id:016x}"


@dataclass(frozen=True)
class Traces:
    """Two agent runs with content (the second split across the two files) and the model
    calls of a third run made with content capture off."""

    plain: Path
    gzipped: Path
    agents: list[ReadableSpan]
    chats: list[ReadableSpan]
    dark_chats: list[ReadableSpan]


def _write(path: Path, spans: list[ReadableSpan], *, compressed: bool) -> Path:
    # The file exporter writes one export request per line; here each holds one span.
    text = "".join(otlp_json([span]) + "\n" for span in spans).encode()
    path.write_bytes(gzip.compress(text) if compressed else text)
    return path


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Traces:
    folder = tmp_path_factory.mktemp("traces")
    spans = order_agent_spans(2, content=True)
    dark = [s for s in order_agent_spans(1, content=False) if s.name.startswith("chat")]
    first = spans[0].get_span_context()
    assert first is not None
    one = [s for s in spans if s.get_span_context().trace_id == first.trace_id]
    two = [s for s in spans if s not in one]
    half = len(two) // 2
    return Traces(
        plain=_write(folder / "traces-1.json", [*one, *two[:half]], compressed=False),
        gzipped=_write(folder / "traces-2.json.gz", [*two[half:], *dark], compressed=True),
        agents=[s for s in spans if s.name.startswith("invoke_agent")],
        chats=[s for s in spans if s.name.startswith("chat")],
        dark_chats=dark,
    )


def _judge_args(judge: LoopbackJudgeServer) -> list[str]:
    return [
        "--scorer",
        "faithfulness",
        "--model",
        "openai/loopback-judge",
        "--model-option",
        f"api_base={judge.base_url}",
        "--model-option",
        f"api_key={SECRET}",
        "--model-option",
        "timeout=10",
    ]


def test_plain_and_gzipped_files_scored_into_sqlite_rows(traces: Traces, tmp_path: Path) -> None:
    scorers = tmp_path / "scorers.toml"
    scorers.write_text(SCORERS_FILE, encoding="utf-8")
    db, out = tmp_path / "scores.db", tmp_path / "results.jsonl"
    with LoopbackJudgeServer(order_claims_judge) as judge:
        done = scorewatch(
            str(traces.plain),
            str(traces.gzipped),
            "--scorers",
            str(scorers),
            *_judge_args(judge),
            "--sqlite",
            str(db),
            "--out",
            str(out),
            "--threshold",
            "faithfulness=0.9",
        )
        judged = len(judge.requests)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    # 2 agent runs of 5 spans and 2 model calls without content, one span per export request.
    assert lines[0] == "read 2 file(s): 12 export request(s), 12 span(s)"
    assert lines[1] == (
        "selected 8 span(s): 2 scored, 6 skipped (nested 4, no_content 2); 4 not selected"
    )
    table = {line.split()[0]: line.split() for line in lines[2:] if line}
    assert table["faithfulness-scorer"][1:3] == ["2", "1.000"]
    assert table["tool-order"][1:3] == ["2", "1.000"]
    # Not a terminal: the progress is plain lines on stderr, ending at 2 of 2 spans.
    assert "2/2 spans" in done.stderr and "\r" not in done.stderr
    assert judged == 6  # claims, verdicts and reason per agent span; none for other spans

    expected = {_ids(agent) for agent in traces.agents}
    rows = SqliteSink(db).query(limit=100)
    assert len(rows) == 4
    assert {(row["traceId"], row["spanId"]) for row in rows} == expected
    assert {row["scorerId"] for row in rows} == {"faithfulness-scorer", "tool-order"}
    assert all(row["score"] == 1 and row["status"] == "success" for row in rows)
    assert {row["entityId"] for row in rows} == {"shop-agent"}
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert {(r["trace_id"], r["span_id"]) for r in records} == expected
    assert {r["span_name"] for r in records} == {"invoke_agent shop-agent"}
    assert SECRET not in out.read_text() + done.stdout + done.stderr
    assert all(SECRET not in json.dumps(row) for row in rows)


def test_malformed_line_stops_before_scoring_unless_skipped(traces: Traces, tmp_path: Path) -> None:
    good = traces.plain.read_text().splitlines()
    broken = tmp_path / "broken.json"
    broken.write_text("\n".join([good[0], '{"resourceSpans": [', *good[1:]]) + "\n")
    # A gzip stream cut short (a Collector killed mid-write): the lines before the cut count.
    whole = traces.gzipped.read_bytes()
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(whole[: len(whole) - 40])
    out = tmp_path / "results.jsonl"
    with LoopbackJudgeServer(order_claims_judge) as judge:
        stopped = scorewatch(str(broken), str(cut), *_judge_args(judge), "--out", str(out))
        assert judge.requests == []
        assert stopped.returncode == 2
        assert f"scorewatch score-traces: {broken}:2: not JSON" in stopped.stderr
        assert not out.exists()

        skipped = scorewatch(
            str(broken), str(cut), *_judge_args(judge), "--out", str(out), "--skip-malformed"
        )
    assert skipped.returncode == 0, skipped.stdout + skipped.stderr
    assert "skipped 2 malformed line(s):" in skipped.stderr
    assert f"  {broken}:2: not JSON" in skipped.stderr
    assert f"  {cut}: cannot read" in skipped.stderr
    assert skipped.stdout.startswith("read 2 file(s): ")
    assert ", 2 malformed line(s) skipped" in skipped.stdout.splitlines()[0]
    # The first trace is whole in the plain file: its agent is scored.
    whole_trace = next(_ids(a) for a in traces.agents if _ids(a)[0] in good[0])
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert whole_trace in {(r["trace_id"], r["span_id"]) for r in records}


def test_nothing_scored_fails_and_says_why(traces: Traces, tmp_path: Path) -> None:
    dark = _write(tmp_path / "dark.json", traces.dark_chats, compressed=False)
    done = scorewatch(str(dark), "--scorer", "completeness", "--format", "json")
    assert done.returncode == 1, done.stderr
    summary = json.loads(done.stdout)
    assert summary["traces"]["skipped"] == {"no_content": 2}
    assert summary["traces"]["scored"] == 0 and summary["scorers"] == {}
    assert summary["passed"] is False
    assert summary["problems"][0].startswith("nothing scored: no selected span had content")


def test_spans_lost_to_the_assembly_bounds_fail_the_run(traces: Traces) -> None:
    # One trace held at a time: each new trace evicts the one before, agents unscored.
    done = scorewatch(
        str(traces.plain), str(traces.gzipped), "--scorer", "completeness", "--max-traces", "1"
    )
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[1] == (
        "selected 8 span(s): 0 scored, 2 skipped (no_content 2), 6 lost (max_traces 6); "
        "4 not selected"
    )
    assert lines[2] == "evicted traces: max_traces 2"
    assert lines[-1] == (
        "6 selected span(s) lost to the assembly bounds (max_traces 6); raise --max-traces"
    )


def test_selection_options_select_file_and_thresholds(traces: Traces, tmp_path: Path) -> None:
    chats = {_ids(span) for span in traces.chats}
    out = tmp_path / "results.jsonl"
    by_options = scorewatch(
        str(traces.plain), str(traces.gzipped), "--scorer", "completeness",
        "--operation", "chat", "--nested", "--out", str(out), "--format", "json",
    )  # fmt: skip
    assert by_options.returncode == 0, by_options.stderr
    counts = json.loads(by_options.stdout)["traces"]
    assert counts["scored"] == 4 and counts["skipped"] == {"no_content": 2}
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert {(r["trace_id"], r["span_id"]) for r in records} == chats

    select = tmp_path / "scorewatch.toml"
    select.write_text('[[traces.select]]\noperation = ["chat"]\nnested = true\n')
    by_file = scorewatch(
        str(traces.plain), str(traces.gzipped), "--scorer", "completeness",
        "--select", str(select), "--out", str(out), "--threshold", "completeness=1.01",
    )  # fmt: skip
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert {(r["trace_id"], r["span_id"]) for r in records} == chats
    # The same runs; the threshold cannot be met, so the command fails as eval does.
    assert by_file.returncode == 1
    assert "threshold failed: completeness-scorer mean 0.250 < 1.01" in by_file.stdout

    select.write_text('[[traces.select]]\noperation = "chat"\n')
    refused = scorewatch(str(traces.plain), "--scorer", "completeness", "--select", str(select))
    assert refused.returncode == 2
    assert "traces.select[0]: operation: Input should be a valid list" in refused.stderr
    missing = scorewatch(str(tmp_path / "nowhere.json"), "--scorer", "completeness")
    assert missing.returncode == 2 and "nowhere.json: no such file" in missing.stderr


def test_otel_events_are_emitted_in_the_evaluated_spans_context(traces: Traces) -> None:
    with OtlpReceiver(grpc_enabled=False) as receiver:
        endpoint = receiver.http_endpoint
        done = scorewatch(
            str(traces.plain), str(traces.gzipped), "--scorer", "completeness", "--otel",
            env={
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{endpoint}/v1/traces",
                "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": f"{endpoint}/v1/logs",
                "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": f"{endpoint}/v1/metrics",
            },
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        events = receiver.log_records("gen_ai.evaluation.result")
        runs = receiver.spans_named("evaluation completeness-scorer")
    assert {(e.trace_id, e.span_id) for e in events} == {_ids(a) for a in traces.agents}
    assert len(events) == 2
    assert {span.attributes["scorewatch.score_source"] for span in runs} == {"trace"}
    assert {span.resource["service.name"] for span in runs} == {"scorewatch-score-traces"}


def test_estimate_counts_the_judge_calls_and_calls_none(traces: Traces, tmp_path: Path) -> None:
    scorers = tmp_path / "scorers.toml"
    scorers.write_text(SCORERS_FILE, encoding="utf-8")
    with LoopbackJudgeServer(order_claims_judge) as judge:
        done = scorewatch(
            str(traces.plain), "--scorers", str(scorers), *_judge_args(judge),
            "--estimate", "--format", "json",
        )  # fmt: skip
        assert judge.requests == []
    assert done.returncode == 0, done.stdout + done.stderr
    estimate = json.loads(done.stdout[done.stdout.index("{") :])["estimate"]
    assert estimate["scorers"]["tool-order"]["judge_calls"] == 0
    # claims, verdicts and reason per agent span, as the real run makes (6 for 2 spans).
    assert estimate["scorers"]["faithfulness-scorer"]["judge_calls"] == 6


def test_batch_scores_the_same_spans_through_the_batch_api(traces: Traces, tmp_path: Path) -> None:
    """`--batch`: the judge calls go through the Batch API stand-in, one batch per scorer step
    over both agent spans, and the spans get the scores a direct run gives them."""
    out = tmp_path / "results.jsonl"
    with BatchStandInServer(order_claims_judge) as judge:
        done = scorewatch(
            str(traces.plain),
            str(traces.gzipped),
            *_judge_args(judge),
            "--out",
            str(out),
            "--batch",
            "--batch-poll",
            "0.1",
        )
        batches = [batch["request_counts"]["total"] for batch in judge.batches.values()]
        direct_calls = [r for r in judge.requests if r.path.endswith("/chat/completions")]
    assert done.returncode == 0, done.stdout + done.stderr
    assert batches == [2, 2, 2] and direct_calls == []
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert {(r["trace_id"], r["span_id"]) for r in records} == {
        _ids(agent) for agent in traces.agents
    }
    assert all(r["score"] == 1 and r["judge_calls"] == 3 for r in records)
    assert "batch: 3 round(s); 6 request(s) submitted" in done.stderr

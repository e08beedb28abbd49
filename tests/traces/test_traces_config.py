"""The `[traces]` table of `scorewatch.toml`: selection, scorers, buffer bounds, listener."""

from __future__ import annotations

import asyncio
import tomllib
from pathlib import Path

import pytest

from scorewatch.server.config.file import ConfigError, ServeConfig
from scorewatch.server.http.auth import resolve_token
from scorewatch.server.intake.in_process import InProcessIntake
from scorewatch.server.intake.otlp_traces import TracesIntake, build_traces_intake

pytestmark = pytest.mark.unit

BASE = """
[[scorers]]
id = "length"
kind = "completeness"

[[scorers]]
id = "other"
kind = "completeness"
"""


def _config(extra: str) -> ServeConfig:
    return ServeConfig.from_mapping(tomllib.loads(BASE + extra))


def test_the_traces_table_reads_selectors_scorers_and_bounds() -> None:
    config = _config(
        """
        [traces]
        listen = "127.0.0.1:4318"
        scorers = ["length"]

        [[traces.select]]
        operation = ["invoke_agent"]
        service = ["shop"]

        [traces.buffer]
        max_traces = 100
        quiet_period_s = 2
        parent_wait_s = 10
        max_age_s = 30
        """
    )
    traces = config.traces
    assert traces is not None
    assert (traces.host, traces.port) == ("127.0.0.1", 4318)
    assert traces.scorers == ["length"]
    assert traces.select[0].operation == ["invoke_agent"]
    assert traces.buffer.max_traces == 100 and traces.buffer.max_age_s == 30
    assert _config("").traces is None  # no table: no trace intake


def test_session_scorers_score_sessions_only_and_the_rest_score_single_runs() -> None:
    config = _config('[traces.sessions]\nscorers = ["other"]\nidle_s = 60\nmax_turns = 5')
    assert config.traces is not None and config.traces.sessions is not None
    assert config.traces.sessions.max_turns == 5 and config.traces.sessions.idle_s == 60
    inner = InProcessIntake({}, sinks=[], max_concurrency=1, max_queue=1)
    intake = build_traces_intake(config, inner)
    assert isinstance(intake, TracesIntake)
    assert intake._scorers == ("length",) and intake._session_scorers == ("other",)
    assert intake.stats()["traces_sessions_open"] == 0


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ('[traces]\nscorers = ["nope"]', "traces.scorers names unknown scorer ids 'nope'"),
        ('[traces]\nlisten = "4318"', "traces.listen: expected HOST:PORT"),
        ("[traces.buffer]\nmax_age_s = 10\nquiet_period_s = 5\nparent_wait_s = 5",
         "traces.buffer: max_age_s (10) must be greater than"),
        ('[[traces.select]]\noperations = ["chat"]', "traces.select[0].operations: unknown key"),
        ("[traces]\nmax_decoded_bytes = 10", "traces.max_decoded_bytes"),
        ('[traces.sessions]\nscorers = ["nope"]',
         "traces.sessions.scorers names unknown scorer ids 'nope'"),
        ('[traces.sessions]\nscorers = ["length"]\nidle_s = 0', "traces.sessions.idle_s"),
        ("[traces.sessions]\nidle_s = 5", "traces.sessions.scorers"),
    ],
)  # fmt: skip
def test_a_bad_traces_table_is_refused_by_key(extra: str, problem: str) -> None:
    with pytest.raises(ConfigError) as raised:
        _config(extra)
    assert any(problem in line for line in raised.value.problems), raised.value.problems


def test_a_public_traces_listener_needs_the_token() -> None:
    config = _config('[traces]\nlisten = "0.0.0.0:4318"')
    with pytest.raises(ConfigError, match="without an auth token"):
        resolve_token(config, {})
    with_token = _config('[server]\nauth_token_env = "SW_T"\n[traces]\nlisten = "0.0.0.0:4318"')
    assert resolve_token(with_token, {"SW_T": "token"}) == "token"
    inner = InProcessIntake({}, sinks=[], max_concurrency=1, max_queue=1)
    assert isinstance(build_traces_intake(config, inner), TracesIntake)
    assert build_traces_intake(_config(""), inner) is inner


async def test_shutdown_admits_the_spans_still_held_and_counts_them() -> None:
    import json

    import scorewatch as sw
    from scorewatch.live.entry import LiveScorerEntry
    from scorewatch.sinks.callback import CallbackSink
    from scorewatch.sinks.record import ScoreRecord
    from scorewatch.traces import SpanRecord

    stored: list[ScoreRecord] = []
    scorer = sw.create_scorer(id="length", description="len").generate_score(lambda ctx: 1.0)
    inner = InProcessIntake(
        {"length": LiveScorerEntry(scorer)},
        sinks=[CallbackSink(stored.append)],
        max_concurrency=2,
        max_queue=10,
    )
    config = _config("[traces]\n[traces.buffer]\nquiet_period_s = 100\nmax_age_s = 500")
    assert config.traces is not None
    intake = TracesIntake(inner, config.traces)
    messages = {
        "gen_ai.input.messages": json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": "Where is order 7?"}]}]
        ),
        "gen_ai.output.messages": json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": "Shipped."}]}]
        ),
    }
    agent = SpanRecord(
        trace_id="ab" * 16,
        span_id="cd" * 8,
        name="invoke_agent shop",
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "shop",
            **messages,
        },
    )
    own = SpanRecord(trace_id="ab" * 16, span_id="ef" * 8, name="x", scope="scorewatch.telemetry")
    offer = await intake.receive(lambda: [agent, own, agent], "127.0.0.1")
    assert offer.refused is None and offer.dropped == 1  # the repeat is refused
    assert await intake.release() == 0  # not quiet yet
    assert await intake.shutdown(5) == 0
    (result,) = stored
    assert (result.call.trace_id, result.call.span_id) == ("ab" * 16, "cd" * 8)
    assert result.call.score_source == "trace" and result.call.target == "shop"
    counts = intake.trace_counts()
    assert counts.runs == {"admitted": 1}
    assert counts.spans_dropped == {"duplicate": 1, "own": 1}
    stats = intake.stats()
    assert stats["traces_runs_admitted"] == 1 and stats["scored"] == 1
    closed = await intake.receive(lambda: [agent], "127.0.0.1")
    assert closed.refused == "shutdown" and closed.retry_later  # nothing kept: sent again
    assert intake.stats()["traces_requests_refused_shutdown"] == 1
    await intake.aclose()


async def test_shutdown_scores_the_sessions_still_open_and_counts_them_as_flushed() -> None:
    import json

    import scorewatch as sw
    from scorewatch.live.entry import LiveScorerEntry
    from scorewatch.sinks.callback import CallbackSink
    from scorewatch.sinks.record import ScoreRecord
    from scorewatch.traces import SpanRecord

    stored: list[ScoreRecord] = []
    turns = sw.create_scorer(id="turns", description="turns").generate_score(
        lambda ctx: float(len(ctx.run.output))
    )
    inner = InProcessIntake(
        {"turns": LiveScorerEntry(turns)},
        sinks=[CallbackSink(stored.append)],
        max_concurrency=2,
        max_queue=10,
    )
    config = ServeConfig.from_mapping(
        tomllib.loads(
            '[[scorers]]\nid = "turns"\nkind = "completeness"\n'
            "[traces]\n[traces.buffer]\nquiet_period_s = 0\n"
            '[traces.sessions]\nscorers = ["turns"]\nidle_s = 1000'
        )
    )
    assert config.traces is not None
    intake = TracesIntake(inner, config.traces, scorer_ids=["turns"])

    def said(role: str, text: str) -> str:
        return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])

    spans = [
        SpanRecord(
            trace_id=f"{number:032x}",
            span_id=f"{number:016x}",
            name="invoke_agent shop",
            start_ns=number,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "shop",
                "gen_ai.conversation.id": "ann",
                "gen_ai.input.messages": said("user", f"question {number}"),
                "gen_ai.output.messages": said("assistant", f"answer {number}"),
            },
        )
        for number in (2, 1)  # the second turn arrives first
    ]
    assert (await intake.receive(lambda: spans, "127.0.0.1")).refused is None
    assert await intake.release() == 0  # every scorer scores sessions: no single run admitted
    assert intake.stats()["traces_sessions_open"] == 1
    assert await intake.shutdown(5) == 0
    (session,) = stored
    assert session.call.conversation_id == "ann" and session.score == 2
    assert [m["content"]["content"] for m in session.call.output] == ["answer 1", "answer 2"]
    counts = intake.trace_counts()
    assert counts.sessions == {"closed_flush": 1}
    assert counts.runs == {"session_only": 2, "admitted": 1}
    await intake.aclose()


BLOCKING_SCORER = """
import asyncio
import threading

import scorewatch as sw

# Set from the test's thread while serve scores on its own loop thread: a threading.Event,
# since an asyncio.Event may only be set from the loop that waits on it.
release = threading.Event()


def make_blocking_scorer():
    async def wait(ctx):
        while not release.is_set():
            await asyncio.sleep(0.01)
        return 1.0

    return sw.create_scorer(id="blocking", description="Waits for release").generate_score(wait)
"""


async def test_a_full_scoring_queue_answers_429_so_the_exporter_retries(tmp_path: Path) -> None:
    import sys

    import httpx
    from google.rpc.status_pb2 import Status
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
    )

    from scorewatch.core.call import AgentCall
    from scorewatch.server.http.app import build_service, create_app, shutdown_service
    from scorewatch.server.intake.interface import ScoreItem

    (tmp_path / "sw_blocking_scorer.py").write_text(BLOCKING_SCORER, encoding="utf-8")
    document = {
        "scorers": [{"id": "blocking", "factory": "sw_blocking_scorer:make_blocking_scorer"}],
        "live": {"max_queue": 1, "max_concurrency": 1},
        "sinks": {"sqlite": False},
        "telemetry": {"prometheus": False, "otlp": False},
        "traces": {},
    }
    service = build_service(ServeConfig.from_mapping(document, base_dir=tmp_path))
    module = sys.modules["sw_blocking_scorer"]
    transport = httpx.ASGITransport(app=create_app(service))
    body = ExportTraceServiceRequest().SerializeToString()
    headers = {"Content-Type": "application/x-protobuf"}
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://sw") as client:
            items = [
                ScoreItem(AgentCall(input="q", output="a", target="t", run_id=str(i)))
                for i in (1, 2)
            ]
            await service.intake.admit(items[:1])
            for _ in range(200):
                if service.stats()["in_flight"] == 1:
                    break
                await asyncio.sleep(0.01)
            await service.intake.admit(items[1:])  # one running, one waiting: the queue is full
            assert service.intake.saturated()
            busy = await client.post("/v1/traces", content=body, headers=headers)
            assert busy.status_code == 429 and busy.headers["retry-after"] == "1"
            assert Status.FromString(busy.content).code == 8  # RESOURCE_EXHAUSTED
            assert service.stats()["traces_requests_refused_busy"] == 1
            module.release.set()
            for _ in range(3000):  # a loaded machine may take seconds to run the next item
                if not service.intake.saturated():
                    break
                await asyncio.sleep(0.01)
            assert not service.intake.saturated()
            fine = await client.post("/v1/traces", content=body, headers=headers)
            assert fine.status_code == 200, (fine.headers, fine.content)
            assert ExportTraceServiceResponse.FromString(fine.content) == (
                ExportTraceServiceResponse()
            )
    finally:
        module.release.set()
        await shutdown_service(service)
        sys.modules.pop("sw_blocking_scorer", None)


async def test_a_failed_assembly_round_is_logged_without_its_message_and_the_next_round_runs(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import scorewatch as sw
    from scorewatch.live.entry import LiveScorerEntry

    scorer = sw.create_scorer(id="length", description="len").generate_score(lambda ctx: 1.0)
    inner = InProcessIntake(
        {"length": LiveScorerEntry(scorer)}, sinks=[], max_concurrency=1, max_queue=10
    )
    config = _config("[traces]\nassembly_interval = 0.01")
    assert config.traces is not None
    intake = TracesIntake(inner, config.traces)
    rounds: list[int] = []

    async def failing_release(*, flush: bool = False) -> int:
        rounds.append(1)
        if len(rounds) == 1:
            raise ValueError("the agent said: my card is 4111 1111 1111 1111")
        return 0

    monkeypatch.setattr(intake, "release", failing_release)
    with caplog.at_level("ERROR", logger="scorewatch"):
        assert (await intake.receive(list, "127.0.0.1")).dropped == 0  # starts the assembly
        for _ in range(200):
            if len(rounds) >= 2:
                break
            await asyncio.sleep(0.01)
    await intake.shutdown(1)
    await inner.aclose()
    assert len(rounds) >= 2, "the assembly stopped after the failed round"
    (line,) = [r.getMessage() for r in caplog.records if "assembly round failed" in r.getMessage()]
    assert "ValueError at " in line and "test_traces_config.py:" in line
    assert "4111" not in caplog.text and "card" not in caplog.text

"""Span tree, attributes, events and content gating, checked with in-memory exporters."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

import scorewatch as sw
from scorewatch import telemetry
from scorewatch.judge import JudgeProviderError, JudgeReply, JudgeRequest, RetryPolicy
from scorewatch.telemetry import names
from scorewatch.testing import ScriptedJudge
from telemetry_helpers import InMemoryTelemetry, in_memory_telemetry, prompt_scorer, verdicts

pytestmark = pytest.mark.unit

NO_WAIT = RetryPolicy(max_retries=2, base_delay=0.0, jitter=False)


def _children(sink: InMemoryTelemetry, parent: ReadableSpan) -> list[ReadableSpan]:
    parent_id = parent.context.span_id
    return sorted(
        (s for s in sink.spans() if s.parent is not None and s.parent.span_id == parent_id),
        key=lambda s: s.start_time or 0,
    )


def _all_text(sink: InMemoryTelemetry) -> str:
    """Every attribute and event value exported, as one string, to look for leaked content."""
    parts: list[str] = []
    for span in sink.spans():
        parts.append(span.name)
        parts.extend(str(v) for v in (span.attributes or {}).values())
        parts.append(str(span.status.description))
        for event in span.events:
            parts.extend(str(v) for v in (event.attributes or {}).values())
    for record in sink.logs():
        parts.extend(str(v) for v in (record.log_record.attributes or {}).values())
        parts.append(str(record.log_record.body))
    return "\n".join(parts)


async def test_span_tree_and_attributes_of_a_successful_run() -> None:
    with in_memory_telemetry() as sink:
        judge = ScriptedJudge(
            [
                JudgeReply(
                    text=verdicts(3),
                    usage=sw.judge.JudgeUsage(
                        input_tokens=100, output_tokens=7, cached_input_tokens=40, total_tokens=107
                    ),
                    response_model="judge-2025",
                    response_id="resp-1",
                    server_address="127.0.0.1",
                    server_port=8080,
                ),
                "the reason",
            ],
            model_id="gpt-judge",
            provider="openai",
        )
        result = await prompt_scorer(judge).run(
            input="q", output="an answer", run_id="run-1", target="support-agent"
        )

        run_span = sink.span("evaluation quality")
        scorer_version = result.metadata["scorerVersion"]  # type: ignore[index]
        assert run_span.parent is None
        assert run_span.kind == SpanKind.INTERNAL
        assert dict(run_span.attributes or {}) == {
            "gen_ai.operation.name": "evaluation",
            "gen_ai.evaluation.name": "quality",
            "scorewatch.scorer.id": "quality",
            "scorewatch.scorer.name": "quality",
            "scorewatch.scorer.version": scorer_version,
            "scorewatch.run_id": "run-1",
            "scorewatch.score_source": "direct",
            "scorewatch.target": "support-agent",
            "scorewatch.score": 0.75,
        }
        assert run_span.status.status_code == StatusCode.UNSET
        assert result.score_trace_id == format(run_span.context.trace_id, "032x")

        steps = _children(sink, run_span)
        assert [s.name for s in steps] == [
            "evaluation.step preprocess",
            "evaluation.step analyze",
            "evaluation.step generate_score",
            "evaluation.step generate_reason",
        ]
        assert [dict(s.attributes or {}) for s in steps] == [
            {"scorewatch.step": "preprocess", "scorewatch.step.type": "function"},
            {"scorewatch.step": "analyze", "scorewatch.step.type": "prompt"},
            {"scorewatch.step": "generate_score", "scorewatch.step.type": "function"},
            {"scorewatch.step": "generate_reason", "scorewatch.step.type": "prompt"},
        ]
        assert [len(_children(sink, s)) for s in steps] == [0, 1, 0, 1]

        (chat,) = _children(sink, steps[1])
        assert chat.name == "chat gpt-judge"
        assert chat.kind == SpanKind.CLIENT
        assert dict(chat.attributes or {}) == {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-judge",
            "scorewatch.judge.model_route": "gpt-judge",
            "gen_ai.response.model": "judge-2025",
            "gen_ai.response.id": "resp-1",
            "gen_ai.response.finish_reasons": ("stop",),
            "gen_ai.usage.input_tokens": 100,
            "gen_ai.usage.output_tokens": 7,
            "gen_ai.usage.cache_read.input_tokens": 40,
            "server.address": "127.0.0.1",
            "server.port": 8080,
            "scorewatch.step": "analyze",
            "scorewatch.judge.attempt": 1,
            "scorewatch.judge.fallback": False,
        }
        assert all(s.context.trace_id == run_span.context.trace_id for s in sink.spans())

        (event,) = sink.logs()
        record = event.log_record
        assert record.event_name == "gen_ai.evaluation.result"
        assert dict(record.attributes or {}) == {
            "gen_ai.evaluation.name": "quality",
            "gen_ai.evaluation.score.value": 0.75,
            "scorewatch.run_id": "run-1",
            "scorewatch.scorer.version": scorer_version,
        }  # no gen_ai.response.id: the judge's own id ("resp-1") belongs on its chat span
        assert record.span_id == run_span.context.span_id
        assert record.trace_id == run_span.context.trace_id
        assert record.severity_text == "INFO"


async def test_retries_and_fallback_are_one_chat_span_per_attempt() -> None:
    rate_limited = JudgeProviderError("rate limited", code="RATE_LIMITED", retryable=True)
    judge = ScriptedJudge(
        [rate_limited, "not json at all", verdicts(2), "why"],
        retry_policy=NO_WAIT,
    )
    with in_memory_telemetry() as sink:
        await prompt_scorer(judge).run(output="x")
        analyze = sink.span("evaluation.step analyze")
        attempts = _children(sink, analyze)
        assert [s.attributes["scorewatch.judge.attempt"] for s in attempts] == [1, 2, 3]  # type: ignore[index]
        assert [s.attributes["scorewatch.judge.fallback"] for s in attempts] == [  # type: ignore[index]
            False,
            False,
            True,
        ]
        assert attempts[0].status.status_code == StatusCode.ERROR
        assert attempts[0].attributes["error.type"] == "RATE_LIMITED"  # type: ignore[index]
        assert [e.name for e in attempts[0].events] == ["exception"]
        # The unparseable reply was a successful call: the format failure belongs to the step.
        assert attempts[1].status.status_code == StatusCode.UNSET
        assert analyze.status.status_code == StatusCode.UNSET

        assert sink.point(names.METRIC_JUDGE_ATTEMPTS, scorewatch__step="analyze").value == 3
        assert sink.point(names.METRIC_JUDGE_EXECUTIONS, scorewatch__step="analyze").value == 1
        failed_call = sink.point(
            names.METRIC_OPERATION_DURATION, scorewatch__step="analyze", error__type="RATE_LIMITED"
        )
        assert failed_call.count == 1


async def test_failed_run_marks_spans_and_emits_warn_event_without_score() -> None:
    refused = JudgeProviderError("upstream refused", code="PROVIDER_ERROR", status_code=400)
    with in_memory_telemetry() as sink:
        with pytest.raises(sw.ScorerRunError):
            await prompt_scorer(ScriptedJudge([refused])).run(output="x", run_id="r-9")

        run_span = sink.span("evaluation quality")
        assert run_span.status.status_code == StatusCode.ERROR
        assert run_span.attributes["error.type"] == "PROVIDER_ERROR"  # type: ignore[index]
        assert run_span.attributes["scorewatch.failed_step"] == "analyze"  # type: ignore[index]
        assert "scorewatch.score" not in (run_span.attributes or {})
        assert [e.name for e in run_span.events] == ["exception"]

        analyze = sink.span("evaluation.step analyze")
        assert analyze.status.status_code == StatusCode.ERROR
        assert analyze.attributes["error.type"] == "PROVIDER_ERROR"  # type: ignore[index]
        assert sink.spans_named("evaluation.step generate_score") == []
        (chat,) = _children(sink, analyze)
        assert chat.status.status_code == StatusCode.ERROR

        (event,) = sink.logs()
        record = event.log_record
        assert dict(record.attributes or {}) == {
            "gen_ai.evaluation.name": "quality",
            "scorewatch.run_id": "r-9",
            "error.type": "PROVIDER_ERROR",
            "scorewatch.scorer.version": run_span.attributes["scorewatch.scorer.version"],  # type: ignore[index]
        }
        assert record.severity_text == "WARN"
        assert "SECRET" not in _all_text(sink)

        runs = sink.point(names.METRIC_SCORER_RUNS)
        assert runs.attributes == {
            "gen_ai.evaluation.name": "quality",
            "scorewatch.outcome": "failed",
            "scorewatch.failed_step": "analyze",
        }
        assert runs.value == 1
        assert sink.points(names.METRIC_SCORE) == []
        executions = sink.point(names.METRIC_JUDGE_EXECUTIONS)
        assert executions.attributes["scorewatch.status"] == "failed"


async def test_live_run_links_to_the_evaluated_span_and_parents_its_event_there() -> None:
    target_trace = "0af7651916cd43dd8448eb211c80319c"
    target_span = "b7ad6b7169203331"
    with in_memory_telemetry() as sink:
        app_tracer = sink.tracer_provider.get_tracer("app")
        # Even when the worker runs inside some other trace, the run is not its child.
        with app_tracer.start_as_current_span("worker"):
            result = await prompt_scorer(ScriptedJudge([verdicts(1), "ok"])).run(
                output="x",
                score_source="live",
                target_trace_id=target_trace,
                target_span_id=target_span,
            )
        run_span = sink.span("evaluation quality")
        assert run_span.parent is None
        assert format(run_span.context.trace_id, "032x") != target_trace
        (link,) = run_span.links
        assert format(link.context.trace_id, "032x") == target_trace
        assert format(link.context.span_id, "016x") == target_span
        assert run_span.attributes["scorewatch.score_source"] == "live"  # type: ignore[index]
        assert result.score_trace_id == format(run_span.context.trace_id, "032x")

        (event,) = sink.logs()
        assert format(event.log_record.trace_id or 0, "032x") == target_trace
        assert format(event.log_record.span_id or 0, "016x") == target_span


async def test_direct_run_nests_in_the_callers_trace() -> None:
    with in_memory_telemetry() as sink:
        with sink.tracer_provider.get_tracer("app").start_as_current_span("request") as outer:
            await prompt_scorer(ScriptedJudge([verdicts(1), "ok"])).run(output="x")
        run_span = sink.span("evaluation quality")
        assert run_span.parent is not None
        assert run_span.parent.span_id == outer.get_span_context().span_id


class _TracingJudge:
    """A judge that opens a span of its own, as litellm's OpenTelemetry callback would."""

    def __init__(self, tracer: trace.Tracer) -> None:
        self._tracer = tracer
        self._inner = ScriptedJudge([verdicts(2), "fine"])

    @property
    def model_id(self) -> str:
        return "traced-judge"

    @property
    def provider(self) -> str | None:
        return "openai"

    async def complete(self, request: JudgeRequest) -> JudgeReply:
        with self._tracer.start_as_current_span("litellm_request"):
            return await self._inner.complete(request)


async def test_spans_opened_by_the_judge_client_nest_under_the_chat_span() -> None:
    with in_memory_telemetry() as sink:
        judge = _TracingJudge(sink.tracer_provider.get_tracer("litellm"))
        await prompt_scorer(judge).run(output="x")
        inner = sink.spans_named("litellm_request")
        assert len(inner) == 2
        chats = {s.context.span_id: s for s in sink.spans_named("chat traced-judge")}
        assert {s.parent.span_id for s in inner if s.parent} == set(chats)


def _content_attributes(sink: InMemoryTelemetry) -> dict[str, Any]:
    found: dict[str, Any] = {}
    content_keys = {
        names.ATTR_INPUT_MESSAGES,
        names.ATTR_OUTPUT_MESSAGES,
        names.ATTR_SYSTEM_INSTRUCTIONS,
        names.ATTR_RUN_INPUT,
        names.ATTR_RUN_OUTPUT,
        names.ATTR_REASON,
    }
    for span in sink.spans():
        for key, value in (span.attributes or {}).items():
            if key in content_keys:
                found.setdefault(key, value)
    return found


async def _run_for_content(sink: InMemoryTelemetry) -> None:
    judge = ScriptedJudge([verdicts(2), "REASON-TEXT"])
    await prompt_scorer(judge).run(input="USER-QUESTION", output="AGENT-ANSWER")
    assert sink.spans()


async def test_content_is_off_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(names.ENV_CAPTURE_CONTENT, raising=False)
    with in_memory_telemetry() as sink:
        await _run_for_content(sink)
        assert _content_attributes(sink) == {}
        text = _all_text(sink)
        for secret in ("SECRET", "REASON-TEXT", "USER-QUESTION", "AGENT-ANSWER", "strict judge"):
            assert secret not in text
        assert names.ATTR_EVALUATION_EXPLANATION not in (sink.logs()[0].log_record.attributes or {})


async def test_content_opt_in_programmatically(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(names.ENV_CAPTURE_CONTENT, "false")
    with in_memory_telemetry(capture_content=True) as sink:
        await _run_for_content(sink)
        content = _content_attributes(sink)
        assert json.loads(content[names.ATTR_INPUT_MESSAGES])[0]["role"] == "user"
        assert "SECRET-PROMPT" in content[names.ATTR_INPUT_MESSAGES]
        instructions = json.loads(content[names.ATTR_SYSTEM_INSTRUCTIONS])
        assert instructions[0]["type"] == "text"
        assert "You are a strict judge." in instructions[0]["content"]
        output = json.loads(content[names.ATTR_OUTPUT_MESSAGES])
        assert output[0]["role"] == "assistant"
        assert content[names.ATTR_RUN_INPUT] == "USER-QUESTION"
        assert content[names.ATTR_RUN_OUTPUT] == "AGENT-ANSWER"
        assert content[names.ATTR_REASON] == "REASON-TEXT"
        event = sink.logs()[0].log_record
        assert (event.attributes or {})[names.ATTR_EVALUATION_EXPLANATION] == "REASON-TEXT"


@pytest.mark.parametrize(
    ("env", "on_spans", "on_events"),
    [
        ("true", True, True),
        ("SPAN_ONLY", True, False),
        ("event_only", False, True),
        ("Span_And_Event", True, True),
        ("NO_CONTENT", False, False),
        ("nonsense", False, False),
    ],
)
async def test_content_opt_in_by_environment(
    monkeypatch: pytest.MonkeyPatch, env: str, on_spans: bool, on_events: bool
) -> None:
    monkeypatch.setenv(names.ENV_CAPTURE_CONTENT, env)
    with in_memory_telemetry() as sink:
        await _run_for_content(sink)
        assert (names.ATTR_INPUT_MESSAGES in _content_attributes(sink)) is on_spans
        event = sink.logs()[0].log_record
        assert (names.ATTR_EVALUATION_EXPLANATION in (event.attributes or {})) is on_events


async def test_uninstrument_stops_all_output() -> None:
    with in_memory_telemetry() as sink:
        telemetry.uninstrument()
        result = await prompt_scorer(ScriptedJudge([verdicts(1), "ok"])).run(output="x")
        assert sink.spans() == []
        assert sink.logs() == []
        assert result.score_trace_id is None
        assert not telemetry.is_instrumented()


async def test_emit_score_false_suppresses_the_event_only() -> None:
    with in_memory_telemetry() as sink:
        await prompt_scorer(ScriptedJudge([verdicts(1), "ok"])).run(output="x", emit_score=False)
        assert sink.logs() == []
        assert sink.spans_named("evaluation quality")


async def test_concurrent_runs_keep_separate_trees() -> None:
    import asyncio

    with in_memory_telemetry() as sink:
        judge = ScriptedJudge(lambda request: verdicts(2) if request.schema else "ok", delay=0.001)
        scorer = prompt_scorer(judge)
        results = await asyncio.gather(
            *(scorer.run(output=f"x{i}", run_id=f"run-{i}") for i in range(8))
        )
        runs = sink.spans_named("evaluation quality")
        assert len(runs) == 8
        assert len({r.context.trace_id for r in runs}) == 8
        by_trace = {r.context.trace_id: r for r in runs}
        for result in results:
            run_span = next(
                r
                for r in runs
                if r.attributes["scorewatch.run_id"] == result.run_id  # type: ignore[index]
            )
            assert result.score_trace_id == format(run_span.context.trace_id, "032x")
        for span in sink.spans():
            assert span.context.trace_id in by_trace
            if span.name.startswith("evaluation.step"):
                assert span.parent is not None
                assert span.parent.span_id == by_trace[span.context.trace_id].context.span_id
        assert len(sink.logs()) == 8


async def test_a_cancelled_run_closes_its_spans_and_restores_the_callers_context() -> None:
    import asyncio

    with in_memory_telemetry() as sink:
        judge = ScriptedJudge([verdicts(3), "late"], delay=5.0)
        outer = sink.tracer_provider.get_tracer("app")
        with outer.start_as_current_span("request") as request_span:
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.05):
                    await prompt_scorer(judge).run(output="x")
            assert trace.get_current_span() is request_span
        names_seen = {s.name for s in sink.spans()}
        assert {"evaluation quality", "evaluation.step analyze", "chat scripted-judge"} <= (
            names_seen
        )
        for name in ("evaluation quality", "evaluation.step analyze", "chat scripted-judge"):
            assert sink.span(name).status.status_code == StatusCode.ERROR
        # Not a finished run: no evaluation event, no run outcome.
        assert sink.logs() == []
        assert sink.points(names.METRIC_SCORER_RUNS) == []


async def test_the_event_names_the_evaluated_completion_never_the_judges() -> None:
    judge = ScriptedJudge(
        [JudgeReply(text=verdicts(3), response_id="judge-resp-9"), "why"],
        model_id="bedrock/anthropic.claude-3-haiku",
        provider="bedrock",
    )
    with in_memory_telemetry() as sink:
        await prompt_scorer(judge).run(
            output="an answer", target_metadata={"response_id": "chatcmpl-agent-42"}
        )
        (event,) = sink.logs()
        assert (event.log_record.attributes or {})["gen_ai.response.id"] == "chatcmpl-agent-42"
        chat = next(s for s in sink.spans() if s.kind == SpanKind.CLIENT)
        attributes = dict(chat.attributes or {})
        assert attributes["gen_ai.response.id"] == "judge-resp-9"
        # The provider sees `anthropic.claude-3-haiku`; litellm's route is kept apart; the
        # provider is the conventions' well-known value.
        assert chat.name == "chat anthropic.claude-3-haiku"
        assert attributes["gen_ai.request.model"] == "anthropic.claude-3-haiku"
        assert attributes["scorewatch.judge.model_route"] == "bedrock/anthropic.claude-3-haiku"
        assert attributes["gen_ai.provider.name"] == "aws.bedrock"

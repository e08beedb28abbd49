"""Prebuilt scorers under the telemetry add-on: no special case, the same spans and metrics as
hand-written scorers, and no evaluated content exported by default."""

from __future__ import annotations

import json

import pytest

from scorewatch.judge.protocol import JudgeRequest
from scorewatch.scorers import checks, create_hallucination_scorer
from scorewatch.telemetry import names
from scorewatch.testing import ScriptedJudge
from telemetry_helpers import in_memory_telemetry

pytestmark = pytest.mark.unit

OUTPUT = "The Eiffel Tower is 900 meters tall."


def _reply(request: JudgeRequest) -> str:
    if request.step == "preprocess":
        return json.dumps({"claims": ["The Eiffel Tower is 900 meters tall"]})
    if request.step == "analyze":
        return json.dumps({"verdicts": [{"item": "c", "verdict": "yes", "reason": "330 m"}]})
    return "The score is 1 because the height is invented."


async def test_llm_and_model_free_prebuilt_scorers_emit_standard_telemetry() -> None:
    with in_memory_telemetry() as sink:
        hallucination = create_hallucination_scorer(ScriptedJudge(_reply), context=["330 m"])
        result = await hallucination.run(input="How tall is it?", output=OUTPUT)
        check = checks.includes("tower")
        await check.run(input="q", output=OUTPUT)

        assert result.score == 1.0
        run_span = sink.span(names.run_span_name("hallucination-scorer"))
        assert run_span.attributes is not None
        assert run_span.attributes[names.ATTR_SCORE] == 1.0
        assert len(sink.spans_named(names.chat_span_name("scripted-judge"))) == 3
        check_span = sink.span(names.run_span_name("check-includes"))
        assert check_span.attributes is not None
        assert check_span.attributes[names.ATTR_SCORE] == 1.0

        scores = {
            p.attributes["gen_ai.evaluation.name"]: p for p in sink.points(names.METRIC_SCORE)
        }
        assert scores["hallucination-scorer"].sum == 1.0
        assert scores["check-includes"].count == 1

        exported = "\n".join(
            str(value) for span in sink.spans() for value in (span.attributes or {}).values()
        )
        assert "Eiffel" not in exported

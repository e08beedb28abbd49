"""Live scoring under a privacy policy: the judge reads the content, the rows (SQLite, JSONL),
spans, evaluation events and logs keep none of it, and the verdicts are those of a run
without the policy."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from privacy_support import (
    GROUND_TRUTH,
    INPUT,
    OUTPUT,
    POLICY,
    REQUEST_CONTEXT,
    judge_reply,
    judge_saw_everything,
    leaks,
    private_scorer,
)
from scorewatch.core.events import Observers, observed_by
from scorewatch.judge.litellm_judge import LiteLLMJudge
from scorewatch.live import LiveScoring
from scorewatch.privacy import PrivacyPolicy
from scorewatch.scorers.trajectory_accuracy_llm import create_trajectory_accuracy_llm_scorer
from scorewatch.sinks import JsonlSink, SqliteSink
from scorewatch.telemetry.in_memory import in_memory_telemetry
from scorewatch.testing.judge_server import LoopbackJudgeServer, Reply

pytestmark = pytest.mark.integration


async def score_once(
    tmp_path: Path, privacy: Any, caplog: pytest.LogCaptureFixture
) -> tuple[dict[str, Any], bytes, list[str], LoopbackJudgeServer]:
    """One call scored live into SQLite and JSONL, with telemetry capturing content."""
    db, lines = tmp_path / "scores.db", tmp_path / "scores.jsonl"
    bus = Observers()
    with (
        LoopbackJudgeServer(judge_reply) as server,
        in_memory_telemetry(capture_content=True, observers=bus) as otel,
        observed_by(bus),
        caplog.at_level(logging.DEBUG, logger="scorewatch"),
    ):
        live = LiveScoring(
            {"private": private_scorer(server)},
            sinks=[SqliteSink(db), JsonlSink(lines)],
            drain_on_exit=False,
            observers=bus,
            privacy=privacy,
        )
        live.submit(
            input=INPUT,
            output=OUTPUT,
            target="support-bot",
            ground_truth=GROUND_TRUTH,
            request_context=REQUEST_CONTEXT,
            metadata={"ticket": "T-1"},
        )
        await live.aclose()
        exported = [
            json.dumps({k: str(v) for k, v in (span.attributes or {}).items()})
            + json.dumps([{**e.attributes} for e in span.events], default=str)
            for span in otel.spans()
        ]
        exported += [json.dumps(event, default=str) for event in otel.evaluation_events()]
    (row,) = SqliteSink(db).query()
    # Every byte of the database files, not only what a query returns.
    exported += [
        path.read_bytes().decode("utf-8", "replace") for path in db.parent.glob("scores.db*")
    ]
    exported.append(caplog.text)
    return row, lines.read_bytes(), exported, server


async def test_rows_spans_events_and_logs_keep_no_personal_data(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    row, jsonl, exported, server = await score_once(tmp_path / "private", POLICY, caplog)
    judge_saw_everything(server)
    assert leaks(jsonl) == []
    # Content capture was on: the spans and the event did export the content, redacted.
    spans_and_events = "".join(exported[:-3])
    assert "<EMAIL_1>" in spans_and_events and "<CARD_1>" in spans_and_events
    for blob in exported:
        assert leaks(blob) == [], blob[:400]
    # Redacted with typed markers, one per value throughout the run: the address the user gave
    # and the one the judge quoted in its reason are the same marker.
    assert "<EMAIL_1>" in json.dumps(row["input"])
    assert "<EMAIL_1>" in row["reason"] and "<PHONE_1>" in row["reason"]
    assert row["output"]["tool_calls"][0]["arguments"] == {
        "card": "<CARD_1>",
        "client_ip": "<IP_1>",
    }
    assert row["metadata"]["groundTruth"] == "Refund to <IBAN_1> for <EMPLOYEE_1>"
    assert row["requestContext"]["employee"] == "<EMPLOYEE_1>"
    assert "<CARD_1>" in json.dumps(row["analyzeStepResult"])
    assert "<IBAN_1>" in row["analyzePrompt"] and "<SECRET_1>" in row["analyzePrompt"]
    assert "<EMAIL_1>" in json.dumps(row["judge"])
    # What is not content is kept as it was.
    assert row["metadata"]["ticket"] == "T-1" and row["entityId"] == "support-bot"


async def test_verdicts_equal_those_of_a_run_without_the_policy(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    private, _, _, _ = await score_once(tmp_path / "private", POLICY, caplog)
    plain, jsonl, _, _ = await score_once(tmp_path / "plain", None, caplog)
    assert private["status"] == plain["status"] == "success"
    assert private["score"] == plain["score"] == 1.0
    # The unredacted run did store the data: the scan above is not vacuous.
    assert leaks(jsonl) != []


def _trajectory_judge(body: dict[str, Any]) -> Reply:
    if "Review the steps the agent took" in json.dumps(body.get("messages")):
        return Reply(json.dumps({"stepEvaluations": [], "overallAssessment": "fine"}))
    return Reply("The steps were fine.")


async def test_a_trajectory_prompt_stores_no_card_after_an_escaped_line_break(
    tmp_path: Path,
) -> None:
    """The trajectory scorer writes the tool's arguments into its prompt as JSON (`js_json`):
    `"note": "call me\\n4111 ..."`; the SQLite file's bytes hold no card number."""
    card = "4111 1111 1111 1111"
    db = tmp_path / "scores.db"
    with LoopbackJudgeServer(_trajectory_judge) as server:
        judge = LiteLLMJudge(
            "openai/judge-model", api_base=server.base_url, api_key="sk-test", max_retries=0
        )
        scorer = create_trajectory_accuracy_llm_scorer(judge)
        live = LiveScoring(
            {"trajectory": scorer}, sinks=[SqliteSink(db)], privacy=PrivacyPolicy(redact=["all"])
        )
        step = {"stepType": "tool_call", "name": "note", "toolArgs": {"note": f"call me\n{card}"}}
        live.submit(input="take a note", output={"steps": [step]}, target="agent")
        await live.aclose()
        sent = json.dumps([request.body for request in server.requests])
    assert "me\\\\n4111 1111 1111 1111" in sent  # the judge read it, escaped, in the prompt
    (row,) = SqliteSink(db).query()
    assert row["status"] == "success", row
    assert "<CARD_1>" in json.dumps(row)
    for path in db.parent.glob("scores.db*"):
        data = path.read_bytes()
        assert card.encode() not in data and b"4111111111111111" not in data

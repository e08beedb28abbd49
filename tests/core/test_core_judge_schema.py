"""The schema sent to the judge forbids unlisted members on every object (issue 16, item 7), as the
reference's does (tests/fixtures/reference/core/judge_schema.json, recorded by
tools/reference/record_judge_schema.mjs)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

import scorewatch as sw
from reference_fixtures import load_reference
from scorewatch.core.schema import closed_objects
from scorewatch.testing import ScriptedJudge

pytestmark = pytest.mark.unit

REFERENCE = load_reference("core/judge_schema.json")


class Verdict(BaseModel):
    verdict: str
    reason: str


class Verdicts(BaseModel):
    verdicts: list[Verdict]


def _objects(schema: Any, defs: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Every object schema reachable from `schema`, $refs followed."""
    defs = defs if defs is not None else schema.get("$defs", {})
    found: list[dict[str, Any]] = []
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str):
            return _objects(defs[ref.rsplit("/", 1)[1]], defs)
        if schema.get("type") == "object":
            found.append(schema)
        for key, value in schema.items():
            if key != "$defs":
                found.extend(_objects(value, defs))
    elif isinstance(schema, list):
        for value in schema:
            found.extend(_objects(value, defs))
    return found


def _strip_reference_meta(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k != "$schema"}


async def _sent_schemas(output_schema: Any) -> list[Any]:
    judge = ScriptedJudge(['{"verdicts": [{"verdict": "yes", "reason": "r"}]}', '{"score": 1}'])
    scorer = (
        sw.create_scorer(
            id="schema", description="d", judge=sw.JudgeConfig(model=judge, instructions="J.")
        )
        .analyze(
            sw.PromptStep("Verdicts", lambda ctx: "Give verdicts.", output_schema=output_schema)
        )
        .generate_score(sw.PromptStep("Score", lambda ctx: "Score."))
    )
    await scorer.run(output="a")
    return [request.schema for request in judge.requests]


async def test_a_json_schema_step_sends_the_reference_schema() -> None:
    reference = _strip_reference_meta(REFERENCE["analyze"])
    open_schema: Any = closed_objects(reference)
    # The same schema as a user would write it, without additionalProperties anywhere.
    open_schema.pop("additionalProperties")
    open_schema["properties"]["verdicts"]["items"].pop("additionalProperties")
    analyze, score = await _sent_schemas(open_schema)
    assert analyze == reference
    assert score == _strip_reference_meta(REFERENCE["generateScore"])


async def test_every_object_of_a_pydantic_schema_is_closed() -> None:
    analyze, _ = await _sent_schemas(Verdicts)
    objects = _objects(analyze)
    assert len(objects) == 2
    assert all(obj["additionalProperties"] is False for obj in objects)


def test_a_schema_that_says_what_extra_members_may_be_is_kept() -> None:
    mapping = {"type": "object", "additionalProperties": {"type": "number"}}
    member = {"type": "object", "properties": {"a": {"type": "string"}}}
    nested = {"anyOf": [member, {"type": "null"}]}
    assert closed_objects(mapping) == mapping
    assert closed_objects(nested)["anyOf"][0]["additionalProperties"] is False
    assert "additionalProperties" not in nested["anyOf"][0]  # the user's schema is not changed

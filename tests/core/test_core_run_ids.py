"""Run ids the core generates are version-4 UUID strings, distinct run to run."""

from __future__ import annotations

import uuid

import pytest

import scorewatch as sw
from scorewatch.core.pipeline import new_run_id

pytestmark = pytest.mark.unit


def test_generated_ids_are_canonical_uuid4_strings() -> None:
    ids = [new_run_id() for _ in range(2_000)]
    assert len(set(ids)) == len(ids)
    for text in ids:
        parsed = uuid.UUID(text)
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
        assert str(parsed) == text  # lowercase, hyphenated, 36 characters


async def test_runs_without_an_id_get_one_and_keep_a_given_one() -> None:
    scorer = sw.create_scorer(id="s", description="d").generate_score(lambda ctx: 1.0)
    first = await scorer.run(output="a")
    second = await scorer.run(output="a")
    given = await scorer.run(output="a", run_id="my-run")
    assert first.run_id != second.run_id
    assert uuid.UUID(first.run_id).version == 4
    assert given.run_id == "my-run"

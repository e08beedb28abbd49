"""The scorer version on telemetry: the evaluation event and run span carry it, every score
series is split by it, squared scores are counted beside the histogram, and an info gauge lists
the versions scored with."""

from __future__ import annotations

import pytest

import scorewatch as sw
from scorewatch.telemetry import names
from telemetry_helpers import in_memory_telemetry

pytestmark = pytest.mark.unit


def _scorer(weight: float, version: str | None = None) -> sw.Scorer:
    def score(ctx: sw.StepContext) -> float:
        return weight * len(str(ctx.run.output)) / 10

    return sw.create_scorer(id="length", description="d", version=version).generate_score(score)


async def test_events_spans_and_score_series_carry_the_version() -> None:
    old, new = _scorer(0.5), _scorer(0.25, version="strict")
    assert old.version_fingerprint != new.version_fingerprint
    with in_memory_telemetry() as otel:
        for output in ("abcd", "abcdefgh"):
            await old.run(output=output, target="bot")
        await new.run(output="abcdefgh", target="bot")

        events = otel.evaluation_events()
        assert [e[names.ATTR_SCORER_VERSION] for e in events] == [
            old.version_fingerprint,
            old.version_fingerprint,
            new.version_fingerprint,
        ]
        assert events[2][names.ATTR_SCORER_DECLARED_VERSION] == "strict"
        assert names.ATTR_SCORER_DECLARED_VERSION not in events[0]
        spans = otel.spans_named(names.run_span_name("length"))
        assert {s.attributes[names.ATTR_SCORER_VERSION] for s in spans} == {  # type: ignore[index]
            old.version_fingerprint,
            new.version_fingerprint,
        }

        version = names.ATTR_SCORER_VERSION.replace(".", "__")
        before = otel.point(names.METRIC_SCORE, **{version: old.version_fingerprint})
        after = otel.point(names.METRIC_SCORE, **{version: new.version_fingerprint})
        assert (before.count, before.sum) == (2, pytest.approx(0.2 + 0.4))
        assert (after.count, after.sum) == (1, pytest.approx(0.2))
        squares = otel.point(names.METRIC_SCORE_SQUARES, **{version: old.version_fingerprint})
        assert squares.value == pytest.approx(0.2**2 + 0.4**2)
        assert squares.attributes == before.attributes

        info = {
            tuple(sorted(p.attributes.items())): p.value
            for p in otel.points(names.METRIC_SCORER_INFO)
        }
        assert info == {
            (
                (names.ATTR_EVALUATION_NAME, "length"),
                (names.ATTR_SCORER_VERSION, old.version_fingerprint),
            ): 1,
            (
                (names.ATTR_EVALUATION_NAME, "length"),
                (names.ATTR_SCORER_DECLARED_VERSION, "strict"),
                (names.ATTR_SCORER_VERSION, new.version_fingerprint),
            ): 1,
        }


async def test_failed_runs_name_their_version_on_the_event() -> None:
    def broken(ctx: sw.StepContext) -> float:
        raise ValueError("no")

    scorer = sw.create_scorer(id="broken", description="d").generate_score(broken)
    with in_memory_telemetry() as otel:
        with pytest.raises(sw.ScorerRunError):
            await scorer.run(output="x")
        (event,) = otel.evaluation_events()
        assert event[names.ATTR_SCORER_VERSION] == scorer.version_fingerprint
        assert names.ATTR_EVALUATION_SCORE_VALUE not in event


async def test_versions_on_metrics_are_bounded() -> None:
    with in_memory_telemetry(cardinality_limit=2) as otel:
        for weight in (0.1, 0.2, 0.3, 0.4):
            await _scorer(weight).run(output="abcdefghij")
        versions = {
            p.attributes[names.ATTR_SCORER_VERSION] for p in otel.points(names.METRIC_SCORE)
        }
        assert len(versions) == 3 and names.CARDINALITY_OVERFLOW in versions
        # Events keep the real version, whatever the metrics had to do.
        assert len({e[names.ATTR_SCORER_VERSION] for e in otel.evaluation_events()}) == 4

"""`AnnotatorBudget`, the admission of `POST /v1/labels`: a budget of labels per annotator,
refilled at a rate, spent only by an admitted request, with the wait a refused one is told;
bounded in the annotators it remembers."""

from __future__ import annotations

import pytest

from scorewatch.server.config.file import ServerSettings
from scorewatch.server.http.label_models import MAX_LABELS
from scorewatch.server.intake.label_admission import AnnotatorBudget, LabelsRefusedForRate

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_budget_refills_at_its_rate_and_a_refusal_spends_nothing() -> None:
    clock = Clock()
    budget = AnnotatorBudget(2.0, 10, clock=clock)
    assert budget.admit({"ana": 10}) is None
    # Empty: 3 labels need 1.5 s of refill, told as 2 whole seconds.
    assert budget.admit({"ana": 3}) == LabelsRefusedForRate("ana", 2)
    clock.now = 1.0  # 2 labels back; the refusal above spent none of them
    assert budget.admit({"ana": 2}) is None
    assert budget.admit({"ana": 1}) == LabelsRefusedForRate("ana", 1)
    clock.now = 100.0  # refilled to the burst, never beyond it
    assert budget.admit({"ana": 10}) is None
    assert budget.admit({"ana": 1}) is not None


def test_one_annotator_past_budget_costs_the_others_nothing() -> None:
    clock = Clock()
    budget = AnnotatorBudget(1.0, 5, clock=clock)
    assert budget.admit({"flood": 5}) is None
    for _ in range(100):
        assert budget.admit({"flood": 1}) is not None
    assert budget.admit({"ana": 5}) is None
    assert budget.admit({"ben": 2, "cy": 3}) is None
    # A request with the flooding annotator in it is refused whole: Ben's 2 are not spent.
    assert budget.admit({"ben": 2, "flood": 4}) == LabelsRefusedForRate("flood", 4)
    assert budget.admit({"ben": 3}) is None


def test_the_annotators_remembered_are_bounded() -> None:
    clock = Clock()
    budget = AnnotatorBudget(1.0, 10, max_annotators=3, clock=clock)
    for name in ("a", "b", "c"):
        assert budget.admit({name: 10}) is None
    # Three annotators still spending: a fourth waits until one has refilled.
    refused = budget.admit({"d": 1})
    assert refused is not None and refused.annotator == "d"
    assert budget.tracked == 3
    clock.now = 10.0  # every budget is full again: forgotten, and "d" is admitted
    assert budget.admit({"d": 1}) is None
    assert budget.tracked == 1


def test_the_configured_burst_holds_a_whole_request() -> None:
    assert ServerSettings.model_fields["label_burst"].metadata[0].ge == MAX_LABELS
    with pytest.raises(ValueError, match="label_burst"):
        ServerSettings(label_burst=MAX_LABELS - 1)
    with pytest.raises(ValueError, match="labels_per_second"):
        ServerSettings(labels_per_second=0)

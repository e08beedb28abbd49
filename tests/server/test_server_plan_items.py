"""Deciding a request's items (`plan_items`): a run id is made up for an item sent without one
only once something reads it (a filter, a sampling rate strictly between 0 and 1, a sampled
run), and decisions are those of the reference hash whichever way they are reached; the call
copied with its run id, and the answer's bytes, are what the slower general code gave."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from starlette.responses import JSONResponse

from live_support import constant_scorer
from scorewatch.core.call import CALL_FIELDS, AgentCall
from scorewatch.live import LiveScorerEntry, Sampling
from scorewatch.live.engine import live_run_id
from scorewatch.live.entry import fraction_of
from scorewatch.server.http.guard import json_answer
from scorewatch.server.http.models import ScoreRequest
from scorewatch.server.http.routes.score_intake import accepted_answer, accepted_body
from scorewatch.server.intake.admission import (
    Plan,
    draws_run_id,
    next_run_id,
    plan_digest,
    plan_items,
    request_digest,
    request_run_id,
)
from scorewatch.server.intake.interface import Accepted, Admission, ScoreItem, Skipped

pytestmark = pytest.mark.unit

HEX32 = frozenset("0123456789abcdef")


def _entries(**rates: float) -> dict[str, LiveScorerEntry]:
    return {
        name: LiveScorerEntry(constant_scorer(name), Sampling.ratio(rate))
        for name, rate in rates.items()
    }


def _item(**fields: str) -> ScoreItem:
    return ScoreItem(AgentCall(input="q", output="a", target="bot", **fields))


def test_a_sampled_item_without_a_run_id_gets_a_fresh_one() -> None:
    item = _item()
    (first,) = plan_items(_entries(every=1.0), [item])
    (second,) = plan_items(_entries(every=1.0), [item])
    assert first.sampled == ["every"] and first.skipped == []
    run_id = first.call.run_id
    assert run_id is not None and len(run_id) == 32 and set(run_id) <= HEX32
    assert second.call.run_id not in (None, run_id)
    assert item.call.run_id is None  # the client's call, as sent (it keys the request digest)
    assert first.call.input == "q" and first.call.target == "bot"


def test_an_item_nothing_samples_keeps_the_call_as_sent() -> None:
    item = _item()
    (plan,) = plan_items(_entries(never=0.0), [item])
    assert plan.sampled == [] and plan.skipped == [Skipped("never", "not_sampled")]
    assert plan.call is item.call
    # A client's own run id is kept either way.
    (kept,) = plan_items(_entries(never=0.0, every=1.0), [_item(run_id="r1")])
    assert kept.call.run_id == "r1" and kept.sampled == ["every"]


def test_a_filter_sees_the_made_up_run_id_that_the_sampled_run_keeps() -> None:
    seen: list[str | None] = []

    def keep(call: AgentCall) -> bool:
        seen.append(call.run_id)
        return True

    entries = {"filtered": LiveScorerEntry(constant_scorer("filtered"), filter=keep)}
    (plan,) = plan_items(entries, [_item()])
    assert plan.sampled == ["filtered"]
    assert seen == [plan.call.run_id] and seen[0] is not None


def test_ratio_decisions_follow_the_hash_of_the_trace_or_the_made_up_run_id() -> None:
    rng = random.Random(11)
    traces = [f"{rng.getrandbits(128):032x}" for _ in range(300)]
    entries = _entries(half=0.5, never=0.0, every=1.0)
    plans = plan_items(entries, [_item(trace_id=trace) for trace in traces])
    for trace, plan in zip(traces, plans, strict=True):
        assert ("half" in plan.sampled) == (fraction_of(trace) < 0.5)
        assert "every" in plan.sampled and "never" not in plan.sampled
    # Without a trace id, the run id keys sampling: a sampled item's id is below the rate.
    plans = plan_items(_entries(half=0.5), [_item() for _ in range(200)])
    sampled = [plan for plan in plans if plan.sampled]
    assert 60 <= len(sampled) <= 140
    for plan in sampled:
        assert plan.call.run_id is not None and fraction_of(plan.call.run_id) < 0.5


def test_only_rates_strictly_between_0_and_1_read_the_key() -> None:
    assert Sampling.ratio(0.5).keyed and Sampling.ratio(1e-9).keyed
    assert not any(s.keyed for s in (Sampling.none(), Sampling.ratio(0.0), Sampling.ratio(1.0)))
    # Not reading it changes no decision: 0 samples nothing and 1 everything, any key.
    keys = ["", "a", *(f"{n:032x}" for n in range(100))]
    assert not any(Sampling.ratio(0.0).should_sample(k) for k in keys)
    assert all(Sampling.ratio(1.0).should_sample(k) for k in keys)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(st.dictionaries(st.text(), _json_values, max_size=6))
def test_request_digests_cover_the_same_text_as_ever(call: dict[str, Any]) -> None:
    # Run ids name stored rows: a retried request must name the same run after an upgrade, so
    # the digest is of exactly the text `json.dumps` gave it (the encoder is only made once).
    text = json.dumps((call,), sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    assert request_digest(call) == hashlib.sha256(text.encode("ascii")).hexdigest()[:16]


_calls = st.builds(
    AgentCall,
    input=_json_values,
    output=_json_values,
    target=st.none() | st.text(),
    trace_id=st.none() | st.text(),
    span_id=st.none() | st.text(),
    run_id=st.none() | st.text(),
    metadata=st.none() | st.dictionaries(st.text(), _json_values, max_size=3),
    conversation_id=st.none() | st.text(),
)


class _Text(str):
    """A str subclass: the encoder writes it as a string too."""


# Any JSON-like value in any of the call's fields (the dataclass checks no types).
_any_calls = st.builds(
    AgentCall,
    **{
        name: _json_values | st.text().map(_Text) | st.tuples(st.integers(), st.text())
        for name in CALL_FIELDS
    },
)


@given(_any_calls)
def test_a_plans_digest_is_the_digest_of_its_calls_fields(call: AgentCall) -> None:
    # Built without the call's dict: the same text, so the same run ids as ever.
    plan = Plan(ScoreItem(call), call.with_run_id("made-up"), ["every"], [])
    assert plan_digest(plan) == request_digest(call.to_dict())


@given(_calls, st.none() | st.text())
def test_a_calls_copy_with_a_run_id_is_what_replace_makes(call: AgentCall, run_id: Any) -> None:
    # Hand-copied for speed: every other field must come along, whatever fields the call has.
    copied = call.with_run_id(run_id)
    assert copied == dataclasses.replace(call, run_id=run_id)
    assert copied.run_id == run_id


@given(_json_values | st.dictionaries(st.text(), _json_values, max_size=6))
def test_answers_are_the_bytes_starlette_sends(content: Any) -> None:
    # The 202 of the guard's plain path and the route's must not differ by a byte; NaN and
    # infinities are refused as Starlette refuses them.
    try:
        expected = JSONResponse(content).body
    except ValueError:
        with pytest.raises(ValueError):
            json_answer(content)
        return
    assert json_answer(content)[0] == expected


_ids = st.text(st.characters(exclude_categories=("Cs",)))  # a run id holds no lone surrogate


@example(accepted=[Accepted("similarity", "scoring-similarity-\u00e9\U0001f600-x")], skipped=[])
@example(accepted=[Accepted("s", "r")], skipped=[Skipped("t", "filtered")])
@given(
    st.lists(st.builds(Accepted, _ids, _ids), max_size=4),
    st.lists(
        st.builds(Skipped, _ids, st.sampled_from(["not_sampled", "filtered", "skipped_budget"])),
        max_size=4,
    ),
)
def test_an_accepted_answer_is_the_bytes_of_its_body_as_starlette_sends_it(
    accepted: list[Accepted], skipped: list[Skipped]
) -> None:
    # The plain path's 202 is built from cached parts (one accepted run and no skip: its own
    # form, the examples); the route's is `accepted_body` through
    # JSONResponse: the two must not differ by a byte, headers included.
    admission = Admission(accepted=accepted, skipped=skipped)
    body, headers = accepted_answer(admission)
    assert body == JSONResponse(accepted_body(admission)).body
    assert (body, headers) == json_answer(accepted_body(admission))


_ids_or_none = st.none() | st.text(min_size=1, max_size=40)


@given(
    st.fixed_dictionaries(
        {"input": _json_values, "output": _json_values, "target": st.text(min_size=1)},
        optional={
            "scorers": st.lists(st.text(), min_size=1, max_size=3),
            "trace_id": _ids_or_none,
            "span_id": _ids_or_none,
            "run_id": _ids_or_none,
            "conversation_id": _ids_or_none,
            "request_context": st.none() | st.dictionaries(st.text(), _json_values, max_size=3),
            "ground_truth": _json_values,
            "metadata": st.none() | st.dictionaries(st.text(), _json_values, max_size=3),
        },
    )
)
def test_a_requests_call_is_every_shared_field_by_name(fields: dict[str, Any]) -> None:
    # `to_call` builds the call by position: it must be what the call by keyword gives.
    request = ScoreRequest.model_validate(fields)
    shared = {name: getattr(request, name) for name in CALL_FIELDS if name in fields}
    assert request.to_call() == AgentCall(**shared)
    assert request.to_call().score_source == "live"
    # With a made-up run id: the call as sent, copied with it (what admission used to make).
    assert request.to_call("made-up") == AgentCall(**shared).with_run_id("made-up")


@given(_any_calls, st.text(min_size=1), st.text())
def test_a_call_built_with_a_made_up_run_id_names_the_request_as_sent(
    call: AgentCall, made_up: str, scorer_id: str
) -> None:
    # `item_of` builds a request's call once, with the run id it made up; the request's
    # identity (digest, run ids) must be that of the call the client sent, without it.
    sent = call.with_run_id(None)
    as_sent = Plan(ScoreItem(sent), sent.with_run_id(made_up), ["every"], [])
    built = ScoreItem(sent.with_run_id(made_up), made_up_run_id=True)
    once = Plan(built, built.call, ["every"], [])
    digest = plan_digest(as_sent)
    assert plan_digest(once) == digest == request_digest(sent.to_dict())
    expected = f"{live_run_id(scorer_id, sent)}-{digest}"
    if sent.trace_id or sent.span_id or sent.target:  # else a random uuid, either way
        assert request_run_id(scorer_id, built, digest) == expected
        assert request_run_id(scorer_id, as_sent.item, digest) == expected
    # A run id the client sent is part of its request: kept in both.
    kept = call.with_run_id(made_up)
    assert plan_digest(Plan(ScoreItem(kept), kept, ["every"], [])) == request_digest(kept.to_dict())


def _drawn_since(before: str) -> int:
    """How many run ids were made up since `before` was (the counter after the prefix)."""
    after = next_run_id()
    assert after[:16] == before[:16]
    return int(after[16:], 16) - int(before[16:], 16) - 1


_rates = st.sampled_from([None, 0.0, 1e-9, 0.5, 1.0])


@given(st.lists(st.tuples(_rates, st.booleans()), min_size=1, max_size=4), st.booleans())
def test_a_run_id_is_made_up_before_the_call_exactly_when_admission_would(
    scorers: list[tuple[float | None, bool]], traced: bool
) -> None:
    # `draws_run_id` decides before the call is built what `plan_items` decides after: the
    # same ids are drawn (no more for items nothing may sample), and the decisions, the
    # plan's call and the request's run ids are what the call built without one gets.
    entries = {
        f"s{index}": LiveScorerEntry(
            constant_scorer(f"s{index}"),
            Sampling.none() if rate is None else Sampling.ratio(rate),
            filter=(lambda call: call.run_id is not None) if filtered else None,
        )
        for index, (rate, filtered) in enumerate(scorers)
    }
    fields = {"trace_id": "ab" * 16} if traced else {}
    call = AgentCall(input="q", output="a", target="bot", **fields)
    before = next_run_id()
    (plan,) = plan_items(entries, [ScoreItem(call)])
    drawn = _drawn_since(before)
    assert drawn == (1 if draws_run_id(entries.values()) else 0)
    if not drawn:
        return
    made_up = next_run_id()
    built = ScoreItem(call.with_run_id(made_up), made_up_run_id=True)
    before = next_run_id()
    (once,) = plan_items(entries, [built])
    assert _drawn_since(before) == 0
    if traced or all(rate in (None, 0.0, 1.0) for rate, _ in scorers):
        # The key is the trace id, or not read: the same decisions either way.
        assert (once.sampled, once.skipped) == (plan.sampled, plan.skipped)
    assert once.call is built.call  # never copied
    digest = plan_digest(plan)
    assert plan_digest(once) == digest
    for scorer_id in once.sampled:
        assert request_run_id(scorer_id, built, digest) == request_run_id(
            scorer_id, plan.item, digest
        )

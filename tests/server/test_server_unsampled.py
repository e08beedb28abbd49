"""A `POST /v1/scores` that no scorer samples: its item is decided without its call being made
(`ScoreItem.of_draft`), and nothing else changes. The answers (status, headers, body), for
valid bodies and invalid ones, are the ones serve gave before the call was left unmade,
recorded here; the decisions are counted once each, in the stats and on the event bus; a body
refused for what it holds is refused the same way whether or not any scorer would sample it
(validation comes before the decision, never after it)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scorewatch.core.call import AgentCall
from scorewatch.core.events import Handler, Observer, Observers, observed_by
from scorewatch.core.scorer import create_scorer
from scorewatch.live.entry import LiveScorerEntry, Sampling
from scorewatch.live.events import Decided
from scorewatch.server.config.file import ServeConfig
from scorewatch.server.http.app import build_service, create_app, shutdown_service
from scorewatch.server.http.models import ScoreRequest
from scorewatch.server.http.state import ServiceState
from scorewatch.server.intake.admission import (
    BAD_ID_MESSAGE,
    MAX_TARGET_CHARS,
    plan_items,
    target_problem,
)
from scorewatch.server.intake.interface import ScoreItem, Skipped

pytestmark = pytest.mark.integration

_NOT_SAMPLED = '{"accepted":[],"skipped":[{"scorer":"never","decision":"not_sampled"}]}'
_NUMBERS = (
    "NaN, Infinity and numbers past a double's range are not stored as numbers; send a "
    "finite number, null or a string"
)
_NOT_UNICODE = "Input should be a valid string, unable to parse raw data as a unicode string"


def _refused(field_name: str, message: str) -> str:
    return (
        f'{{"error":"invalid_request","message":"{field_name}: {message}",'
        f'"fields":[{{"field":"{field_name}","message":"{message}"}}]}}'
    )


# Each body and the status and body serve answered it with before this change (the same on the
# guard's path and on the route's), with one scorer sampling nothing.
ANSWERS: list[tuple[bytes, int, str]] = [
    (b'{"input": "q", "output": "a", "target": "bot"}', 202, _NOT_SAMPLED),
    (
        b'{"input": "q", "output": "a", "target": "bot", "trace_id": "ab12", "span_id": "cd"}',
        202,
        _NOT_SAMPLED,
    ),
    (
        b'{"input": "q", "output": "a", "target": "bot", "run_id": "r1", "scorers": ["never"]}',
        202,
        _NOT_SAMPLED,
    ),
    (
        b'{"input": "q", "output": "a", "target": "b\\u0000t"}',
        422,
        _refused("target", BAD_ID_MESSAGE),
    ),
    (
        b'{"input": "q", "output": "a", "target": "' + b"t" * 300 + b'"}',
        422,
        _refused("target", "String should have at most 256 characters"),
    ),
    (b'{"input": NaN, "output": "a", "target": "bot"}', 422, _refused("input", _NUMBERS)),
    (
        b'{"input": {"n": 1e400}, "output": "a", "target": "bot"}',
        422,
        _refused("input.n", _NUMBERS),
    ),
    (b'{"input": "q", "output": "a"}', 422, _refused("target", "required field is missing")),
    (
        b'{"input": "q", "output": "a", "target": "bot", "scorers": ["nope"]}',
        404,
        '{"error":"unknown_scorer","message":"unknown scorer \'nope\'; known: never",'
        '"known_scorers":["never"]}',
    ),
    (
        b'{"input": "q", "output": "a", "target": "bot", "trace_id": "\\ud800"}',
        422,
        _refused("trace_id", _NOT_UNICODE),
    ),
    (
        b'{"input": "q", "output": "a", "target": ""}',
        422,
        _refused("target", "String should have at least 1 character"),
    ),
]


@dataclass
class _Decisions(Observer):
    heard: list[tuple[str, str]] = field(default_factory=list)

    def handlers(self) -> dict[type, Handler]:
        return {Decided: self.decided}

    def decided(self, event: Decided) -> None:
        self.heard.append((event.scorer_id, event.decision))


def _document(tmp_path: Path) -> dict[str, Any]:
    return {
        "scorers": [{"id": "never", "kind": "content-similarity", "sampling": 0.0}],
        "sinks": {"sqlite": str(tmp_path / "scores.db")},
        "telemetry": {"prometheus": False, "otlp": False},
    }


@pytest.fixture
async def heard(tmp_path: Path) -> AsyncIterator[tuple[ServiceState, _Decisions]]:
    bus, decisions = Observers(), _Decisions()
    bus.add(decisions)
    with observed_by(bus):  # the intake's counts tell the bus current when they are made
        state = build_service(ServeConfig.from_mapping(_document(tmp_path), base_dir=tmp_path))
    try:
        yield state, decisions
    finally:
        await shutdown_service(state)


async def test_unsampled_answers_and_counts_are_as_before(
    heard: tuple[ServiceState, _Decisions],
) -> None:
    service, decisions = heard
    transport = httpx.ASGITransport(app=create_app(service))
    headers = {"Content-Type": "application/json"}
    async with httpx.AsyncClient(transport=transport, base_url="http://sw") as client:
        for path in ("/v1/scores", "/v1/scores?wait=false"):  # the guard's path, the route's
            for body, status, text in ANSWERS:
                answer = await client.post(path, content=body, headers=headers)
                assert (answer.status_code, answer.text) == (status, text), (path, body[:60])
                assert sorted(answer.headers.items()) == [
                    ("content-length", str(len(text.encode()))),
                    ("content-type", "application/json"),
                ]
    accepted = 2 * sum(status == 202 for _, status, _ in ANSWERS)
    stats = service.stats()
    assert stats["not_sampled"] == accepted  # once per decision, none for a refused body
    assert stats["sampled"] == stats["rejected_requests"] == 0
    assert decisions.heard == [("never", "not_sampled")] * accepted


def test_an_unsampled_item_never_makes_its_call() -> None:
    made: list[str | None] = []

    class Draft:
        def __init__(self, request: ScoreRequest) -> None:
            self.request = request
            self.target, self.trace_id, self.run_id = request.target, request.trace_id, None

        def to_call(self, run_id: str | None = None) -> AgentCall:
            made.append(run_id)
            return self.request.to_call(run_id)

    request = ScoreRequest(input="q", output="a", target="bot", trace_id="t1")
    never = LiveScorerEntry(_scorer("never"), sampling=Sampling.ratio(0.0))
    every = LiveScorerEntry(_scorer("every"), sampling=Sampling.ratio(1.0))
    (plan,) = plan_items({"never": never}, [ScoreItem.of_draft(Draft(request))])
    assert plan.skipped == [Skipped("never", "not_sampled")] and made == []
    # Read, it is the call the request describes (and made once).
    assert plan.call == request.to_call() and plan.call is plan.item.call and made == [None]
    # A sampled item makes it for its run; a filter is given it before anything samples.
    (sampled,) = plan_items({"every": every}, [ScoreItem.of_draft(Draft(request), None, 5, "m")])
    assert sampled.sampled == ["every"] and made[1:] == ["m"]
    assert sampled.call == request.to_call("m") and sampled.item.made_up_run_id
    seen: list[AgentCall] = []
    filtered = LiveScorerEntry(
        _scorer("f"), sampling=Sampling.ratio(0.0), filter=lambda c: bool(seen.append(c))
    )
    (plan,) = plan_items({"f": filtered}, [ScoreItem.of_draft(Draft(request))])
    assert plan.skipped == [Skipped("f", "filtered")] and len(seen) == 1
    assert seen[0].input == "q" and seen[0].run_id is not None  # the made-up id, as before


def _scorer(scorer_id: str) -> Any:
    return create_scorer(id=scorer_id, description="d").generate_score(lambda ctx: 1.0)


# The check `target_problem` made before it looked for NUL alone in ASCII text: the oracle.
_BAD_ID_TEXT = re.compile("[\x00\ud800-\udfff]")


def _target_problem_before(target: str | None) -> str | None:
    if target is None:
        return None
    if len(target) > MAX_TARGET_CHARS:
        return f"longer than {MAX_TARGET_CHARS} characters"
    if _BAD_ID_TEXT.search(target):
        return BAD_ID_MESSAGE
    return None


_HOSTILE_TEXT = st.text(
    alphabet=st.sampled_from(["a", "\x00", "\x7f", "\x80", "é", "\ud800", "\udfff", "😀", " "])
    | st.characters(),
    max_size=300,
)


@given(st.none() | _HOSTILE_TEXT)
def test_target_problem_is_what_it_was(target: str | None) -> None:
    assert target_problem(target) == _target_problem_before(target)


_IDS = st.none() | st.text(alphabet="0123456789abcdef", min_size=1, max_size=32)


@given(
    trace_id=_IDS,
    run_id=_IDS,
    made_up=st.booleans(),
    rates=st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=1, max_size=3),
    filtered=st.lists(st.none() | st.booleans(), min_size=3, max_size=3),
)
def test_a_draft_item_is_decided_as_its_call_would_be(
    trace_id: str | None,
    run_id: str | None,
    made_up: bool,
    rates: list[float],
    filtered: list[bool | None],
) -> None:
    """The oracle: the item with its call made first, as `item_of` made it before."""
    request = ScoreRequest(input=["q", {"k": 1}], output="a", target="bot", trace_id=trace_id)
    request = request.model_copy(update={"run_id": run_id})
    # Without a trace id, an id made up while deciding keys sampling, drawn anew each time: such
    # items are given theirs first (as `item_of` does whenever a rate may read it).
    made_up_id = "f" * 32 if run_id is None and (made_up or trace_id is None) else None
    seen: dict[str, list[AgentCall]] = {"built": [], "draft": []}

    def entries(kind: str) -> dict[str, LiveScorerEntry]:
        def keep(answer: bool) -> Any:
            return lambda call: seen[kind].append(call) or answer

        return {
            f"s{index}": LiveScorerEntry(
                _scorer(f"s{index}"),
                sampling=Sampling.ratio(rate),
                filter=None if filtered[index] is None else keep(bool(filtered[index])),
            )
            for index, rate in enumerate(rates)
        }

    built = ScoreItem(
        request.to_call(made_up_id), ("s0",) if len(rates) == 1 else None, 7, made_up_id is not None
    )
    draft = ScoreItem.of_draft(request, built.scorers, 7, made_up_id)
    (old,) = plan_items(entries("built"), [built])
    (new,) = plan_items(entries("draft"), [draft])
    assert (new.sampled, new.skipped, new.holds) == (old.sampled, old.skipped, old.holds)
    assert (draft.target, draft.trace_id, draft.run_id) == (
        built.target,
        built.trace_id,
        built.run_id,
    )
    assert draft == built and draft.made_up_run_id == built.made_up_run_id

    def same(first: AgentCall, second: AgentCall) -> bool:
        # A run id made up while deciding is drawn anew each time: it is compared by presence.
        if first.run_id != second.run_id and run_id is None and made_up_id is None:
            first = first.with_run_id(second.run_id)
        return first == second

    assert same(new.call, old.call)
    assert len(seen["draft"]) == len(seen["built"])
    assert all(same(a, b) for a, b in zip(seen["draft"], seen["built"], strict=True))

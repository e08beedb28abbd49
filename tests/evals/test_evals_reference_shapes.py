"""`run_evals` on the dataset shapes of issue 30 against the reference's runEvals: trajectory
scorers given by kind (`{"agent": [...], "trajectory": [...]}`) with each item's expected
trajectory, multi-turn items (`inputs`), scorers sharing an id, threshold edge values, the order
of the input errors and the details of the run errors.

tools/reference/record_run_evals_shapes.mjs ran the same items through the reference with a
duck-typed agent answering from a table (`agentOutputs`); the Python target below answers from
the same table. Fixture: tests/fixtures/reference/evals/run_evals_shapes.json.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import scorewatch as sw
from reference_fixtures import load_reference, stable_wire
from scorewatch.scorers import (
    create_multi_turn_judge_scorer,
    create_trajectory_accuracy_code_scorer,
    create_trajectory_code_scorer,
)
from scorewatch.scorers.utils import js_json
from scorewatch.testing import ScriptedJudge

pytestmark = pytest.mark.unit

REFERENCE = load_reference("evals/run_evals_shapes.json")
RUNS: dict[str, dict[str, Any]] = REFERENCE["runs"]
AGENT_OUTPUTS: dict[str, Any] = REFERENCE["agentOutputs"]


class Agent:
    """The reference recording's agent: answers from the table, keeps each call and its thread."""

    def __init__(self, *, text_only: bool = False) -> None:
        self.calls: list[tuple[Any, str | None]] = []
        self.text_only = text_only

    def __call__(self, value: Any, thread_id: str | None = None) -> Any:
        if value == "explode":
            raise RuntimeError("the agent broke")
        self.calls.append((value, thread_id))
        return f"echo: {value}" if self.text_only else AGENT_OUTPUTS[js_json(value)]

    def normalized_calls(self) -> list[dict[str, Any]]:
        threads = list(dict.fromkeys(t for _, t in self.calls if t is not None))
        return [
            {
                "input": value,
                "thread": None if thread is None else threads.index(thread),
                "resourceIsThread": thread is not None,
            }
            for value, thread in self.calls
        ]


def constant(scorer_id: str, value: float) -> sw.Scorer:
    return sw.create_scorer(id=scorer_id, description="d").generate_score(lambda ctx: value)


def output_count() -> sw.Scorer:
    return sw.create_scorer(id="output-count", description="d").generate_score(
        lambda ctx: len(ctx.run.output) / 10 if isinstance(ctx.run.output, list) else 0
    )


def boom() -> sw.Scorer:
    def explode(ctx: sw.StepContext) -> float:
        raise RuntimeError("the scorer broke")

    return sw.create_scorer(id="boom", description="d").generate_score(explode)


def judge(answers: list[str]) -> sw.Scorer:
    return create_multi_turn_judge_scorer(ScriptedJudge(answers), criterion="A table gets booked.")


def _trajectory_data() -> list[dict[str, Any]]:
    return [
        {
            "input": "weather in Oslo",
            "groundTruth": "rain",
            "expectedTrajectory": {
                "steps": [
                    {"stepType": "tool_call", "name": "geocode"},
                    {"stepType": "tool_call", "name": "forecast"},
                ],
                "ordering": "strict",
            },
        },
        {
            "input": "weather in Lima",
            "expectedTrajectory": {
                "steps": [{"name": "geocode"}, {"name": "forecast"}],
                "maxSteps": 1,
            },
        },
        {"input": "just chat", "expectedTrajectory": {"steps": []}},
    ]


CHAT = [{"input": "just chat"}]


def configurations() -> dict[str, Callable[[], dict[str, Any]]]:
    answers: list[str] = REFERENCE["judgeAnswers"]
    return {
        "trajectory": lambda: {
            "data": _trajectory_data(),
            "scorers": {
                "agent": [output_count(), constant("half", 0.5)],
                "trajectory": [
                    create_trajectory_accuracy_code_scorer(),
                    create_trajectory_code_scorer(),
                ],
            },
        },
        "trajectory_only": lambda: {
            "data": _trajectory_data(),
            "scorers": {
                "trajectory": [create_trajectory_accuracy_code_scorer(ordering="unordered")]
            },
        },
        "trajectory_in_flat_list": lambda: {
            "data": _trajectory_data(),
            "scorers": [create_trajectory_accuracy_code_scorer()],
        },
        "trajectory_gate": lambda: {
            "data": _trajectory_data()[:2],
            "scorers": [constant("half", 0.5)],
            "gates": [create_trajectory_accuracy_code_scorer()],
        },
        "trajectory_empty_kinds": lambda: {
            "data": _trajectory_data(),
            "scorers": {"agent": [], "trajectory": []},
        },
        "multi_turn": lambda: {
            "data": [
                {
                    "inputs": ["Book a table for two", "Friday at eight", "Thanks!"],
                    "groundTruth": "a booking",
                },
                {"inputs": ["Is it open on Mondays?"]},
                {"input": "just chat"},
            ],
            "scorers": [output_count(), {"scorer": judge(answers), "threshold": 1}],
        },
        "multi_turn_trajectory": lambda: {
            "data": [
                {
                    "inputs": ["Book a table for two", "Friday at eight"],
                    "expectedTrajectory": {"steps": [{"name": "reserve"}]},
                }
            ],
            "scorers": {"trajectory": [create_trajectory_accuracy_code_scorer()]},
        },
        "multi_turn_text_target": lambda: {
            "data": [{"inputs": ["Hello", "Bye"]}],
            "scorers": [
                output_count(),
                judge(['{"satisfied": true, "reasoning": "ok"}']),
            ],
        },
        "kind_misspelt": lambda: {
            "data": _trajectory_data(),
            "scorers": {
                "agent": [constant("half", 0.5)],
                "trajectroy": [create_trajectory_accuracy_code_scorer()],
            },
        },
        "turns_item": lambda: {
            "data": [
                {
                    "turns": [
                        {"input": "Book a table for two", "scorers": [constant("turn-half", 0.5)]},
                        {"input": "Friday at eight"},
                    ]
                }
            ],
            "scorers": [output_count()],
        },
        "duplicate_ids": lambda: {
            "data": [{"input": "just chat"}, {"input": "weather in Lima"}],
            "scorers": [constant("dup", 0.2), constant("dup", 0.8), constant("other", 1)],
        },
        "duplicate_ids_thresholds": lambda: {
            "data": CHAT,
            "scorers": [
                {"scorer": constant("dup", 0.2), "threshold": 0.1},
                {"scorer": constant("dup", 0.8), "threshold": 0.9},
            ],
        },
        "duplicate_gate_ids": lambda: {
            "data": CHAT,
            "scorers": [constant("half", 0.5)],
            "gates": [constant("gate", 1), constant("gate", 0)],
        },
        "threshold_null": lambda: {
            "data": CHAT,
            "scorers": [{"scorer": constant("half", 0.5), "threshold": None}],
        },
        "threshold_unknown_key": lambda: {
            "data": CHAT,
            "scorers": [{"scorer": constant("half", 0.5), "threshold": {"min": 0.4, "weight": 2}}],
        },
        "threshold_only_unknown_key": lambda: {
            "data": CHAT,
            "scorers": [{"scorer": constant("half", 0.5), "threshold": {"minimum": 0.4}}],
        },
        "threshold_null_bound": lambda: {
            "data": CHAT,
            "scorers": [{"scorer": constant("half", 0.5), "threshold": {"min": None, "max": 0.6}}],
        },
        "threshold_array": lambda: {
            "data": CHAT,
            "scorers": [{"scorer": constant("half", 0.5), "threshold": [0.5]}],
        },
        "threshold_string": lambda: {
            "data": CHAT,
            "scorers": [{"scorer": constant("half", 0.5), "threshold": "0.5"}],
        },
        "empty_data_no_scorers": lambda: {"data": [], "scorers": []},
        "empty_data_bad_threshold": lambda: {
            "data": [],
            "scorers": [{"scorer": constant("half", 0.5), "threshold": 2}],
        },
        "bad_item_no_scorers": lambda: {"data": [{"output": "x"}], "scorers": []},
        "bad_item_then_good": lambda: {
            "data": [{"input": "just chat"}, {"expected": "x"}],
            "scorers": [constant("half", 0.5)],
        },
        "item_not_object": lambda: {"data": ["just chat"], "scorers": [constant("half", 0.5)]},
        "empty_inputs": lambda: {"data": [{"inputs": []}], "scorers": [constant("half", 0.5)]},
        "inputs_not_a_list": lambda: {
            "data": [{"inputs": "just chat"}],
            "scorers": [constant("half", 0.5)],
        },
        "target_failure": lambda: {
            "data": [
                {"input": "just chat"},
                {"input": "explode", "groundTruth": {"n": 1.5, "tags": ["a"]}},
            ],
            "scorers": [constant("half", 0.5)],
        },
        "scorer_failure": lambda: {
            "data": [
                {
                    "input": "weather in Lima",
                    "groundTruth": {"n": 2.0, "when": None},
                    "requestContext": {"user": "u1"},
                }
            ],
            "scorers": [boom()],
        },
        "trajectory_scorer_failure": lambda: {
            "data": [
                {
                    "input": "weather in Lima",
                    "expectedTrajectory": {"steps": [{"name": "forecast"}], "maxSteps": -1},
                }
            ],
            "scorers": {"trajectory": [create_trajectory_code_scorer()]},
        },
    }


# Where scorewatch differs on purpose (docs/concepts.md, deliberate differences).
DELIBERATE = {
    # A trajectory-typed scorer in a plain list is handed the trajectory and the item's
    # expected trajectory; the reference hands it the messages and the scorer crashes.
    "trajectory_in_flat_list",
    # The multi-turn judge reads a conversation of plain-text turns; the reference's sees none.
    "multi_turn_text_target",
    # A misspelt kind is refused; the reference runs the other kind and ignores it.
    "kind_misspelt",
    # Items with per-turn scorers (`turns`) are refused, pointing at `inputs`.
    "turns_item",
}


class Seen:
    """What on_item_complete received, in the recording's shape."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def __call__(self, done: Any) -> None:
        self.items.append(
            {"item": js_json(done.item), "scorerResults": _summary(done.scorer_results)}
        )


def _summary(results: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in results.items():
        if isinstance(value, dict):
            out[key] = _summary(value)
        else:
            wire = stable_wire(value.model_dump(mode="json", by_alias=True))
            out[key] = {
                "score": wire.get("score"),
                "preprocessStepResult": wire.get("preprocessStepResult"),
            }
    return out


def _without_error_words(value: Any) -> Any:
    """Step results with the no-expectation `error` text blanked: its words are each system's."""
    if isinstance(value, dict):
        return {
            k: ("(words)" if k == "error" else _without_error_words(v)) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_without_error_words(v) for v in value]
    return value


async def _attempt(name: str) -> tuple[dict[str, Any], Agent]:
    agent = Agent(text_only=name == "multi_turn_text_target")
    seen = Seen()
    config = configurations()[name]()
    try:
        result = await sw.run_evals(target=agent, on_item_complete=seen, **config)
    except sw.ScorewatchError as error:
        return {"error": error}, agent
    return {"result": result.model_dump(mode="json", by_alias=True), "items": seen.items}, agent


def test_every_recorded_run_is_exercised() -> None:
    assert set(configurations()) == set(RUNS)


@pytest.mark.parametrize("name", sorted(set(RUNS) - DELIBERATE))
async def test_same_dataset_same_outcome_as_the_reference(name: str) -> None:
    expected = RUNS[name]
    seen, agent = await _attempt(name)
    assert agent.normalized_calls() == expected["agentCalls"]
    if "error" in expected:
        error = seen.get("error")
        assert isinstance(error, sw.ScorewatchError), seen
        assert error.code == expected["error"]["id"]
        for key, value in expected["error"]["details"].items():
            assert error.details[key] == value
        return
    assert "error" not in seen, seen.get("error")
    assert seen["result"] == expected["result"]
    assert _without_error_words(seen["items"]) == _without_error_words(expected["items"])


async def test_errors_name_the_item_as_json_and_keep_its_index() -> None:
    seen, _ = await _attempt("target_failure")
    error = seen["error"]
    assert error.details == {
        "item": RUNS["target_failure"]["error"]["details"]["item"],
        "itemIndex": 1,
    }
    assert '{"n":1.5,"tags":["a"]}' in error.details["item"]
    seen, _ = await _attempt("scorer_failure")
    # `2.0` is written `2`, as JSON.stringify writes the number.
    assert '"groundTruth":{"n":2,"when":null}' in seen["error"].details["item"]
    assert seen["error"].details["itemIndex"] == 0


async def test_a_trajectory_scorer_in_a_plain_list_gets_the_expected_trajectory() -> None:
    # The reference crashes here (its scorer is handed messages, not a trajectory).
    assert RUNS["trajectory_in_flat_list"]["error"]["id"] == (
        "RUN_EXPERIMENT_SCORER_FAILED_TO_SCORE_RESULT"
    )
    seen, _ = await _attempt("trajectory_in_flat_list")
    nested = RUNS["trajectory"]["result"]["scores"]["trajectory"]
    accuracy = "code-trajectory-accuracy-scorer"
    assert seen["result"]["scores"] == {accuracy: nested[accuracy]}
    by_kind = [
        item["scorerResults"]["trajectory"][accuracy] for item in RUNS["trajectory"]["items"]
    ]
    flat = [item["scorerResults"][accuracy] for item in seen["items"]]
    assert _without_error_words(flat) == _without_error_words(by_kind)


async def test_the_multi_turn_judge_reads_plain_text_turns() -> None:
    # The reference's judge is shown no turn for a conversation of plain strings.
    expected = RUNS["multi_turn_text_target"]
    assert expected["judgeSaw"] == [{"shownNoTurns": True, "mentionsEcho": False}]
    answers = ScriptedJudge(['{"satisfied": true, "reasoning": "ok"}'])
    result = await sw.run_evals(
        data=[{"inputs": ["Hello", "Bye"]}],
        target=Agent(text_only=True),
        scorers=[create_multi_turn_judge_scorer(answers, criterion="It greets.")],
    )
    assert expected["result"]["scores"]["multi-turn-judge-scorer"] == 1  # the scripted verdict
    assert result.scores == {"multi-turn-judge-scorer": 1}
    prompt = answers.requests[0].prompt
    assert "echo: Hello" in prompt and "echo: Bye" in prompt


async def test_a_misspelt_kind_is_refused_where_the_reference_ignores_it() -> None:
    assert RUNS["kind_misspelt"]["result"]["scores"] == {"agent": {"half": 0.5}}
    seen, agent = await _attempt("kind_misspelt")
    assert seen["error"].code == "INVALID_AGENT_SCORERS"
    assert "'trajectroy'" in seen["error"].message
    assert agent.calls == []  # refused before any item ran


async def test_per_turn_scorers_are_refused_pointing_at_inputs() -> None:
    assert "turnResults" in RUNS["turns_item"]["result"]  # the reference scores each turn
    seen, agent = await _attempt("turns_item")
    assert seen["error"].code == "INVALID_DATA_ITEM"
    assert "'inputs'" in seen["error"].message
    assert agent.calls == []

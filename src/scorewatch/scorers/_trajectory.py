"""The trajectory of a run: the ordered steps (tool calls, mostly) an agent took.

The trajectory scorers read `run.output` through `trajectory_of`, which accepts:

* a trajectory already built, `{"steps": [...]}` (optionally with `rawOutput`, the messages it
  came from, and `totalDurationMs`): what a caller holding spans passes, nested steps under
  `children`;
* the reference system's agent messages: tool invocations from `content.parts` and the legacy
  `content.toolInvocations` list, merged as the reference system merges them (a call in both
  places counts once, the part wins);
* OpenAI chat messages (or a chat-completion response): each assistant `tool_calls` entry is a
  step, its result the `role: "tool"` message with the same `tool_call_id`.

Steps are plain dicts with the reference system's keys (`stepType`, `name`, `toolArgs`,
`toolResult`, `success`, ...), so step results carry them unchanged; a value the reference would
leave undefined is left out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ._trajectory_checks import COMPARABLE_FIELDS
from .utils import ToolName, is_tool_name, js_json, shown_name

__all__ = [
    "BUDGET_KEYS",
    "EXPECTATION_KEYS",
    "MAX_DEPTH",
    "ORDERINGS",
    "Trajectory",
    "expectation_of",
    "expected_steps_of",
    "format_expected_steps",
    "format_trajectory",
    "js_json",
    "step_to_expected",
    "trajectory_of",
]

Trajectory = dict[str, Any]


def _record(value: Any) -> dict[str, Any] | None:
    """A tool argument or result as the reference system keeps it: objects as they are, any
    other non-null value wrapped as `{"value": ...}`."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        return dict(value)
    return {"value": value}


def _step(
    name: ToolName, args: Any, result: Any, has_result: bool, success: bool
) -> dict[str, Any]:
    step: dict[str, Any] = {"stepType": "tool_call", "name": name}
    tool_args = _record(args)
    if tool_args is not None:
        step["toolArgs"] = tool_args
    tool_result = _record(result) if has_result else None
    if tool_result is not None:
        step["toolResult"] = tool_result
    step["success"] = success
    return step


def _merged_invocations(content: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Invocations of one agent message: parts in order, legacy-only calls kept just before the
    next call both lists share (so the legacy order survives), the rest of the legacy list last."""
    parts = content.get("parts")
    from_parts = [
        part["toolInvocation"]
        for part in (parts if isinstance(parts, list) else [])
        if isinstance(part, Mapping)
        and part.get("type") == "tool-invocation"
        and isinstance(part.get("toolInvocation"), Mapping)
    ]
    legacy_raw = content.get("toolInvocations")
    legacy: list[Any] = list(legacy_raw) if isinstance(legacy_raw, list) else []
    part_ids = {i.get("toolCallId") for i in from_parts if i.get("toolCallId")}
    positions: dict[Any, int] = {}
    for index, item in enumerate(legacy):
        key = item.get("toolCallId") if isinstance(item, Mapping) else None
        positions[key] = index  # a repeated id keeps its last position, as a Map would
    merged: list[Mapping[str, Any]] = []
    cursor = 0

    def keep_legacy(item: Any) -> None:
        if isinstance(item, Mapping) and item.get("toolCallId") not in part_ids:
            merged.append(item)

    for invocation in from_parts:
        call_id = invocation.get("toolCallId")
        shared = positions.get(call_id) if call_id else None
        if shared is not None and shared >= cursor:
            for item in legacy[cursor:shared]:
                keep_legacy(item)
            cursor = shared + 1
        merged.append(invocation)
    for item in legacy[cursor:]:
        keep_legacy(item)
    return merged


def _agent_steps(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if not isinstance(content, Mapping):
        return []
    steps = []
    for invocation in _merged_invocations(content):
        name = invocation.get("toolName")
        state = invocation.get("state")
        if not is_tool_name(name) or state not in ("result", "call", "output-error"):
            continue
        steps.append(
            _step(
                name,
                invocation.get("args"),
                invocation.get("result"),
                state == "result",
                state == "result" and invocation.get("isError") is not True,
            )
        )
    return steps


def _parsed(raw: Any) -> Any:
    """OpenAI arguments and tool message contents are JSON text; an object inside is kept as
    the object, anything else as the text itself."""
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            return raw if raw else None
        return value if isinstance(value, dict) else raw
    if isinstance(raw, list):  # content parts: their text
        texts = [p.get("text") for p in raw if isinstance(p, Mapping)]
        return _parsed("".join(t for t in texts if isinstance(t, str)))
    return raw


def _openai_steps(messages: list[Any]) -> list[dict[str, Any]]:
    answers: dict[str, Mapping[str, Any]] = {}
    for message in messages:
        if isinstance(message, Mapping) and message.get("role") == "tool":
            call_id = message.get("tool_call_id")
            if isinstance(call_id, str):
                answers.setdefault(call_id, message)
    steps = []
    for message in messages:
        if not isinstance(message, Mapping) or not isinstance(message.get("tool_calls"), list):
            continue
        for call in message["tool_calls"]:
            function = call.get("function") if isinstance(call, Mapping) else None
            if not isinstance(function, Mapping) or not function.get("name"):
                continue
            answer = answers.get(call.get("id")) if isinstance(call.get("id"), str) else None
            failed = answer is not None and (
                answer.get("is_error") is True or answer.get("isError") is True
            )
            steps.append(
                _step(
                    str(function["name"]),
                    _parsed(function.get("arguments")),
                    _parsed(answer.get("content")) if answer is not None else None,
                    answer is not None and not failed,
                    answer is not None and not failed,
                )
            )
    return steps


def _messages(output: Any) -> list[Any] | None:
    if isinstance(output, list | tuple):
        return list(output)
    if isinstance(output, Mapping):
        choices = output.get("choices")
        if isinstance(choices, list):
            return [c["message"] for c in choices if isinstance(c, Mapping) and "message" in c]
        if isinstance(output.get("role"), str):
            return [output]
    return None


MAX_DEPTH = 64


def _clean_steps(steps: list[Any], depth: int) -> list[Any]:
    """The steps that are mappings, their children cleaned the same way. A trajectory nested
    deeper than `MAX_DEPTH` is refused (hostile input must not exhaust the stack)."""
    if depth > MAX_DEPTH:
        raise ValueError(f"trajectory nested deeper than {MAX_DEPTH} levels")
    cleaned = []
    for step in steps:
        if not isinstance(step, Mapping):
            continue
        children = step.get("children")
        if isinstance(children, list):
            step = {**step, "children": _clean_steps(children, depth + 1)}
        elif children is not None:
            step = {key: value for key, value in step.items() if key != "children"}
        cleaned.append(step)
    return cleaned


def trajectory_of(output: Any) -> Trajectory:
    """The run output as a trajectory `{"steps": [...], "rawOutput": output}` (see the module
    docstring); an output that is neither a trajectory nor messages has no steps."""
    if isinstance(output, Mapping) and isinstance(output.get("steps"), list):
        return {**output, "steps": _clean_steps(output["steps"], 0)}
    messages = _messages(output)
    if messages is None:
        return {"steps": [], "rawOutput": output}
    steps = [step for m in messages if isinstance(m, Mapping) for step in _agent_steps(m)]
    if not steps:
        steps = _openai_steps(messages)
    return {"steps": steps, "rawOutput": output}


def step_to_expected(step: Mapping[str, Any]) -> dict[str, Any]:
    """A recorded step as an expected step: timing and metadata dropped, children nested as
    `{"steps": [...]}`."""
    expected = {k: v for k, v in step.items() if k not in ("durationMs", "metadata", "children")}
    children = step.get("children")
    if isinstance(children, list) and children:
        expected["children"] = {"steps": [step_to_expected(child) for child in children]}
    return expected


def expected_steps_of(expected: Any) -> list[dict[str, Any]] | None:
    """Expected steps from an option: a list of expected steps, or a recorded trajectory
    (`{"steps": [...]}`) converted step by step; None when not given. Each step is checked as
    the steps of an expectation are (a ValueError names what is wrong)."""
    if expected is None:
        return None
    if isinstance(expected, list | tuple):
        steps = [dict(step) if isinstance(step, Mapping) else step for step in expected]
    elif isinstance(expected, Mapping) and isinstance(expected.get("steps"), list):
        steps = [step_to_expected(step) for step in expected["steps"]]
    else:
        raise ValueError(
            "expected_trajectory must be a list of steps or a {'steps': [...]} mapping"
        )
    return [_expected_step(step, "expected_trajectory") for step in steps]


def _step_details(step: Mapping[str, Any]) -> str:
    kind = step.get("stepType")
    if kind in ("tool_call", "mcp_tool_call"):
        shown = [f"{label}: {js_json(step[key])}" for key, label in _TOOL_FIELDS if key in step]
        return f" ({', '.join(shown)})" if shown else ""
    if kind == "model_generation":
        return f" (model: {step['modelId']})" if step.get("modelId") else ""
    if kind == "workflow_step" and "output" in step:
        return f" (output: {js_json(step['output'])})"
    return ""


_TOOL_FIELDS = (("toolArgs", "args"), ("toolResult", "result"))


def format_trajectory(steps: list[Any], indent: int = 0) -> str:
    """`1. [tool_call] search (args: {...}, result: {...})` lines, children indented."""
    lines = []
    for number, step in enumerate(steps, 1):
        line = f"{'  ' * indent}{number}. [{step.get('stepType')}] {shown_name(step.get('name'))}"
        line += _step_details(step)
        children = step.get("children")
        if isinstance(children, list) and children:
            line += "\n" + format_trajectory(children, indent + 1)
        lines.append(line)
    return "\n".join(lines)


def format_expected_steps(steps: list[Any], indent: int = 0) -> str:
    """`1. [tool_call] search ({"toolArgs": ...})` lines for expected steps, children indented."""
    lines = []
    for number, step in enumerate(steps, 1):
        kind = f"[{step['stepType']}] " if step.get("stepType") else ""
        fields = {k: v for k, v in step.items() if k not in ("name", "stepType", "children")}
        data = f" ({js_json(fields)})" if fields else ""
        line = f"{'  ' * indent}{number}. {kind}{shown_name(step.get('name'))}{data}"
        children = step.get("children")
        nested = children.get("steps") if isinstance(children, Mapping) else None
        if isinstance(nested, list) and nested:
            line += "\n" + format_expected_steps(nested, indent + 1)
        lines.append(line)
    return "\n".join(lines)


EXPECTATION_KEYS = frozenset(
    {
        "steps",
        "ordering",
        "allowRepeatedSteps",
        "maxSteps",
        "maxTotalTokens",
        "maxTotalDurationMs",
        "noRedundantCalls",
        "blacklistedTools",
        "blacklistedSequences",
        "maxRetriesPerTool",
    }
)


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def expectation_of(value: Any, *, where: str = "expectation") -> dict[str, Any] | None:
    """A trajectory expectation (the reference system's `TrajectoryExpectation`) with its keys
    in the reference's camelCase (`max_steps` is accepted for `maxSteps`); the `children` of
    its expected steps are expectations too. None stays None; an unknown key is a ValueError,
    so a misspelt budget is not silently ignored."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValueError(f"{where} must be a mapping, got {type(value).__name__}")
    found = {_camel(str(key)): item for key, item in value.items()}
    unknown = sorted(set(found) - EXPECTATION_KEYS)
    if unknown:
        known = ", ".join(sorted(EXPECTATION_KEYS))
        raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)}; known keys: {known}")
    for budget in BUDGET_KEYS:
        if budget in found and found[budget] is None:
            raise ValueError(f"{where}: {budget} is None; give a number or leave {budget} out")
    if found.get("ordering") is not None and found["ordering"] not in ORDERINGS:
        raise ValueError(f"{where}: ordering must be one of {', '.join(ORDERINGS)}")
    steps = found.get("steps")
    if steps is not None:
        if not isinstance(steps, list | tuple):
            raise ValueError(f"{where}: steps must be a list")
        found["steps"] = [_expected_step(step, where) for step in steps]
    return found


def _expected_step(step: Any, where: str) -> dict[str, Any]:
    if not isinstance(step, Mapping) or not is_tool_name(step.get("name")):
        raise ValueError(f"{where}: every expected step is a mapping with a 'name'")
    for field in COMPARABLE_FIELDS.get(step.get("stepType"), ()):  # type: ignore[arg-type]
        if field in step and step[field] is None:
            raise ValueError(
                f"{where} > {shown_name(step['name'])}: {field} is None, which no step can match; "
                f"leave {field} out not to compare it"
            )
    copied = dict(step)
    if copied.get("children") is not None:
        copied["children"] = expectation_of(copied["children"], where=f"{where} > {step['name']}")
    return copied


ORDERINGS = ("strict", "relaxed", "unordered")
BUDGET_KEYS = ("maxSteps", "maxTotalTokens", "maxTotalDurationMs")

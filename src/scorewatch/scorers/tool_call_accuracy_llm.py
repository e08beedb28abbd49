"""The tool-call accuracy scorer, LLM variant: were the tools the agent called the right ones?

Two judge calls:

1. preprocess (function): the tool calls of the output (`scorers.utils.extract_tool_calls`);
2. analyze (judge): one evaluation per call, in order: was calling that tool appropriate for
   the user's message, given the available tools; plus the available tools the agent should
   have called but did not (`missing_tools`);
3. generate_score (function): appropriate calls / calls x `scale`, rounded half up to two
   decimals; evaluations are matched to calls by position and a missing one is not
   appropriate. With no call at all: `scale` when the judge names no missing tool (not calling
   was right), else 0;
4. generate_reason (judge): a short explanation.

`available_tools`: a mapping of tool name to description, or a list of tools as OpenAI tool
specs (`{"type": "function", "function": {"name", "description"}}`), `{"name"|"id",
"description"}` mappings, objects with those attributes, or bare names. Range 0..scale, higher
is better. Routing marker of the analyze prompt: `Judge each tool call the agent made`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field

from ..core import PromptStep, Scorer, StepContext
from ..judge.protocol import JudgeModel
from ._judging import (
    JudgeAnswer,
    Reason,
    ScorerCard,
    bullets,
    field_of,
    items_of,
    judged_scorer,
    numbered,
    require_scale,
)
from ._text import request_text, response_text, tool_calls_of
from ._verdicts import by_position
from .utils import round_to_two_decimals

__all__ = [
    "TOOL_CALL_ACCURACY_LLM_SCORER_ID",
    "create_tool_call_accuracy_llm_scorer",
    "describe_tools",
    "tool_selection_score",
]

TOOL_CALL_ACCURACY_LLM_SCORER_ID = "tool-call-accuracy-llm-scorer"

INSTRUCTIONS = (
    "You review an agent's tool selection. A call is appropriate when the tool serves the "
    "user's request and is the best fit among the available tools; a call the request did not "
    "need is inappropriate. Judge selection only, not the tool's result."
)

_CARD = ScorerCard(
    id=TOOL_CALL_ACCURACY_LLM_SCORER_ID,
    name="Tool Call Accuracy (LLM)",
    description="Measures whether the agent chose appropriate tools for the request",
    instructions=INSTRUCTIONS,
    subject="tool selection",
)


class CallEvaluation(JudgeAnswer):
    tool: str
    appropriate: bool
    reason: str = ""


class ToolSelection(JudgeAnswer):
    evaluations: list[CallEvaluation]
    missing_tools: list[str] = Field(default_factory=list)


def _tool_entry(tool: Any) -> tuple[str, str]:
    if isinstance(tool, str):
        return tool, ""
    record = tool if isinstance(tool, Mapping) else None
    if record is not None and isinstance(record.get("function"), Mapping):
        record = record["function"]

    def get(key: str) -> Any:
        return record.get(key) if record is not None else getattr(tool, key, None)

    name = get("name") or get("id")
    description = get("description")
    if not isinstance(name, str) or not name:
        raise ValueError(f"available tool without a name: {tool!r}")
    return name, description if isinstance(description, str) else ""


def describe_tools(available_tools: Mapping[str, str] | Sequence[Any]) -> list[str]:
    """`name: description` lines for the available tools (see the module docstring)."""
    if isinstance(available_tools, Mapping):
        entries = [(str(name), str(text or "")) for name, text in available_tools.items()]
    else:
        entries = [_tool_entry(tool) for tool in available_tools]
    return [f"{name}: {text}" if text else name for name, text in entries]


def tool_selection_score(
    calls: int, evaluations: Sequence[Any], missing_tools: int, scale: float = 1
) -> float:
    """Appropriate calls / calls x scale, rounded; without calls, scale if nothing was missing."""
    if calls == 0:
        return 0.0 if missing_tools else float(scale)
    appropriate = sum(
        1 for e in by_position(calls, evaluations) if field_of(e, "appropriate") is True
    )
    return round_to_two_decimals(appropriate / calls * scale)


def _analyze_prompt(
    question: str, response: str, tools: Sequence[str], called: Sequence[str]
) -> str:
    return f"""Judge each tool call the agent made. For every call, in order, say whether \
calling that tool was appropriate for the user's message ("appropriate": true/false). Then list \
in "missing_tools" the available tools the agent should have called but did not (empty if \
none). If the agent called no tool, "evaluations" is empty.

User's message:
{question or "(none)"}

Available tools:
{bullets(tools)}

Tool calls, in order:
{numbered(called)}

Agent's final response:
{response}

Format: {{"evaluations":[{{"tool":str,"appropriate":bool,"reason":str}}],"missing_tools":[str]}}
"""


def create_tool_call_accuracy_llm_scorer(
    model: str | JudgeModel,
    *,
    available_tools: Mapping[str, str] | Sequence[Any],
    scale: float = 1,
    model_options: Mapping[str, Any] | None = None,
) -> Scorer:
    """Share of the agent's tool calls that the judge finds appropriate, times `scale`.

    Two judge calls; range 0..scale; higher is better.
    """
    require_scale(scale)
    tools = describe_tools(available_tools)
    if not tools:
        raise ValueError("available_tools must list at least one tool")

    def inspect_run(ctx: StepContext) -> dict[str, Any]:
        called = tool_calls_of(ctx.run.output)
        return {"actual_tools": called, "has_tool_calls": bool(called)}

    def called_of(ctx: StepContext) -> list[str]:
        return [str(t) for t in items_of(ctx.results.preprocess_step_result, "actual_tools")]

    def analyze_prompt(ctx: StepContext) -> str:
        return _analyze_prompt(
            request_text(ctx.run.input), response_text(ctx.run.output), tools, called_of(ctx)
        )

    def score(ctx: StepContext) -> float:
        selection = ctx.results.analyze_step_result
        return tool_selection_score(
            len(called_of(ctx)),
            items_of(selection, "evaluations"),
            len(items_of(selection, "missing_tools")),
            scale,
        )

    def explain(ctx: StepContext) -> Reason:
        called = called_of(ctx)
        selection = ctx.results.analyze_step_result
        evaluations = items_of(selection, "evaluations")
        wrong = [
            f"{name} ({field_of(e, 'reason') or 'not judged'})"
            for name, e in zip(called, by_position(len(called), evaluations), strict=True)
            if field_of(e, "appropriate") is not True
        ]
        missing = [str(t) for t in items_of(selection, "missing_tools")]
        return Reason(
            facts=f"User's message:\n{request_text(ctx.run.input)}\n\n"
            f"Tools called: {', '.join(called) or 'none'}\n"
            f"Inappropriate calls:\n{bullets(wrong)}\nMissing tools:\n{bullets(missing)}",
            empty_note=None
            if called
            else "The agent called no tool; the score is full unless a tool was missing.",
        )

    return judged_scorer(
        _CARD,
        model=model,
        model_options=model_options,
        scale=scale,
        preprocess=inspect_run,
        analyze=PromptStep(
            description="Judge each tool call the agent made",
            create_prompt=analyze_prompt,
            output_schema=ToolSelection,
        ),
        score=score,
        explain=explain,
    )

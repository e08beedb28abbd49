"""The tool-call accuracy scorer, LLM variant: were the tools the agent called the right ones?

Two judge calls:

1. preprocess (function): the tool calls of the output, `{"actualTools": [names],
   "hasToolCalls": bool, "toolCallInfos": [{"toolName", "toolCallId", "messageIndex",
   "invocationIndex"}]}` (`scorers.utils.extract_tool_calls`);
2. analyze (judge), the reference system's shape: `{"evaluations": [{"toolCalled",
   "wasAppropriate", "reasoning"}], "missingTools": [str]}`;
3. generate_score (function), the reference system's formula: appropriate evaluations /
   evaluations returned x `scale`, rounded half up to two decimals; no evaluation -> 0 when
   the judge names a missing tool, else 1 x `scale` (not calling a tool was right);
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
from ._card import ScorerCard, prebuilt
from ._judging import (
    JudgeAnswer,
    Reason,
    bullets,
    field_of,
    items_of,
    judged_scorer,
    numbered,
    require_scale,
)
from ._text import found_tool_calls, request_text, response_text
from .utils import is_tool_name, round_to_two_decimals, shown_name

__all__ = [
    "TOOL_CALL_ACCURACY_LLM_SCORER_ID",
    "create_tool_call_accuracy_llm_scorer",
    "describe_tools",
    "tool_selection_score",
]

TOOL_CALL_ACCURACY_LLM_SCORER_ID = "llm-tool-call-accuracy-scorer"

INSTRUCTIONS = (
    "You review an agent's tool selection. A call is appropriate when the tool serves the "
    "user's request and is the best fit among the available tools; a call the request did not "
    "need is inappropriate. Judge selection only, not the tool's result."
)

_CARD = ScorerCard(
    name="tool-call-accuracy-llm",
    id=TOOL_CALL_ACCURACY_LLM_SCORER_ID,
    scorer_name="Tool Call Accuracy (LLM)",
    description="Measures whether the agent chose appropriate tools for the request",
    judge_calls=2,
    instructions=INSTRUCTIONS,
    subject="tool selection",
)


class CallEvaluation(JudgeAnswer):
    toolCalled: str = ""
    wasAppropriate: bool
    reasoning: str = ""


class ToolSelection(JudgeAnswer):
    evaluations: list[CallEvaluation]
    missingTools: list[str] = Field(default_factory=list)


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
    if not is_tool_name(name):
        raise ValueError(f"available tool without a name: {tool!r}")
    return shown_name(name), description if isinstance(description, str) else ""


def describe_tools(available_tools: Mapping[str, str] | Sequence[Any]) -> list[str]:
    """`name: description` lines for the available tools (see the module docstring)."""
    if isinstance(available_tools, Mapping):
        entries = [(str(name), str(text or "")) for name, text in available_tools.items()]
    else:
        entries = [_tool_entry(tool) for tool in available_tools]
    return [f"{name}: {text}" if text else name for name, text in entries]


def tool_selection_score(evaluations: Sequence[Any], missing_tools: int, scale: float = 1) -> float:
    """Appropriate evaluations / evaluations x scale, rounded; without evaluations, 1 x scale
    unless a tool was missing (then 0)."""
    if not evaluations:
        return 0 if missing_tools else 1 * scale
    appropriate = sum(1 for e in evaluations if field_of(e, "wasAppropriate") is True)
    return round_to_two_decimals(appropriate / len(evaluations) * scale)


def _analyze_prompt(
    question: str, response: str, tools: Sequence[str], called: Sequence[str]
) -> str:
    return f"""Judge each tool call the agent made. For every call, in order, say whether \
calling that tool was appropriate for the user's message ("wasAppropriate": true/false). Then \
list in "missingTools" the available tools the agent should have called but did not (empty if \
none). If the agent called no tool, "evaluations" is empty.

User's message:
{question or "(none)"}

Available tools:
{bullets(tools)}

Tool calls, in order:
{numbered(called)}

Agent's final response:
{response}

Format: {{"evaluations":[{{"toolCalled":str,"wasAppropriate":bool,"reasoning":str}}],\
"missingTools":[str]}}
"""


@prebuilt(_CARD)
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
        found = found_tool_calls(ctx.run.output)
        return {
            "actualTools": found.tools,
            "hasToolCalls": bool(found.tools),
            "toolCallInfos": [
                {
                    "toolName": info.tool_name,
                    "toolCallId": info.tool_call_id,
                    "messageIndex": info.message_index,
                    "invocationIndex": info.invocation_index,
                }
                for info in found.tool_call_infos
            ],
        }

    def called_of(ctx: StepContext) -> list[str]:
        return [shown_name(t) for t in items_of(ctx.results.preprocess_step_result, "actualTools")]

    def analyze_prompt(ctx: StepContext) -> str:
        return _analyze_prompt(
            request_text(ctx.run.input), response_text(ctx.run.output), tools, called_of(ctx)
        )

    def score(ctx: StepContext) -> float:
        selection = ctx.results.analyze_step_result
        return tool_selection_score(
            items_of(selection, "evaluations"), len(items_of(selection, "missingTools")), scale
        )

    def explain(ctx: StepContext) -> Reason:
        called = called_of(ctx)
        selection = ctx.results.analyze_step_result
        wrong = [
            f"{field_of(e, 'toolCalled')} ({field_of(e, 'reasoning') or 'no reasoning'})"
            for e in items_of(selection, "evaluations")
            if field_of(e, "wasAppropriate") is not True
        ]
        missing = [str(t) for t in items_of(selection, "missingTools")]
        return Reason(
            facts=f"User's message:\n{request_text(ctx.run.input)}\n\n"
            f"Tools called: {', '.join(called) or 'none'}\n"
            f"Inappropriate calls:\n{bullets(wrong)}\nMissing tools:\n{bullets(missing)}",
            empty_note=None
            if called
            else "The agent called no tool; the score is full unless a tool was missing.",
        )

    analyze = PromptStep(
        description="Judge each tool call the agent made",
        create_prompt=analyze_prompt,
        output_schema=ToolSelection,
    )
    return judged_scorer(
        _CARD, model, model_options, scale, analyze, score, explain, preprocess=inspect_run
    )

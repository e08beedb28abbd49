"""Scorer factories that CLI tests name by import path (`tests.cli_scorers:...`)."""

from __future__ import annotations

import os

import scorewatch as sw


def length_scorer() -> sw.Scorer:
    """1 when the output has more than three words, else 0."""
    return sw.create_scorer(id="length", description="more than three words").generate_score(
        lambda ctx: 1.0 if len(str(ctx.run.output).split()) > 3 else 0.0
    )


def judged_scorer() -> sw.Scorer:
    """Asks the loopback judge (at SCOREWATCH_TEST_API_BASE) for a score."""
    return _judged("Rate the answer.")


def judged_scorer_v2() -> sw.Scorer:
    """`judged_scorer` with new instructions: the same id, another version."""
    return _judged("Rate the answer strictly.")


def _judged(instructions: str) -> sw.Scorer:
    judge = sw.JudgeConfig(
        model="openai/loopback-judge",
        instructions=instructions,
        model_options={"api_base": os.environ["SCOREWATCH_TEST_API_BASE"], "api_key": "sk-test"},
    )
    return (
        sw.create_scorer(id="judged", description="judge-rated", judge=judge)
        .generate_score(sw.PromptStep("rate", lambda ctx: f"Rate: {ctx.run.output}"))
        .generate_reason(sw.PromptStep("explain", lambda ctx: f"Explain {ctx.score}"))
    )


def upper_target(text: str) -> str:
    return text.upper() + " AND MORE WORDS"


def picky_scorer() -> sw.Scorer:
    """Fails its analyze step on outputs of fewer than three words, scores 1 otherwise."""

    def analyze(ctx: sw.StepContext) -> dict[str, int]:
        words = len(str(ctx.run.output).split())
        if words < 3:
            raise ValueError(f"too short to analyze ({words} word)")
        return {"words": words}

    return (
        sw.create_scorer(id="picky", description="fails on short outputs")
        .analyze(analyze)
        .generate_score(lambda ctx: 1.0)
    )


def fragile_target(text: str) -> str:
    if "boom" in text:
        raise RuntimeError("the agent crashed")
    return text + " answered in enough words"


# A table-booking assistant that remembers each conversation by its thread (as an agent with
# memory does): the second turn books what the first asked for.
_BOOKINGS: dict[str, list[str]] = {}


def booking_target(turn: str, thread_id: str | None = None) -> dict[str, str]:
    said = _BOOKINGS.setdefault(thread_id or "no-thread", [])
    said.append(turn)
    if len(said) == 1:
        return {"role": "assistant", "content": "Which evening suits you?"}
    return {"role": "assistant", "content": f"Booked: {said[0]} on {turn}."}


def travel_agent(question: str) -> list[dict[str, object]]:
    """OpenAI chat messages: a tool call per word of the question after 'tools:'."""
    tools = question.split("tools:", 1)[1].split() if "tools:" in question else []
    calls = [
        {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": "{}"}}
        for i, name in enumerate(tools)
    ]
    messages: list[dict[str, object]] = [
        {"role": "assistant", "content": None, "tool_calls": calls}
    ]
    messages += [
        {"role": "tool", "tool_call_id": c["id"], "content": '{"ok": true}'} for c in calls
    ]
    messages.append({"role": "assistant", "content": "Done."})
    return messages


def noisy_scorer() -> sw.Scorer:
    """A judge of known noise: SCOREWATCH_TEST_NOISE (sd), SCOREWATCH_TEST_NOISE_SEED."""
    from tests.noise_support import noisy_judge
    from tests.noise_support import noisy_scorer as build

    sigma = float(os.environ.get("SCOREWATCH_TEST_NOISE", "0.1"))
    return build(noisy_judge(sigma, int(os.environ.get("SCOREWATCH_TEST_NOISE_SEED", "0"))))

"""Redaction's cost per run (pyperf): `ScoreRecord.to_row()` of a 2 kB run with and without a
privacy policy; the difference is what redaction adds to every stored run.

    .venv/bin/python benchmarks/bench_privacy.py -o privacy.json [--timer cpu] [--only a,b]

The run: a support conversation of 2,000 characters in all (input 1,000, output 600, ground
truth 150, the judge's reason 250), scored by a scorer with a judged analyze step (whose prompt
repeats input and output) and a judged reason: the row's content columns hold 40 distinct texts,
3.9 kB, which the redactor scans in one pass. Variants:

- `row/no-policy`: the row as it is stored today (the baseline);
- `row/policy-no-pii`: every kind redacted (`redact = ["all"]`), text holding no personal data;
- `row/policy-pii`: the same, the text holding 8 values to replace (an address, two phone
  numbers, a card, an IBAN, an IP address, an API key, a bearer token), the validation cache
  warm (the same values run after run);
- `row/policy-pii-cold`: the same, the validation caches emptied before every run
  (`Scanner.forget`: each run's values new to the process, what production traffic costs).

Every run gets its own redactor (`PrivacyPolicy.start()`), as in production.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import Callable
from typing import Any

import _common  # noqa: F401  (sets the environment before scorewatch is imported)
from _common import timed_runner

NAMES = ("row/no-policy", "row/policy-no-pii", "row/policy-pii", "row/policy-pii-cold")

_PLAIN_INPUT = (
    "Hello, I ordered the blue jacket last week and it still has not arrived. The tracking page "
    "says it left the warehouse on Monday but nothing has moved since then. Could you check what "
    "is going on and tell me when I can expect it? I need it before my trip at the end of the "
    "month, otherwise I would like a refund instead. Thanks for your help, I have been a "
    "customer for years and this is the first time something like this happens to me. "
)
_PII_INPUT = (
    "Hello, I am ada.lovelace@example.com and my order is late. Call me on +44 20 7946 0958 or "
    "(415) 555-0132. I paid with 4111 1111 1111 1111; refund to DE89 3704 0044 0532 0130 00. "
    "My last login came from 203.0.113.42 and the app sent Authorization: Bearer "
    "eyAbCdEfGhIjKlMnOp123 with key sk-proj-Q2xhdWRlU2VjcmV0S2V5MDEy. "
)


def _text(seed: str, size: int) -> str:
    return (seed * (size // len(seed) + 1))[:size]


def _record(pii: bool) -> Any:
    import scorewatch as sw
    from scorewatch.core.call import AgentCall
    from scorewatch.live.engine import score_call
    from scorewatch.testing import ScriptedJudge

    head = _PII_INPUT if pii else ""
    user = head + _text(_PLAIN_INPUT, 1000 - len(head))
    answer = _text("We are sorry about the delay; the parcel is on its way again. ", 600)
    truth = _text("The parcel is delayed; offer tracking and a refund. ", 150)
    reason = _text(("ada.lovelace@example.com " if pii else "") + "was answered politely. ", 250)
    judge = ScriptedJudge(['{"claims": ["delay acknowledged", "refund offered"]}', reason])
    schema = {"type": "object", "properties": {"claims": {"type": "array"}}}
    scorer = (
        sw.create_scorer(
            id="support",
            description="support quality",
            judge=sw.JudgeConfig(model=judge, instructions="Judge it."),
        )
        .analyze(
            sw.PromptStep(
                "claims",
                lambda ctx: f"Claims in {ctx.run.output} for {ctx.run.input}",
                output_schema=schema,
            )
        )
        .generate_score(lambda ctx: 1.0)
        .generate_reason(sw.PromptStep("explain", lambda ctx: f"Explain {ctx.score}"))
    )
    call = AgentCall(
        input=user,
        output=answer,
        target="support-bot",
        trace_id="0af7651916cd43dd8448eb211c80319c",
        span_id="b7ad6b7169203331",
        run_id="call-1",
        ground_truth=truth,
    )
    return asyncio.run(score_call(scorer, call, "run-1"))


_timer: Callable[[], float] = time.perf_counter
_state: dict[str, Any] = {}


def time_row(loops: int, variant: str) -> float:
    from scorewatch.privacy import PrivacyPolicy

    key = f"record-{variant}"
    if key not in _state:
        _state[key] = _record(pii=variant.startswith("policy-pii"))
        _state["policy"] = PrivacyPolicy(redact=["all"])
        row = _state[key].to_row()
        _state["size"] = sum(len(json.dumps(row[k])) for k in row)
    record, policy = _state[key], _state["policy"]
    replace = dataclasses.replace
    cold = variant == "policy-pii-cold"
    forget = policy._scanner.forget  # empties the validation caches, for `cold`
    started = _timer()
    if variant == "no-policy":
        for _ in range(loops):
            record.to_row()
    else:
        for _ in range(loops):
            if cold:
                forget()
            replace(record, redaction=policy.start()).to_row()
    return _timer() - started


def main() -> None:
    global _timer
    runner, args, chosen = timed_runner(NAMES)
    _timer = time.thread_time if args.timer == "cpu" else time.perf_counter
    for name in NAMES:
        if name in chosen:
            runner.bench_time_func(
                name, time_row, name.split("/", 1)[1], metadata={"timer": args.timer}
            )


if __name__ == "__main__":
    main()

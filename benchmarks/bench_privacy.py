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

The curve (no pyperf): the redaction's cost per run against how many values the run holds,
0, 1, 2, 4 and 8 in the same 2 kB run (the values of `_CURVE_VALUES` in order, the input
padded to 1,000 characters with the plain text; the judge's reason quotes the address when
the run holds it), and what it costs a whole run scored with a SQLite sink's encoding and
telemetry capturing content:

    .venv/bin/python benchmarks/bench_privacy.py --curve [--rows 500] [--repeats 7]
    .venv/bin/python benchmarks/bench_privacy.py --curve-case 4 [--rows 100]  # for callgrind
    .venv/bin/python benchmarks/bench_privacy.py --curve --scored [--rows 200]

`--curve` prints each variant's thread CPU per run, best of `--repeats` rounds of `--rows`
runs (the variants interleaved within a round, so that they share the machine's load), and
the cost: that less the same without a policy. `--curve-case N` (`none` for no policy)
makes 20 runs, then `--rows` runs inside one `functools.reduce` call, for
`valgrind --tool=callgrind --toggle-collect=functools_reduce`: instructions / rows. A "run"
is `to_row()` of the record (the default variants' unit); with `--scored` it is
`score_call` of the record's scorer and call (telemetry capturing content on spans and
events, in memory) and the SQLite sink's encoding of its record.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import time
from collections import deque
from collections.abc import Callable
from itertools import repeat
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


# The curve's values, one sentence each, in the order a run of N values takes the first N.
_CURVE_VALUES = (
    "Hello, I am ada.lovelace@example.com and my order is late. ",
    "Call me on +44 20 7946 0958. ",
    "I paid with 4111 1111 1111 1111. ",
    "Refund to DE89 3704 0044 0532 0130 00. ",
    "Or call (415) 555-0132. ",
    "My last login came from 203.0.113.42. ",
    "The app sent Authorization: Bearer eyAbCdEfGhIjKlMnOp123. ",
    "Its key is sk-proj-Q2xhdWRlU2VjcmV0S2V5MDEy. ",
)
CURVE = (0, 1, 2, 4, 8)
_CLAIMS = '{"claims": ["delay acknowledged", "refund offered"]}'


def _record(pii: bool) -> Any:
    return _run_of(_PII_INPUT if pii else "", quoted=pii)[2]


def _run_of(head: str, quoted: bool) -> tuple[Any, Any, Any]:
    """(scorer, call, record) of the benchmark's run whose input starts with `head`; the
    judge's reason quotes the address when `quoted`."""
    from scorewatch.live.engine import score_call

    scorer, call = _scorer_and_call(head, quoted)
    return scorer, call, asyncio.run(score_call(scorer, call, "run-1"))


def _scorer_and_call(head: str, quoted: bool) -> tuple[Any, Any]:
    import scorewatch as sw
    from scorewatch.core.call import AgentCall
    from scorewatch.testing import ScriptedJudge

    user = head + _text(_PLAIN_INPUT, 1000 - len(head))
    answer = _text("We are sorry about the delay; the parcel is on its way again. ", 600)
    truth = _text("The parcel is delayed; offer tracking and a refund. ", 150)
    reason = _text(("ada.lovelace@example.com " if quoted else "") + "was answered politely. ", 250)
    # The same two replies for every run scored with it (`--scored`).
    judge = ScriptedJudge(lambda request: _CLAIMS if request.step == "analyze" else reason)
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
    return scorer, call


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


def _curve_case(values: int | None, scored: bool) -> Callable[[int], None]:
    """A function running `rows` runs of the curve's case holding `values` values (None: the
    same run without a policy, the baseline)."""
    from scorewatch.live.engine import score_call
    from scorewatch.privacy import PrivacyPolicy
    from scorewatch.sinks.record import encode_record
    from scorewatch.sinks.sqlite import _ENCODE

    count = values or 0
    policy = None if values is None else PrivacyPolicy(redact=["all"])
    scorer, call, record = _run_of("".join(_CURVE_VALUES[:count]), quoted=count > 0)
    if not scored:
        if policy is None:
            return lambda rows: deque(map(to_row, repeat(record, rows)), 0)
        replace, start = dataclasses.replace, policy.start
        return lambda rows: deque(
            (replace(record, redaction=start()).to_row() for _ in range(rows)), 0
        )
    loop = asyncio.new_event_loop()

    async def runs(rows: int) -> None:
        for _ in range(rows):
            encode_record(await score_call(scorer, call, "run-1", policy), convert=_ENCODE)

    return lambda rows: loop.run_until_complete(runs(rows))


def to_row(record: Any) -> Any:
    return record.to_row()


def _curve(args: argparse.Namespace) -> None:
    from contextlib import ExitStack

    cases: list[int | None] = [None, *CURVE]
    with ExitStack() as stack:
        if args.scored:
            from scorewatch.telemetry.in_memory import in_memory_telemetry

            otel = stack.enter_context(in_memory_telemetry(capture_content=True))
        run = {case: _curve_case(case, args.scored) for case in cases}
        best = dict.fromkeys(cases, float("inf"))
        for case in cases:
            run[case](20)
        for _ in range(args.repeats):
            for case in cases:
                if args.scored:
                    otel.span_exporter.clear()
                    otel.log_exporter.clear()
                started = time.thread_time()
                run[case](args.rows)
                best[case] = min(best[case], (time.thread_time() - started) / args.rows)
    unit = "scored run + SQLite encoding" if args.scored else "to_row()"
    print(f"thread CPU per {unit}, best of {args.repeats} x {args.rows}")
    print(f"{'values':>8} {'us/run':>8} {'cost us':>8}")
    print(f"{'none':>8} {best[None] * 1e6:8.1f} {'-':>8}")
    for case in CURVE:
        cost = (best[case] - best[None]) * 1e6
        print(f"{case:>8} {best[case] * 1e6:8.1f} {cost:8.1f}")


def _curve_callgrind(args: argparse.Namespace) -> None:
    from contextlib import ExitStack
    from functools import reduce

    case = None if args.curve_case == "none" else int(args.curve_case)
    with ExitStack() as stack:
        if args.scored:
            from scorewatch.telemetry.in_memory import in_memory_telemetry

            stack.enter_context(in_memory_telemetry(capture_content=True))
        run = _curve_case(case, args.scored)
        run(20)
        reduce(lambda _, rows: run(rows), [args.rows], None)


def main() -> None:
    global _timer
    curve = argparse.ArgumentParser(add_help=False)
    curve.add_argument("--curve", action="store_true")
    curve.add_argument("--curve-case", choices=["none", *map(str, CURVE)])
    curve.add_argument("--scored", action="store_true")
    curve.add_argument("--rows", type=int, default=None)
    curve.add_argument("--repeats", type=int, default=7)
    args, _ = curve.parse_known_args()
    if args.curve or args.curve_case:
        if args.rows is None:
            args.rows = (200 if args.scored else 500) if args.curve else 100
        (_curve if args.curve else _curve_callgrind)(args)
        return
    runner, args, chosen = timed_runner(NAMES)
    _timer = time.thread_time if args.timer == "cpu" else time.perf_counter
    for name in NAMES:
        if name in chosen:
            runner.bench_time_func(
                name, time_row, name.split("/", 1)[1], metadata={"timer": args.timer}
            )


if __name__ == "__main__":
    main()

"""One piece of a scored item's run, called N times inside one `functools.reduce`, for callgrind.

    PYTHONHASHSEED=0 valgrind --tool=callgrind --toggle-collect=functools_reduce \
        .venv/bin/python benchmarks/pieces_scored.py PIECE [N]

Instructions / N is the piece's cost per call (the harness's own call ~1.3k). The call and
texts are `profile_scored.py`'s (the content-similarity scorer, no telemetry); 300 warm-up
calls first, and the collector is disabled so that no collection lands in one piece's count.
Pieces: `score_call`, `run_scorer` (`of_call` included), `of_call`, `check_run`, `measure` and
`score` (the scorer's two steps), `compare` (`compare_two_strings`), `dice` (`_dice` of the texts
without spaces). `--telemetry` first configures telemetry as serve does (Prometheus reader, no push
exporter): `score_call` with and without it is a scored run's telemetry. `bare_score_call` and
`bare_run_scorer`: the same framework around a scorer of the same shape (`measured_scorer`) whose
two steps do next to nothing (`bare_steps`, their own cost): the framework's share of a run, without
the scorer's work. `checked_score_call` and `bare_checked_score_call`: `score_call` of the call as
serve makes it (its fields checked by the request model: `AgentCall.of_checked_fields`), whose run
is not checked again. `quality_run`: a run of `profile_telemetry.py`'s four-step quality scorer;
`sdk_floor` (with `--telemetry` only): `profile_telemetry.py`'s SDK floor, the same SDK calls
made directly on the providers `--telemetry` configured, so that `quality_run` with and without
`--telemetry` against `sdk_floor` is that script's telemetry / floor ratio by instructions.
"""

from __future__ import annotations

import functools
import gc
import sys
from collections.abc import Callable, Coroutine
from typing import Any

import _common  # noqa: F401  (sets the environment before scorewatch is imported)
from _common import QUESTION, TWELVE_WORDS, quality_scorer

from scorewatch.core import AgentCall, ScorerRun, StepContext
from scorewatch.core.pipeline import check_run, run_scorer
from scorewatch.live.engine import score_call
from scorewatch.scorers._card import ScorerCard
from scorewatch.scorers._measured import measured_scorer
from scorewatch.scorers.content_similarity import (
    _dice,
    compare_two_strings,
    create_content_similarity_scorer,
)

_INPUT = "What is our refund policy for items bought in a sale?"
_OUTPUT = "Sale items can be refunded within 30 days with the receipt. 7"


def _done(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """A coroutine that never suspends (a model-free run), run to its end."""
    try:
        coroutine.send(None)
    except StopIteration as stop:
        return stop.value
    raise RuntimeError("the piece suspended")


def len_of_output(ctx: StepContext) -> int:
    """The bare scorer's measure: next to nothing."""
    return len(ctx.run.output)


def main() -> None:
    args = [arg for arg in sys.argv[1:] if arg != "--telemetry"]
    floor: Callable[[int], None] | None = None
    if len(args) < len(sys.argv) - 1:
        from _common import configure_prometheus
        from profile_telemetry import floor_batch

        handle = configure_prometheus()
        floor = floor_batch(handle.tracer_provider, handle.meter_provider, handle.logger_provider)
    scorer = create_content_similarity_scorer()
    call = AgentCall(input=_INPUT, output=_OUTPUT, target="support-bot")
    checked = AgentCall.of_checked_fields(_INPUT, _OUTPUT, "support-bot")
    run = ScorerRun.of_call(call, "run-1")
    ctx = StepContext(run)
    measure, score = (step.function for step in scorer.steps)
    assert measure is not None and score is not None
    ctx.results.preprocess_step_result = measure(ctx)
    bare = measured_scorer(
        ScorerCard("bare", "bare", "Bare", "A measured scorer whose steps do next to nothing."),
        measure=len_of_output,
        score=float,
    )
    bare_measure, bare_score = (step.function for step in bare.steps)
    assert bare_measure is not None and bare_score is not None
    bare_ctx = StepContext(run)
    bare_ctx.results.preprocess_step_result = bare_measure(bare_ctx)
    quality = quality_scorer()
    first, second = (" ".join(text.lower().split()).replace(" ", "") for text in (_INPUT, _OUTPUT))
    pieces: dict[str, Callable[[], Any]] = {
        "score_call": lambda: _done(score_call(scorer, call, "run-1")),
        "run_scorer": lambda: _done(run_scorer(scorer, ScorerRun.of_call(call, "run-1"), True)),
        "of_call": lambda: ScorerRun.of_call(call, "run-1"),
        "check_run": lambda: check_run(run, scorer.id),
        "measure": lambda: measure(ctx),
        "score": lambda: score(ctx),
        "compare": lambda: compare_two_strings(_INPUT, _OUTPUT),
        "dice": lambda: _dice(first, second),
        "bare_score_call": lambda: _done(score_call(bare, call, "run-1")),
        "bare_run_scorer": lambda: _done(run_scorer(bare, ScorerRun.of_call(call, "run-1"), True)),
        "checked_score_call": lambda: _done(score_call(scorer, checked, "run-1")),
        "bare_checked_score_call": lambda: _done(score_call(bare, checked, "run-1")),
        "bare_steps": lambda: (bare_measure(bare_ctx), bare_score(bare_ctx)),
        "quality_run": lambda: _done(quality.run(input=QUESTION, output=TWELVE_WORDS)),
    }
    if floor is not None:
        pieces["sdk_floor"] = lambda: floor(1)
    piece = pieces[args[0]]
    count = int(args[1]) if len(args) > 1 else 2000
    for _ in range(300):
        piece()
    gc.collect()
    gc.disable()
    functools.reduce(lambda total, _: (piece(), total)[1], range(count), 0)


if __name__ == "__main__":
    main()

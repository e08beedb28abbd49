"""The in-process intake's admission of one `POST /v1/scores` item, alone, for callgrind.

    PYTHONHASHSEED=0 valgrind --tool=callgrind --separate-threads=yes \
        --toggle-collect=functools_reduce --callgrind-out-file=F \
        python benchmarks/pieces_handoff.py [--sampling 1.0] N

serve's intake (`InProcessIntake` with its scoring loop, one content-similarity scorer at
`--sampling`, the SQLite sink storing on the scoring loop, telemetry configured as serve
configures it) admits N items one after another on a running loop, inside one
`functools.reduce` call: F-01's instructions / N is what `admit` costs the loop that answers per
item, queue hand-off included (the scoring thread's own file, F-0x, is not toggled). The
difference between `--sampling 1.0` and `--sampling 0.0` is what a sampled item costs that
loop beyond an unsampled one (the answer's encoding is not in it: see
`profile_scores_serve.py`).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import tempfile
from pathlib import Path
from typing import Any

import _common  # noqa: F401  (sets the environment before scorewatch is imported)


async def _main(requests: int, sampling: float, directory: Path) -> None:
    from scorewatch import telemetry
    from scorewatch.core.call import AgentCall
    from scorewatch.live.entry import LiveScorerEntry, Sampling
    from scorewatch.scorers.registry import build_scorer
    from scorewatch.server.intake.admission import next_run_id
    from scorewatch.server.intake.in_process import InProcessIntake
    from scorewatch.server.intake.interface import ScoreItem
    from scorewatch.server.intake.scoring_loop import ScoringLoop
    from scorewatch.sinks.sqlite import SERVICE_LINGER_S, SqliteSink

    handle = telemetry.configure(prometheus="127.0.0.1:0", prometheus_server=False)
    entries = {
        "similarity": LiveScorerEntry(
            build_scorer("content-similarity"), sampling=Sampling.ratio(sampling)
        )
    }
    sink = SqliteSink(str(directory / "scores.db"), linger=SERVICE_LINGER_S, on_caller_loop=True)
    scoring = ScoringLoop()
    intake = InProcessIntake(
        entries, sinks=[sink], max_concurrency=64, max_queue=1_000_000, scoring=scoring
    )

    def item() -> ScoreItem:  # as the route builds it: the run id drawn before the call
        call = AgentCall(input="q", output="a", target="bench", run_id=next_run_id())
        return ScoreItem(call, size=50, made_up_run_id=True)

    def admit(_total: Any, _index: int) -> None:
        # `admit` does not suspend without a budget kept in Redis: it ends on its first send.
        coroutine = intake.admit([item()])
        try:
            coroutine.send(None)
        except StopIteration:
            return
        raise RuntimeError("admit suspended")

    for index in range(300):  # warm-up
        admit(None, index)
    await asyncio.sleep(0.5)
    functools.reduce(admit, range(requests), None)
    await asyncio.sleep(0)
    await intake.shutdown(600)
    await intake.aclose()
    stats = intake.stats()
    print(f"{requests} items: sampled {stats['sampled']}, scored {stats['scored']}")
    handle.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("requests", type=int)
    parser.add_argument("--sampling", type=float, default=1.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(_main(args.requests, args.sampling, Path(directory)))


if __name__ == "__main__":
    main()

"""One `POST /v1/scores` through serve's application, called N times in one `functools.reduce`,
for callgrind: the HTTP loop's cost of a request without uvicorn's.

    PYTHONHASHSEED=0 valgrind --tool=callgrind --toggle-collect=functools_reduce \
        .venv/bin/python benchmarks/pieces_intake.py [--sampling 0.0] [--body BODY] [N]
    .venv/bin/python benchmarks/pieces_intake.py --profile [N]

Instructions / N is one request's cost in serve's own code (the guard, the parse, the checks,
the decision, the counts and the answer; the harness's own call ~1.5k). serve's application is
`profile_scores_serve.py`'s (`profile_admit.py`'s configuration, telemetry configured as serve
configures it); the body is `profile_scores_serve.py`'s unless `--body` gives another. Each
request's coroutine is run to its end without the event loop's scheduling (the plain path never
suspends: an assertion says so), on a running uvloop loop. 300 warm-up requests first, and the
collector is disabled so that no collection lands in one request's count.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import gc
import pstats
from collections.abc import Coroutine
from typing import Any

import _common  # noqa: F401  (sets the environment before scorewatch is imported)
from profile_admit import plain_request, serve_app
from profile_scores_serve import BODY


def _done(coroutine: Coroutine[Any, Any, Any]) -> None:
    try:
        coroutine.send(None)
    except StopIteration:
        return
    raise RuntimeError("the request suspended")


async def _run(app: Any, service: Any, body: bytes, count: int, profile: bool) -> set[int]:
    from scorewatch.server.http.app import shutdown_service

    scope, receive, send, statuses = plain_request(body)

    def request() -> None:
        _done(app(dict(scope), receive, send))

    for _ in range(300):
        request()
    gc.collect()
    gc.disable()
    profiler = cProfile.Profile() if profile else None
    if profiler is not None:
        profiler.enable()
    functools.reduce(lambda total, _: (request(), total)[1], range(count), 0)
    if profiler is not None:
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(40)
    gc.enable()
    await shutdown_service(service)
    return statuses


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("count", type=int, nargs="?", default=2000)
    parser.add_argument("--sampling", type=float, default=0.0)
    parser.add_argument("--profile", action="store_true", help="a cProfile (not under valgrind)")
    parser.add_argument("--body", help="the request body (default: profile_scores_serve.py's)")
    args = parser.parse_args()
    import uvloop

    app, service = serve_app(args.sampling, "pieces-intake-", no_shed=True)
    body = BODY if args.body is None else args.body.encode()
    statuses = uvloop.run(_run(app, service, body, args.count, args.profile))
    print(f"{args.count} requests: statuses {sorted(statuses)}")


if __name__ == "__main__":
    main()

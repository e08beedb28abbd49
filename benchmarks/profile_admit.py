"""serve's HTTP loop alone: CPU of the thread that reads requests, per plain `POST /v1/scores`.

    .venv/bin/python benchmarks/profile_admit.py [--sampling 1.0] [--requests 400] [--profile]
        [--no-shed]

serve's application (`build_service`, `create_app`, telemetry configured as serve configures it,
one content-similarity scorer at `--sampling`, the SQLite sink) called directly in a loop on
uvloop: no sockets, no uvicorn. Five rounds of `--requests` after 300 of warm-up; each round's
`time.thread_time` of this thread per request (the scoring loop and the SQLite writer run on
threads of their own and are not counted). `--profile` adds a cProfile of this thread (timed
with `time.thread_time`, which inflates small functions). Under callgrind pass `--no-shed` and
check that the statuses printed are {202} only. What issue 36's scored request costs
the admitting loop over an unsampled one is `--sampling 1.0` minus `--sampling 0.0`.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import os
import pstats
import tempfile
import time
from pathlib import Path
from typing import Any

import _common  # noqa: F401  (sets the environment before scorewatch is imported)

BODY = json.dumps(
    {
        "input": "What is our refund policy for items bought in a sale?",
        "output": "Sale items can be refunded within 30 days with the receipt.",
        "target": "support-bot",
    }
).encode()

CONFIG = """
[[scorers]]
id = "similarity"
kind = "content-similarity"
sampling = {sampling}

[live]
max_queue = 100000
# Under valgrind the measured scoring rate is slow: the default 10 s of queued work would
# answer some requests 429, and their instructions are not a scored request's.
max_queue_delay = 86400

[sinks]
sqlite = "scores.db"
"""


def plain_request(body: bytes) -> tuple[dict[str, Any], Any, Any, set[int]]:
    """A plain `POST /v1/scores` of `body` as uvicorn hands it to serve's application: its
    scope (copy it per request), `receive`, and `send`, which keeps the statuses answered in
    the set returned last."""
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/scores",
        "query_string": b"",
        "headers": [
            (b"host", b"bench"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
    }
    message = {"type": "http.request", "body": body, "more_body": False}
    statuses: set[int] = set()

    async def receive() -> dict[str, Any]:
        return message

    async def send(sent: dict[str, Any]) -> None:
        if sent["type"] == "http.response.start":
            statuses.add(sent["status"])

    return scope, receive, send, statuses


def serve_app(sampling: float, prefix: str, *, no_shed: bool = False) -> tuple[Any, Any]:
    """serve's application (and its `ServiceState`) with `CONFIG` at `sampling`, telemetry
    configured as serve configures it, in a new folder named `prefix...` (the working one
    from then on), the collector frozen as serve freezes it once started. `no_shed`: never
    refuse unread for a loop running late (under valgrind it always does)."""
    from scorewatch.server.config.file import load_config
    from scorewatch.server.http.app import build_service, create_app
    from scorewatch.server.http.serve_process import _configure_telemetry

    directory = Path(tempfile.mkdtemp(prefix=prefix))
    os.chdir(directory)
    (directory / "scorewatch.toml").write_text(CONFIG.format(sampling=sampling))
    config = load_config(directory / "scorewatch.toml")
    _configure_telemetry(config)
    service = build_service(config)
    if no_shed:
        from scorewatch.server.intake import in_process

        in_process._MAX_ADMIT_LAG_S = float("inf")  # benchmark only: a 429 is not a request
    app = create_app(service)
    gc.freeze()
    return app, service


async def _run(app: Any, service: Any, requests: int, profile: bool) -> None:
    from scorewatch.server.http.app import shutdown_service

    scope, receive, send, statuses = plain_request(BODY)

    async def requests_of(count: int) -> None:
        for _ in range(count):
            await app(dict(scope), receive, send)
            await asyncio.sleep(0)

    await requests_of(300)
    await asyncio.sleep(1)
    profiler = cProfile.Profile(time.thread_time) if profile else None
    rounds = []
    for _ in range(5):
        started = time.thread_time()
        if profiler is not None:
            profiler.enable()
        await requests_of(requests)
        if profiler is not None:
            profiler.disable()
        rounds.append((time.thread_time() - started) / requests * 1e6)
        await asyncio.sleep(0.5)  # the scoring loop catches up
    shown = ", ".join(f"{value:.1f}" for value in rounds)
    print(f"HTTP loop CPU per request: min {min(rounds):.1f} us (rounds {shown}); {statuses}")
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(35)
    await shutdown_service(service)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sampling", type=float, default=1.0)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--no-shed",
        action="store_true",
        help="never refuse unread for a loop running late (under valgrind it always does)",
    )
    args = parser.parse_args()
    import uvloop

    app, service = serve_app(args.sampling, "profile-admit-", no_shed=args.no_shed)
    uvloop.run(_run(app, service, args.requests, args.profile))


if __name__ == "__main__":
    main()

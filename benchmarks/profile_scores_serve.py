"""A real `scorewatch serve` taking `bench_floor.py`'s `POST /v1/scores`, for callgrind.

    python benchmarks/profile_scores_serve.py --requests N [--sampling 1.0] [--src TREE/src]
        [--callgrind OUT] [--pipeline K] [--floor]

Starts serve with `bench_floor.py`'s `scored` configuration (httptools + uvloop, one worker,
one content-similarity scorer at `--sampling`, the SQLite sink; `max_queue_delay` raised so
that valgrind's slow scoring never answers 429) from the sources in `--src` (default: this
tree's), under `--callgrind OUT` (valgrind's callgrind, the whole process and all its threads,
`PYTHONHASHSEED=0`) when given, never refusing a request unread for a loop running late (under
valgrind it always runs late: a 429 is not a request). Sends `--requests` of `openloop.py`'s
body one after another on one keep-alive connection (`--pipeline K`: K at a time, written
together, as a loaded server reads them), waits until every sampled run is stored
(`/v1/stats`), and stops serve (SIGTERM: callgrind writes its file at exit). Instructions per
request are the difference of two runs, (Ir(N2) - Ir(N1)) / (N2 - N1): with `--sampling 1.0`
a scored request end to end (HTTP loop, hand-off, scoring loop, SQLite), with `--sampling 0.0`
an unsampled one. `--floor` runs `floor_apps.py scores` (same parser and loop, pydantic parse,
202) instead, so the two differences' ratio is serve's cost per request over the floor's, by
instructions. `callgrind_annotate --inclusive=yes OUT` splits a run between the threads.
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from bench_floor import _wait_url, spawn_for_profile
from profile_admit import CONFIG as ADMIT_CONFIG

BENCH = Path(__file__).resolve().parent

# profile_admit.py's scorer, queue and sink, on bench_floor.py's stack.
CONFIG = (
    """\
[server]
log_level = "warning"
http = "httptools"
shutdown_timeout = 600
"""
    + ADMIT_CONFIG
)


# `python -m scorewatch`, never refusing unread for a loop running late: under valgrind it always
# runs late (benchmark only: a 429 is not a request, and profile_admit.py's `--no-shed` does the
# same).
_NO_SHED = (
    "import sys; from scorewatch.server.intake import in_process; "
    "in_process._MAX_ADMIT_LAG_S = float('inf'); from scorewatch.cli import main; "
    "sys.argv[0] = 'scorewatch'; sys.exit(main())"
)

# openloop.py's default body: what bench_floor.py's cases send.
BODY = json.dumps({"input": "q", "output": "a", "target": "bench"}).encode()


def _read_answer(reader: Any) -> tuple[int, dict[str, str]]:
    """One HTTP/1.1 answer's status and headers (its body read and dropped)."""
    status = int(reader.readline().split(b" ", 2)[1])
    headers: dict[str, str] = {}
    while (line := reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    reader.read(int(headers.get("content-length", "0")))
    return status, headers


def _send_all(url: str, requests: int, pipeline: int) -> tuple[dict[int, int], int]:
    """Statuses by count, and how many were answered 429 and sent again."""
    host, port = url.removeprefix("http://").split(":")
    head = (
        f"POST /v1/scores HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(BODY)}\r\n\r\n"
    ).encode()
    statuses: dict[int, int] = {}
    retried = 0
    with socket.create_connection((host, int(port)), timeout=600) as connection:
        reader = connection.makefile("rb")
        left = requests
        while left:
            batch = min(pipeline, left)
            connection.sendall((head + BODY) * batch)
            for _ in range(batch):
                status, headers = _read_answer(reader)
                if status == 429:
                    retried += 1
                    time.sleep(float(headers.get("retry-after", "1")))
                    continue
                statuses[status] = statuses.get(status, 0) + 1
                left -= 1
    return statuses, retried


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--sampling", type=float, default=1.0)
    parser.add_argument("--pipeline", type=int, default=1)
    parser.add_argument("--src", type=Path, default=BENCH.parent / "src")
    parser.add_argument("--floor", action="store_true", help="the floor app instead of serve")
    parser.add_argument("--callgrind", type=Path, help="run serve under callgrind, output here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="profile-scores-serve-") as folder:
        directory = Path(folder)
        (directory / "scorewatch.toml").write_text(CONFIG.format(sampling=args.sampling))
        command = [
            sys.executable, "-c", _NO_SHED, "serve", "--config", "scorewatch.toml",
            "--listen", "127.0.0.1:0", "--workers", "1",
        ]  # fmt: skip
        marker = "scorewatch serve: listening on"
        if args.floor:
            command = [
                sys.executable, str(BENCH / "floor_apps.py"), "scores",
                "--http", "httptools", "--loop", "uvloop",
            ]  # fmt: skip
            marker = "floor: listening on"
        process, stderr = spawn_for_profile(
            command, directory, args.src, args.callgrind, "--dump-instr=no"
        )
        try:
            # Under valgrind the imports alone take minutes on a loaded machine.
            url = _wait_url(stderr, process, marker, timeout=900)
            started = time.monotonic()
            statuses, retried = _send_all(url, args.requests, args.pipeline)
            sampled = args.requests if args.sampling >= 1.0 else 0
            scored = 0
            while not args.floor:  # the floor stores nothing: nothing to wait for
                stats = httpx.get(f"{url}/v1/stats", timeout=600).json()
                scored = stats["scored"] + stats["failed"]
                if scored >= sampled and stats["queued"] == 0 and stats["in_flight"] == 0:
                    break
                time.sleep(0.5)
            print(
                f"{args.requests} requests in {time.monotonic() - started:.1f} s: statuses "
                f"{statuses}, {retried} answered 429 and sent again; scored {scored}",
                file=sys.stderr,
            )
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(900)


if __name__ == "__main__":
    main()

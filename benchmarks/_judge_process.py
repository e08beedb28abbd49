"""A loopback judge server in a process of its own, answering the summarization scorer's calls.

    python benchmarks/_judge_process.py [--latency 0.05] [--error-rate 0] [--stall-rate 0]
                                        [--stall 10] [--seed 1] [--max-seconds 3600]

Prints `PORT <n>` once it listens on 127.0.0.1, then serves until stdin closes (or
--max-seconds pass), and prints `REQUESTS <n>` on the way out. Kept out of the measured process
so the client's CPU figures are the client's own. Faults (HTTP 500 answers, long stalls) are
drawn from a seeded generator: runs are repeatable.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
from typing import Any

import _common  # noqa: F401
from summarization_prompt_size import CLAIMS, QUESTIONS

from scorewatch.testing import HttpError, LoopbackJudgeServer, Reply

PREPROCESS = json.dumps(
    {
        "alignment": [{"claim": c, "supported": True, "reason": "Stated."} for c in CLAIMS],
        "questions": QUESTIONS,
    }
)
ANALYZE = json.dumps(
    {
        "coverage": [
            {"question": q, "answered": i < 7, "reason": "Stated." if i < 7 else "Omitted."}
            for i, q in enumerate(QUESTIONS)
        ]
    }
)
REASON = "The score is 0.7 because coverage decided it: the summary omits three facts."
SCORE = '{"score": 0.5}'


def answer_for(body: dict[str, Any]) -> str:
    messages = body.get("messages") or []
    prompt = str(messages[-1].get("content", "")) if messages else ""
    if prompt.startswith("Complete two independent parts"):
        return PREPROCESS
    if prompt.startswith("Decide whether each question"):
        return ANALYZE
    if prompt.startswith("Rate this answer"):
        return SCORE  # the one-call scorer of soak.py
    return REASON


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--error-rate", type=float, default=0.0)
    parser.add_argument("--stall-rate", type=float, default=0.0)
    parser.add_argument("--stall", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-seconds", type=float, default=3600.0)
    args = parser.parse_args()
    draw = random.Random(args.seed)
    lock = threading.Lock()

    def behaviour(body: dict[str, Any]) -> Any:
        with lock:
            roll = draw.random()
        if roll < args.error_rate:
            return HttpError(500)
        delay = args.stall if roll < args.error_rate + args.stall_rate else args.latency
        return Reply(answer_for(body), delay=delay)

    server = LoopbackJudgeServer(behaviour, record_requests=False)
    server.start()
    print(f"PORT {server.port}", flush=True)
    done = threading.Event()

    def wait_for_stdin() -> None:
        sys.stdin.read()
        done.set()

    threading.Thread(target=wait_for_stdin, daemon=True).start()
    done.wait(args.max_seconds)
    count = server.request_count
    server.stop()
    print(f"REQUESTS {count}", flush=True)


if __name__ == "__main__":
    main()

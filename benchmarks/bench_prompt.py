"""Judge prompt size per summarization evaluation on a 400-word source (issue #8).

    .venv/bin/python benchmarks/bench_prompt.py [-o result.json]

Counted on the wire: one evaluation through the real `LiteLLMJudge` against the loopback judge
server, summing the characters of every message and of the JSON response format (if any) over
all judge calls. Also reports the in-process counts of `summarization_prompt_size.py`.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import _common
from _judge_process import answer_for
from summarization_prompt_size import SUMMARY, measure, source_of

from scorewatch.judge import LiteLLMJudge
from scorewatch.scorers import create_summarization_scorer
from scorewatch.testing import LoopbackJudgeServer, Reply


def on_the_wire() -> dict[str, Any]:
    with LoopbackJudgeServer(lambda body: Reply(answer_for(body))) as server:
        judge = LiteLLMJudge("openai/loopback", api_base=server.base_url, api_key="sk-bench")
        create_summarization_scorer(judge).run_sync(input=source_of(400), output=SUMMARY)
        requests = server.requests
    total = 0
    for request in requests:
        total += sum(len(str(m.get("content") or "")) for m in request.messages)
        response_format = request.body.get("response_format")
        if response_format:
            total += len(json.dumps(response_format, separators=(",", ":")))
    return {"calls": len(requests), "characters": total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output")
    args = parser.parse_args()
    wire = on_the_wire()
    _common.emit({"wire": wire, "in_process": measure()}, args.output)


if __name__ == "__main__":
    main()

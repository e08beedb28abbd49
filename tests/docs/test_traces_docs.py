"""docs/traces.md's quick start, run as written, in a fresh virtualenv: its install line (`pip
install -e '.[traces-example]'`, by uv's pip, in the repository), then the rest of the block: it
starts `scorewatch serve` with docs/examples/traces/scorewatch.toml (unchanged) and runs
docs/examples/traces/agent.py against it. Only what a test machine needs differs: free ports in
the block's command lines instead of 8787 / 4318 (as the page tells a user whose port is taken),
the loopback LLM server instead of OpenAI (OPENAI_BASE_URL), and a copy of docs/examples in a
temporary folder as the working directory, so the SQLite file is not written into the checkout."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from docs_support import REPO, blocks
from docs_venv import fresh_venv, install_line, venv_env
from scorewatch.testing.judge_server import LoopbackJudgeServer, Reply

pytestmark = pytest.mark.e2e

DOC = REPO / "docs" / "traces.md"
EXAMPLES = REPO / "docs" / "examples"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _quick_start() -> str:
    (block,) = [b for b in blocks(DOC) if b.language == "bash" and "agent.py" in b.code]
    return block.code


def test_the_quick_start_scores_the_agent_from_its_traces(tmp_path: Path) -> None:
    script = _quick_start()
    arguments = install_line(script)
    assert arguments == ["-e", ".[traces-example]"]
    venv = fresh_venv(tmp_path / "venv", arguments)
    config = (EXAMPLES / "traces" / "scorewatch.toml").read_text(encoding="utf-8")
    assert '"127.0.0.1:8787"' in config and '"127.0.0.1:4318"' in config  # the ports overridden
    work = tmp_path / "work"
    shutil.copytree(EXAMPLES, work / "docs" / "examples")
    main, traces = _free_port(), _free_port()
    script = (
        script.split("\n", 1)[1]  # installed above
        .replace("127.0.0.1:8787", f"127.0.0.1:{main}")
        .replace("127.0.0.1:4318", f"127.0.0.1:{traces}")
    )
    wrapped = "set -eo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n" + script
    with LoopbackJudgeServer(default=Reply("It left the warehouse on Monday.")) as llm:
        done = subprocess.run(
            ["bash", "-c", wrapped],
            cwd=work,
            env={**venv_env(venv), "OPENAI_BASE_URL": llm.base_url},
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        asked = [request.messages for request in llm.requests]
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "WARNING" not in done.stderr, done.stderr[-3000:]
    assert asked and asked[0][-1]["content"] == "My order 7 has not arrived. Where is it?"
    ids = re.search(r"^trace ([0-9a-f]{32}) span ([0-9a-f]{16})$", done.stdout, re.MULTILINE)
    assert ids, done.stdout
    trace_id, span_id = ids.groups()
    out = done.stdout
    assert "It left the warehouse on Monday." in out
    listing, _ = json.JSONDecoder().raw_decode(out[out.index('{"scores"') :])
    rows = {row["scorerId"]: row for row in listing["scores"]}
    assert set(rows) == {"completeness", "tone"}
    for row in rows.values():
        assert (row["traceId"], row["spanId"], row["entityId"]) == (trace_id, span_id, "support")
        assert row["entityType"] == "agent_run"
        assert row["entity"] == {"traceId": trace_id, "spanId": span_id}
        assert row["metadata"]["scoreSource"] == "trace"
        assert row["metadata"]["agentRunId"] == span_id
        assert row["output"][0]["content"]["content"] == "It left the warehouse on Monday."
    assert 'scorewatch_traces_runs_total{scorewatch_traces_outcome="admitted"} 1.0' in out
    assert re.search(r'scorewatch_evaluation_score_count\{gen_ai_evaluation_name="tone"', out)

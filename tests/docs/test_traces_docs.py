"""docs/traces.md's quick start, run as written: its bash block starts `scorewatch serve` with
docs/examples/traces/scorewatch.toml and runs docs/examples/traces/agent.py against it. Only
what a test machine needs differs: free ports instead of 8787 / 4318, the loopback LLM server
instead of OpenAI (OPENAI_BASE_URL), and no `pip install` (the test environment has it all)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from docs_support import REPO, blocks
from scorewatch.testing.judge_server import LoopbackJudgeServer, Reply

pytestmark = pytest.mark.e2e

DOC = REPO / "docs" / "traces.md"
EXAMPLES = REPO / "docs" / "examples" / "traces"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _quick_start() -> str:
    (block,) = [b for b in blocks(DOC) if b.language == "bash" and "agent.py" in b.code]
    return block.code


def test_the_quick_start_scores_the_agent_from_its_traces(tmp_path: Path) -> None:
    script = _quick_start()
    assert script.startswith("pip install ")
    main, traces = _free_port(), _free_port()
    config = (EXAMPLES / "scorewatch.toml").read_text(encoding="utf-8")
    assert '"127.0.0.1:8787"' in config and '"127.0.0.1:4318"' in config
    config = config.replace("127.0.0.1:8787", f"127.0.0.1:{main}")
    config = config.replace("127.0.0.1:4318", f"127.0.0.1:{traces}")
    (tmp_path / "scorewatch.toml").write_text(config, encoding="utf-8")
    script = (
        script.split("\n", 1)[1]  # no pip install
        .replace("docs/examples/traces/scorewatch.toml", str(tmp_path / "scorewatch.toml"))
        .replace("docs/examples/traces/agent.py", str(EXAMPLES / "agent.py"))
        .replace("127.0.0.1:8787", f"127.0.0.1:{main}")
        .replace("127.0.0.1:4318", f"127.0.0.1:{traces}")
    )
    wrapped = "set -eo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n" + script
    with LoopbackJudgeServer(default=Reply("It left the warehouse on Monday.")) as llm:
        env = {
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "OPENAI_BASE_URL": llm.base_url,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
        done = subprocess.run(
            ["bash", "-c", wrapped],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        asked = [request.messages for request in llm.requests]
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
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

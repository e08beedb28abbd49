"""A judge that rejects its key is not silent in `scorewatch serve` (issue 29, items 4 and 5).

At the default log level: one warning per scorer and error code a minute, naming the scorer,
the code, the error's class and the variable holding the key (never the key, never content);
after three rejections in a row the judge is paused (`JUDGE_PAUSED`: no call made); the stored
rows carry the judge's code, the very code `scorewatch eval` reports for the same failure.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from scorewatch.testing import HttpError, LoopbackJudgeServer
from serve_support import (
    JUDGE_KEY,
    JUDGE_KEY_ENV,
    ServeProcess,
    judge_table,
    run_serve,
    write_config,
)

pytestmark = pytest.mark.e2e

ECHOED = "CANARY-CONTENT-5b7e"
CONFIG = """\
{judge}

[[scorers]]
id = "relevancy"
kind = "answer-relevancy"

[sinks]
sqlite = "scores.db"

[telemetry]
prometheus = true
otlp = false
"""


def _rejecting_judge() -> LoopbackJudgeServer:
    # Providers echo parts of the request in their error bodies: the log must not.
    return LoopbackJudgeServer(
        default=HttpError(401, f"Incorrect API key {JUDGE_KEY}; request: {ECHOED}")
    )


def test_a_rejected_key_is_logged_paused_and_coded_as_eval_codes_it(tmp_path: Path) -> None:
    with _rejecting_judge() as judge:
        config = write_config(
            tmp_path, CONFIG.format(judge=judge_table(judge.base_url)), module=False
        )
        served = ServeProcess(config)
        try:
            served.wait_listening()
            codes = []
            with httpx.Client(base_url=served.url, timeout=60) as http:
                for number in range(6):
                    item = {"input": f"{ECHOED} question {number}?", "output": "a", "target": "t"}
                    answer = http.post("/v1/scores", params={"wait": "true"}, json=item)
                    (result,) = answer.json()["results"]
                    codes.append((result["status"], result["error_code"]))
                metrics = http.get("/metrics").text
            assert served.terminate() == 0
        finally:
            served.kill()
        calls_by_serve = judge.request_count
        # `scorewatch eval` with the same scorer file, against the same judge.
        data = tmp_path / "data.jsonl"
        data.write_text(json.dumps({"input": "q?", "output": "a"}) + "\n", encoding="utf-8")
        evaluated = subprocess.run(
            [sys.executable, "-m", "scorewatch", "eval", str(data), "--scorers", str(config),
             "--out", str(tmp_path / "results.jsonl"), "--format", "json"],
            env={**os.environ, JUDGE_KEY_ENV: JUDGE_KEY}, cwd=tmp_path,
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    log = served.stderr()
    rejected, paused = ("failed", "AUTHENTICATION_FAILED"), ("failed", "JUDGE_PAUSED")
    assert codes == [rejected] * 3 + [paused] * 3, codes
    assert calls_by_serve == 3  # the paused runs made no call
    # Counted: the judge's attempts by error type (the paused ones too, with no request).
    attempts = {
        error: float(count)
        for error, count in re.findall(
            r"^gen_ai_client_operation_duration_seconds_count"
            r'\{[^}]*error_type="(\w+)"[^}]*\} (\S+)$',
            metrics,
            re.M,
        )
    }
    assert attempts == {"AUTHENTICATION_FAILED": 3.0, "JUDGE_PAUSED": 3.0}, attempts
    warnings = [line for line in log.splitlines() if " WARNING " in line]
    assert len(warnings) == 3, log  # one per (scorer, code), and the pause itself
    first, pause, refused = warnings
    assert "scorer 'relevancy' failed on run " in first
    assert "AUTHENTICATION_FAILED (JudgeProviderError)" in first
    assert f"check {JUDGE_KEY_ENV} (named by api_key_env)" in first
    assert "3 credential failure(s) in a row (AUTHENTICATION_FAILED); calls paused" in pause
    assert "JUDGE_PAUSED (JudgeProviderError)" in refused and "no call was made" in refused
    assert JUDGE_KEY not in log and ECHOED not in log
    assert evaluated.returncode == 1, evaluated.stderr
    (record,) = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert record["error_code"] == "AUTHENTICATION_FAILED"
    assert re.search(r"AUTHENTICATION_FAILED", evaluated.stdout), evaluated.stdout


def test_check_names_the_api_key_env_variable_when_it_is_unset(tmp_path: Path) -> None:
    config = write_config(
        tmp_path, CONFIG.format(judge=judge_table("http://127.0.0.1:9/v1")), module=False
    )
    code, stderr = run_serve(config, "--check", env={JUDGE_KEY_ENV: "", "OPENAI_API_KEY": ""})
    assert code == 2
    assert stderr.strip().splitlines() == [
        f"scorewatch serve: {config}: scorer 'relevancy': judge model 'openai/loopback-judge' "
        f"has no API key: set {JUDGE_KEY_ENV} (named by api_key_env)"
    ]

"""The whole loop with real processes: sample -> label -> agreement -> alert.

A real `scorewatch serve` scores live traffic through a judge (litellm over HTTP to a loopback
judge server) with a review rate; the runs of the review sample are read from `GET /v1/review`
and labelled by a person over `POST /v1/labels`; a real Prometheus scrapes serve's real
`/metrics` and evaluates the repository's alert rules (the short-window variant, which differs
from production only in its windows, `for` and minimum number of labels). While the judge agrees
with the people, ScorewatchJudgeAgreementLow stays silent; once a judge that drifts from the
labels is swapped in (a new scorer version, served by a new process) and its runs are labelled,
the alert fires for that version, and only for it, as Prometheus' `/api/v1/alerts` shows.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sklearn.metrics import cohen_kappa_score

from deploy_support import SHORT_RULES_FILE
from prometheus_support import free_port, query, running_prometheus
from scorewatch.testing import LoopbackJudgeServer, Reply
from serve_support import ServeProcess, write_config

pytestmark = [pytest.mark.e2e, pytest.mark.needs_binary]

ALERT = "ScorewatchJudgeAgreementLow"

# The judged scorer of serve_support (one judge call per run) and its drifting version: the
# same prompt step with other instructions, so another scorer version. The loopback judge below
# rates as the people do, and the drifting version the other way round.
CONFIG = """\
[[scorers]]
id = "judged"
factory = "sw_test_scorers:{factory}"
review_rate = 0.5

[sinks]
sqlite = "scores.db"

[telemetry]
prometheus = true
otlp = false
"""


def _rate(body: dict[str, Any]) -> Reply:
    text = json.dumps(body["messages"])
    good = "good answer" in text
    if "judge v2" in text:
        good = not good  # the drifting judge: it passes what people fail, and fails the rest
    return Reply(text=json.dumps({"score": 0.9 if good else 0.1}))


@pytest.fixture
def judge() -> Iterator[LoopbackJudgeServer]:
    with LoopbackJudgeServer(_rate) as server:
        yield server


def _serve(directory: Path, factory: str, port: int, judge: LoopbackJudgeServer) -> ServeProcess:
    config = write_config(directory, CONFIG.format(factory=factory))
    process = ServeProcess(
        config, listen=f"127.0.0.1:{port}", env={"SW_TEST_JUDGE_BASE": judge.base_url}
    )
    process.wait_listening()
    return process


def _score_and_label(client: httpx.Client, first: int, count: int) -> tuple[list[str], str]:
    """Score `count` calls (every other one a good answer), then label, as a person working
    through `GET /v1/review` would, every run waiting for review: a good answer passes, a bad
    one fails. Returns the verdicts given and the scorer version that scored the runs."""
    for number in range(first, first + count):
        kind = "good" if number % 2 == 0 else "bad"
        answer = client.post(
            "/v1/scores",
            params={"wait": "true"},
            json={
                "scorers": ["judged"],
                "input": f"question {number}",
                "output": f"a {kind} answer to question {number}",
                "target": "support-bot",
                "trace_id": f"{number:032x}",
                "span_id": f"{number:016x}",
            },
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["results"][0]["status"] == "success", answer.text
    review = client.get("/v1/review", params={"scorer": "judged", "limit": 500})
    assert review.status_code == 200, review.text
    waiting = review.json()["runs"]
    verdicts = ["pass" if "good answer" in run["output"] else "fail" for run in waiting]
    # The sample is a share of the runs, deterministic in their ids; both kinds are in it.
    assert 5 <= len(waiting) < count and set(verdicts) == {"pass", "fail"}, verdicts
    labels = [
        {"scorer": "judged", "run_id": run["id"], "annotator": "ana", "verdict": verdict}
        for run, verdict in zip(waiting, verdicts, strict=True)
    ]
    stored = client.post("/v1/labels", json={"labels": labels})
    assert stored.status_code == 200, stored.text
    versions = {label["scorer_version"] for label in stored.json()["labels"]}
    (version,) = versions
    assert client.get("/v1/review", params={"scorer": "judged"}).json()["pending"] == 0
    return verdicts, version


def _until(read: Callable[[], Any], done: Callable[[Any], bool], timeout: float = 90.0) -> Any:
    deadline = time.monotonic() + timeout
    value = read()
    while not done(value) and time.monotonic() < deadline:
        time.sleep(0.5)
        value = read()
    return value


def _agreement(base: str, version: str) -> dict[str, float]:
    found = query(base, f'scorewatch_judge_agreement{{scorewatch_scorer_version="{version}"}}')
    return {
        series["metric"]["scorewatch_agreement_measure"]: float(series["value"][1])
        for series in found
    }


def _alerts(base: str) -> list[dict[str, Any]]:
    response = httpx.get(f"{base}/api/v1/alerts", timeout=10)
    response.raise_for_status()
    alerts: list[dict[str, Any]] = response.json()["data"]["alerts"]
    return [alert for alert in alerts if alert["labels"]["alertname"] == ALERT]


def test_a_judge_drifting_from_the_labels_fires_the_agreement_alert(
    prometheus_bin: str, tmp_path: Path, judge: LoopbackJudgeServer
) -> None:
    steady_port, drifting_port = free_port(), free_port()
    targets = [f"127.0.0.1:{steady_port}", f"127.0.0.1:{drifting_port}"]
    with running_prometheus(
        prometheus_bin, tmp_path / "prometheus", targets, rule_files=[SHORT_RULES_FILE]
    ) as base:
        steady = _serve(tmp_path / "serve", "make_judged_scorer", steady_port, judge)
        try:
            with httpx.Client(base_url=steady.url, timeout=60) as client:
                verdicts, v1 = _score_and_label(client, 2, 32)
            labelled = len(verdicts)
            # The people and the judge agree: kappa 1 over the labels, as Prometheus reads it.
            seen = _until(
                lambda: _agreement(base, v1),
                lambda found: found.get("labels") == labelled and found.get("kappa") == 1.0,
            )
            assert seen.get("kappa") == 1.0 and seen.get("labels") == labelled, seen
            pending = query(base, 'scorewatch_review_runs{scorewatch_review_state="pending"}')
            assert [float(series["value"][1]) for series in pending] == [0.0]
            # Longer than the rule's `for` (5s): an agreeing judge never even goes pending.
            time.sleep(8)
            assert _alerts(base) == []
        finally:
            steady.terminate()
        # A new judge is swapped in: the same scorer id and prompt, new instructions, so a new
        # scorer version, served by a new process on the same store.
        drifting = _serve(tmp_path / "serve", "make_drifting_judged_scorer", drifting_port, judge)
        try:
            with httpx.Client(base_url=drifting.url, timeout=60) as client:
                verdicts_v2, v2 = _score_and_label(client, 102, 32)
                assert v2 != v1
                measured = client.get("/v1/agreement", params={"scorer": "judged"}).json()
            # The drifting judge fails what the people pass and passes what they fail.
            flipped = ["fail" if verdict == "pass" else "pass" for verdict in verdicts_v2]
            kappa_v2 = float(cohen_kappa_score(verdicts_v2, flipped))
            assert kappa_v2 < 0
            by_version = {entry["scorer_version"]: entry for entry in measured["versions"]}
            assert by_version[v2]["verdicts"]["kappa"]["value"] == pytest.approx(kappa_v2)
            assert by_version[v1]["verdicts"]["kappa"]["value"] == pytest.approx(1.0)
            firing = _until(
                lambda: _alerts(base),
                lambda alerts: any(alert["state"] == "firing" for alert in alerts),
            )
            assert [alert["state"] for alert in firing] == ["firing"], firing
            (alert,) = firing
            assert alert["labels"]["scorewatch_scorer_id"] == "judged"
            assert alert["labels"]["scorewatch_scorer_version"] == v2
            assert alert["labels"]["severity"] == "warning"
            assert float(alert["value"]) == pytest.approx(kappa_v2)
            assert _agreement(base, v2)["labels"] == len(verdicts_v2)
        finally:
            drifting.terminate()

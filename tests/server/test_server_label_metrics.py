"""Label metrics of a real `scorewatch serve`: labels arriving over HTTP move
`scorewatch_labels_total` and `scorewatch_judge_agreement` on its /metrics, and the agreement
is computed again at start-up from the stored labels."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from scipy.stats import spearmanr

from scorewatch.live.entry import fraction_of
from serve_support import ServeProcess, write_config

pytestmark = pytest.mark.e2e

CONFIG = """\
[[scorers]]
id = "length"
factory = "sw_test_scorers:make_length_scorer"
review_rate = 0.5

[sinks]
sqlite = "scores.db"

[telemetry]
prometheus = true
otlp = false
"""


def _samples(client: httpx.Client, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    text = client.get("/metrics").text
    found: dict[tuple[tuple[str, str], ...], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                found[tuple(sorted(sample.labels.items()))] = sample.value
    return found


def _measure(client: httpx.Client, measure: str) -> float | None:
    for labels, value in _samples(client, "scorewatch_judge_agreement").items():
        if ("scorewatch_agreement_measure", measure) in labels:
            return value
    return None


def _until(read: Any, expected: Any, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    value = read()
    while value != expected and time.monotonic() < deadline:
        time.sleep(0.2)
        value = read()
    return value


def test_labels_move_the_agreement_metric(tmp_path: Path) -> None:
    path = write_config(tmp_path, CONFIG)
    with ServeProcess(path) as served, httpx.Client(base_url=served.url, timeout=60) as client:
        runs = []
        for length in (10, 30, 50, 70, 90):
            answer = client.post(
                "/v1/scores",
                params={"wait": "true"},
                json={"scorers": ["length"], "input": "q", "output": "x" * length, "target": "t"},
            )
            runs.append(answer.json()["results"][0])
        judge = [run["score"] for run in runs]
        # Ana ranks the runs as the judge does: Spearman 1.
        agreeing = [
            {"scorer": "length", "run_id": run["run_id"], "annotator": "ana", "score": score}
            for run, score in zip(runs, [0.2, 0.3, 0.4, 0.8, 0.9], strict=True)
        ]
        assert client.post("/v1/labels", json={"labels": agreeing}).status_code == 200
        assert _until(lambda: _measure(client, "spearman"), 1.0) == pytest.approx(1.0)
        labels = _samples(client, "scorewatch_labels_total")
        assert labels == {(("scorewatch_scorer_id", "length"),): 5.0}
        # Ben ranks them the other way round: the agreement drops to what SciPy says.
        drifting = [
            {"scorer": "length", "run_id": run["run_id"], "annotator": "ben", "score": score}
            for run, score in zip(runs, [0.9, 0.7, 0.5, 0.3, 0.1], strict=True)
        ]
        assert client.post("/v1/labels", json={"labels": drifting}).status_code == 200
        people = [0.2, 0.3, 0.4, 0.8, 0.9, 0.9, 0.7, 0.5, 0.3, 0.1]
        expected = float(spearmanr(people, judge + judge).statistic)
        moved = _until(lambda: _measure(client, "spearman"), pytest.approx(expected, abs=1e-9))
        assert moved == pytest.approx(expected, abs=1e-9)
        assert _measure(client, "labels") == 10
        # Every run is labelled now: those of the review sample count as labelled, none pending.
        sampled = sum(fraction_of(f"review:{run['run_id']}") < 0.5 for run in runs)
        review = {
            dict(labels)["scorewatch_review_state"]: value
            for labels, value in _samples(client, "scorewatch_review_runs").items()
        }
        assert review == {"marked": sampled, "labelled": sampled, "pending": 0}
    # A new process finds the stored labels and reports their agreement at once.
    with ServeProcess(path) as again, httpx.Client(base_url=again.url, timeout=60) as client:
        restarted = _until(lambda: _measure(client, "spearman"), pytest.approx(expected, abs=1e-9))
        assert restarted == pytest.approx(expected, abs=1e-9)

"""Categorical human labels over HTTP against a real `scorewatch serve` (issue 32): a
rubric-label scorer's choices are its categories, people label runs with one, an unknown
category is refused with the field named, and `GET /v1/agreement` compares the judge's
category (the one of its stored score) with theirs, as scikit-learn does on the same pairs."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from scorewatch.testing import LoopbackJudgeServer
from serve_support import (
    JUDGE_KEY,
    JUDGE_KEY_ENV,
    ServeProcess,
    authorized_client,
    import_labels,
    judge_table,
    score_now,
    write_config,
)

pytestmark = pytest.mark.e2e

TOKEN = "categories-test-token-51c0"
CHOICES = {"good": 1.0, "ok": 0.5, "bad": 0.0}

CONFIG = """\
[server]
auth_token_env = "SW_TEST_TOKEN"

{judge}

[[scorers]]
id = "tone"
kind = "rubric-label"

[scorers.options]
rubric = "Polite and complete is good."
choices = {{ good = 1.0, ok = 0.5, bad = 0.0 }}

[sinks]
sqlite = "scores.db"

[telemetry]
prometheus = true
otlp = false
"""

_OUTPUT = re.compile(r"Output:\n(\w+)")


def _choose(body: dict[str, Any]) -> str:
    """The judge picks the category the output names first ("good-3" -> good)."""
    found = _OUTPUT.search(body["messages"][-1]["content"])
    assert found is not None
    return json.dumps({"choice": found.group(1), "reason": "as the output says"})


# What the judge picks for each run, and what people say of the same runs.
JUDGE = ["good", "good", "good", "ok", "ok", "ok", "bad", "bad", "bad", "good", "ok", "bad"]
PEOPLE = ["good", "good", "ok", "ok", "ok", "bad", "bad", "bad", "ok", "bad", "good", "bad"]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """serve with the rubric-label scorer `tone`, its judge a loopback server (`_choose`)."""
    with LoopbackJudgeServer(_choose) as judge:
        config = CONFIG.format(judge=judge_table(judge.base_url))
        path = write_config(tmp_path_factory.mktemp("serve-categories"), config)
        with ServeProcess(path, env={"SW_TEST_TOKEN": TOKEN}) as process:
            yield process


@pytest.fixture(scope="module")
def client(served: ServeProcess) -> Iterator[httpx.Client]:
    with authorized_client(served, TOKEN) as http:
        yield http


@pytest.fixture(scope="module")
def runs(client: httpx.Client) -> list[str]:
    ids = []
    for index, category in enumerate(JUDGE):
        result = score_now(client, "tone", input="q", output=f"{category}-{index}", target="bot")
        assert result["score"] == CHOICES[category]
        ids.append(result["run_id"])
    return ids


def _label(run_id: str, verdict: str, annotator: str = "ana") -> dict[str, Any]:
    return {"scorer": "tone", "run_id": run_id, "annotator": annotator, "verdict": verdict}


def test_a_verdict_outside_the_categories_is_refused_naming_the_field_and_the_choices(
    client: httpx.Client, runs: list[str]
) -> None:
    for verdict in ("great", "pass", "x" * 129):
        bad = _label(runs[1], verdict, "mallory")
        answer = client.post("/v1/labels", json={"labels": [_label(runs[0], "good"), bad]})
        assert answer.status_code == 422, answer.text
        problems = {p["field"]: p["message"] for p in answer.json()["fields"]}
        assert "labels[1].verdict" in problems, answer.text
        if len(verdict) <= 128:
            assert all(repr(choice) in problems["labels[1].verdict"] for choice in CHOICES)
    answer = client.get("/v1/agreement", params={"scorer": "tone"})
    assert answer.json()["versions"] == []  # refused whole: nothing was stored


def _metric_kappa(client: httpx.Client) -> float | None:
    """`scorewatch_judge_agreement{measure="kappa"}` on serve's /metrics, once computed."""
    for family in text_string_to_metric_families(client.get("/metrics").text):
        for sample in family.samples:
            measure = sample.labels.get("scorewatch_agreement_measure")
            if sample.name == "scorewatch_judge_agreement" and measure == "kappa":
                return float(sample.value)
    return None


def test_category_labels_are_stored_and_agreement_is_over_the_categories(
    client: httpx.Client, runs: list[str]
) -> None:
    labels = [_label(run, said) for run, said in zip(runs, PEOPLE, strict=True)]
    answer = client.post("/v1/labels", json={"labels": labels})
    assert answer.status_code == 200, answer.text
    assert answer.json()["stored"] == len(PEOPLE)
    agreement = client.get("/v1/agreement", params={"scorer": "tone"})
    assert agreement.status_code == 200, agreement.text
    (version,) = agreement.json()["versions"]
    verdicts = version["verdicts"]
    assert verdicts["kappa"]["n"] == len(PEOPLE)
    assert verdicts["kappa"]["value"] == pytest.approx(cohen_kappa_score(PEOPLE, JUDGE), abs=1e-9)
    assert verdicts["accuracy"]["value"] == pytest.approx(
        sum(p == j for p, j in zip(PEOPLE, JUDGE, strict=True)) / len(PEOPLE), abs=1e-9
    )
    order = sorted(CHOICES)
    assert verdicts["categories"] == order
    assert verdicts["confusion"] == confusion_matrix(PEOPLE, JUDGE, labels=order).tolist()
    # Not pass/fail: no false-pass or false-fail rates.
    assert "false_pass_rate" not in verdicts
    # The worst disagreement: people said bad where the judge said good, a gap of the scale.
    worst = version["disagreements"][0]
    assert (worst["run_id"], worst["label_verdict"], worst["gap"]) == (runs[9], "bad", 1.0)
    # The agreement metric carries the same categorical kappa (recomputed after labels arrive).
    deadline = time.monotonic() + 30
    while _metric_kappa(client) is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _metric_kappa(client) == pytest.approx(cohen_kappa_score(PEOPLE, JUDGE), abs=1e-9)


def test_labels_import_takes_categories_and_refuses_another_verdict_by_its_line(
    served: ServeProcess, runs: list[str], tmp_path: Path
) -> None:
    env = {JUDGE_KEY_ENV: JUDGE_KEY}
    good = tmp_path / "good.csv"
    good.write_text(
        f"scorer,run_id,annotator,verdict\ntone,{runs[0]},dee,ok\ntone,{runs[1]},dee,bad\n",
        encoding="utf-8",
    )
    done = import_labels(served.config, good, env)
    assert done.returncode == 0, done.stderr
    assert "stored 2 labels" in done.stdout
    bad = tmp_path / "bad.jsonl"
    lines = [_label(runs[2], "good", "eli"), _label(runs[3], "fail", "eli")]
    bad.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    refused = import_labels(served.config, bad, env)
    assert refused.returncode == 1
    assert f"{bad}:2: verdict: not a verdict of this scorer" in refused.stderr

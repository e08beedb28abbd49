"""Human labels over HTTP against a real `scorewatch serve`: stored beside the scores, one per
run, scorer and annotator; hostile labels refused with the field named and nothing stored; and
`GET /v1/agreement` answering what the libraries compute from the same pairs."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score, mean_absolute_error

from scorewatch.live.entry import fraction_of
from serve_support import (
    ServeProcess,
    authorized_client,
    import_labels,
    score_now,
    write_config,
)

pytestmark = pytest.mark.e2e

TOKEN = "labels-test-token-8e2a"

CONFIG = """\
[server]
auth_token_env = "SW_TEST_TOKEN"
# Each annotator's budget: 500 labels at once, refilled by one every 1000 s (a flood is over
# budget for the rest of the test).
labels_per_second = 0.001
label_burst = 500

[[scorers]]
id = "length"
factory = "sw_test_scorers:make_length_scorer"
review_rate = 0.5

[[scorers]]
id = "failing"
factory = "sw_test_scorers:make_failing_scorer"

[sinks]
sqlite = "scores.db"
jsonl = "scores.jsonl"

[telemetry]
prometheus = false
otlp = false
"""

# Outputs of 10..100 characters: the length scorer gives them 0.1..1.0.
LENGTHS = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    path = write_config(tmp_path_factory.mktemp("serve-labels"), CONFIG)
    with ServeProcess(path, env={"SW_TEST_TOKEN": TOKEN}) as process:
        yield process


@pytest.fixture(scope="module")
def client(served: ServeProcess) -> Iterator[httpx.Client]:
    with authorized_client(served, TOKEN) as http:
        yield http


@pytest.fixture(scope="module")
def runs(client: httpx.Client) -> list[dict[str, Any]]:
    """One scored run of `length` per output length: run id, trace and span, judge score."""
    scored = []
    for index, length in enumerate(LENGTHS):
        trace, span = f"{index + 1:032x}", f"{index + 1:016x}"
        result = score_now(
            client,
            "length",
            input="q",
            output="x" * length,
            target="bot",
            trace_id=trace,
            span_id=span,
        )
        scored.append({"run_id": result["run_id"], "trace": trace, "span": span, **result})
    return scored


def _label_rows(served: ServeProcess) -> list[dict[str, Any]]:
    conn = sqlite3.connect(served.config.parent / "scores.db")
    conn.row_factory = sqlite3.Row
    try:
        return [dict(row) for row in conn.execute("SELECT * FROM scorewatch_labels")]
    finally:
        conn.close()


def _post(client: httpx.Client, *labels: dict[str, Any], **kwargs: Any) -> httpx.Response:
    return client.post("/v1/labels", json={"labels": list(labels)}, **kwargs)


def test_labels_are_stored_by_run_id_or_by_trace_and_replaced_per_annotator(
    served: ServeProcess, client: httpx.Client, runs: list[dict[str, Any]]
) -> None:
    first, second = runs[0], runs[1]
    answer = _post(
        client,
        {"scorer": "length", "run_id": first["run_id"], "annotator": "ana", "score": 0.2},
        {
            "scorer": "length",
            "target": "bot",
            "trace_id": second["trace"],
            "span_id": second["span"],
            "annotator": "ana",
            "verdict": "fail",
            "comment": "too short",
        },
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["stored"] == 2
    assert [label["run_id"] for label in body["labels"]] == [first["run_id"], second["run_id"]]
    # Ana changes her mind; Ben labels the same run: two labels, Ana's replaced, Ben's added.
    again = _post(
        client,
        {"scorer": "length", "run_id": first["run_id"], "annotator": "ana", "score": 0.3},
        {"scorer": "length", "run_id": first["run_id"], "annotator": "ben", "verdict": "pass"},
    )
    assert again.status_code == 200, again.text
    rows = {(r["runId"], r["annotator"]): r for r in _label_rows(served)}
    assert rows[(first["run_id"], "ana")]["score"] == 0.3
    assert rows[(first["run_id"], "ben")]["verdict"] == "pass"
    assert rows[(second["run_id"], "ana")]["comment"] == "too short"
    # The JSONL copy has every label sent, in order.
    lines = (served.config.parent / "scores.labels.jsonl").read_text().splitlines()
    assert [json.loads(line)["annotator"] for line in lines][-4:] == ["ana", "ana", "ana", "ben"]


def _refused(answer: httpx.Response, status: int, field: str) -> None:
    assert answer.status_code == status, answer.text
    fields = [problem["field"] for problem in answer.json().get("fields", [])]
    assert field in fields, answer.text


def test_hostile_labels_are_refused_with_the_field_named_and_store_nothing(
    served: ServeProcess, client: httpx.Client, runs: list[dict[str, Any]]
) -> None:
    before = sorted((r["id"], r["updatedAt"]) for r in _label_rows(served))
    good = {"scorer": "length", "run_id": runs[2]["run_id"], "annotator": "eve", "score": 0.5}
    bad = {**good, "annotator": "mallory"}
    # Each bad label travels with a good one: the request is refused whole.
    _refused(_post(client, good, {**bad, "run_id": "no-such-run"}), 404, "labels[1].run_id")
    _refused(_post(client, good, {**bad, "score": 1.5}), 422, "labels[1].score")
    _refused(_post(client, good, {**bad, "score": -0.1}), 422, "labels[1].score")
    _refused(_post(client, good, {**bad, "scorer": "nope"}), 404, "labels[1].scorer")
    _refused(_post(client, good, {**bad, "scorer": "failing"}), 422, "labels[1].scorer")
    _refused(_post(client, good, good), 422, "labels[1]")
    _refused(_post(client, good, {**bad, "comment": "x" * 4001}), 422, "labels[1].comment")
    _refused(
        _post(client, good, {**bad, "score": None, "verdict": "maybe"}), 422, "labels[1].verdict"
    )
    _refused(_post(client, good, {**bad, "annotator": "a\x00b"}), 422, "labels[1].annotator")
    _refused(_post(client, {**good, "extra": 1}), 422, "labels[0].extra")
    both = {**good, "verdict": "pass"}
    _refused(_post(client, both), 422, "labels[0]")
    nan = '{"labels": [{"scorer": "length", "run_id": "r", "annotator": "a", "score": NaN}]}'
    answer = client.post("/v1/labels", content=nan, headers={"Content-Type": "application/json"})
    _refused(answer, 422, "labels[0].score")
    flood = [{**good, "annotator": f"bot-{i}"} for i in range(501)]
    _refused(_post(client, *flood), 422, "labels")
    assert httpx.post(f"{served.url}/v1/labels", json={"labels": [good]}).status_code == 401
    huge = client.post(
        "/v1/labels",
        content=b'{"labels": [' + b" " * (2 << 20) + b"]}",
        headers={"Content-Type": "application/json"},
    )
    assert huge.status_code == 413
    assert sorted((r["id"], r["updatedAt"]) for r in _label_rows(served)) == before


def test_agreement_equals_the_libraries_on_the_stored_pairs(
    served: ServeProcess, client: httpx.Client, runs: list[dict[str, Any]]
) -> None:
    # A second annotator, "cy", labels every run on the scale; the judge's score is length/100.
    human = [0.1, 0.3, 0.2, 0.5, 0.4, 0.7, 0.6, 0.9, 1.0, 0.8]
    labels = [
        {"scorer": "length", "run_id": run["run_id"], "annotator": "cy", "score": score}
        for run, score in zip(runs, human, strict=True)
    ]
    assert _post(client, *labels).status_code == 200
    answer = client.get("/v1/agreement", params={"scorer": "length", "threshold": 0.5})
    assert answer.status_code == 200, answer.text
    (version,) = answer.json()["versions"]
    assert version["scorer_version"]
    stored = client.get("/v1/agreement", params={"scorer": "length"}).json()
    assert stored["threshold"] == 0.5  # half the scale by default
    # The reference: every label of the scorer stored so far, with the judge's score of its run.
    judged = {run["run_id"]: run["score"] for run in runs}
    rows = [r for r in _label_rows(served) if r["scorerId"] == "length"]
    pairs = [(r["score"], judged[r["runId"]]) for r in rows if r["score"] is not None]
    people = [h for h, _ in pairs]
    judge = [j for _, j in pairs]
    scale = version["scale"]
    assert scale["spearman"]["n"] == len(pairs)
    assert scale["spearman"]["value"] == pytest.approx(spearmanr(people, judge).statistic, 1e-9)
    assert scale["mae"]["value"] == pytest.approx(mean_absolute_error(people, judge), abs=1e-9)
    cut = scale["at_threshold"]["kappa"]["value"]
    passes = [["pass" if v >= 0.5 else "fail" for v in side] for side in (people, judge)]
    assert cut == pytest.approx(cohen_kappa_score(*passes), abs=1e-9)
    # The pass/fail labels against the judge's scores cut at 0.5.
    verdict_rows = [r for r in rows if r["verdict"] is not None]
    said = [r["verdict"] for r in verdict_rows]
    cut_judge = ["pass" if judged[r["runId"]] >= 0.5 else "fail" for r in verdict_rows]
    verdicts = version["verdicts"]
    assert verdicts["kappa"]["n"] == len(verdict_rows)
    assert verdicts["accuracy"]["value"] == pytest.approx(
        sum(a == b for a, b in zip(said, cut_judge, strict=True)) / len(said), abs=1e-9
    )
    worst = max(abs(h - j) for h, j in pairs)
    assert version["disagreements"][0]["gap"] >= worst - 1e-9
    assert client.get("/v1/agreement", params={"scorer": "nope"}).status_code == 404


def test_a_store_path_holds_the_labels_table(served: ServeProcess) -> None:
    db = Path(served.config.parent / "scores.db")
    conn = sqlite3.connect(db)
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    finally:
        conn.close()
    assert {"mastra_scorers", "scorewatch_labels"} <= tables


def test_labels_import_reads_jsonl_and_csv_and_refuses_a_bad_file_whole(
    served: ServeProcess, runs: list[dict[str, Any]], tmp_path: Path
) -> None:
    good = tmp_path / "good.csv"
    good.write_text(
        "scorer,run_id,target,trace_id,span_id,annotator,score,verdict,comment\n"
        f"length,{runs[3]['run_id']},,,,dee,0.4,,from a sheet\n"
        f"length,,bot,{runs[4]['trace']},{runs[4]['span']},dee,,pass,\n",
        encoding="utf-8",
    )
    done = import_labels(served.config, good)
    assert done.returncode == 0, done.stderr
    assert "stored 2 labels" in done.stdout
    rows = {(r["runId"], r["annotator"]): r for r in _label_rows(served)}
    assert rows[(runs[3]["run_id"], "dee")]["comment"] == "from a sheet"
    assert rows[(runs[4]["run_id"], "dee")]["verdict"] == "pass"
    before = sorted((r["id"], r["updatedAt"]) for r in _label_rows(served))
    bad = tmp_path / "bad.jsonl"
    lines = [
        {"scorer": "length", "run_id": runs[5]["run_id"], "annotator": "dee", "score": 0.5},
        {"scorer": "length", "run_id": "gone", "annotator": "dee", "score": 0.5},
    ]
    bad.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    refused = import_labels(served.config, bad)
    assert refused.returncode == 1
    assert f"{bad}:2: run_id: no such stored run" in refused.stderr
    invalid = tmp_path / "invalid.jsonl"
    invalid.write_text(json.dumps({**lines[0], "score": 7}) + "\n", encoding="utf-8")
    out_of_scale = import_labels(served.config, invalid)
    assert out_of_scale.returncode == 1
    assert f"{invalid}:1: score: outside the scale 0 to 1" in out_of_scale.stderr
    assert sorted((r["id"], r["updatedAt"]) for r in _label_rows(served)) == before


def test_review_lists_the_sampled_unlabelled_runs_until_labelled(
    served: ServeProcess, client: httpx.Client, runs: list[dict[str, Any]]
) -> None:
    labelled = {r["runId"] for r in _label_rows(served) if r["scorerId"] == "length"}
    sampled = [run["run_id"] for run in runs if fraction_of(f"review:{run['run_id']}") < 0.5]
    assert 0 < len(sampled) < len(runs), "the sample should be a share of the runs"
    # The mark was stored with each score row when the run was scored.
    conn = sqlite3.connect(served.config.parent / "scores.db")
    try:
        marks = dict(
            conn.execute(
                'SELECT "id", "reviewSampled" FROM mastra_scorers WHERE "scorerId" = ?', ("length",)
            )
        )
    finally:
        conn.close()
    assert {run_id for run_id, mark in marks.items() if mark} == set(sampled)
    answer = client.get("/v1/review", params={"scorer": "length"})
    assert answer.status_code == 200, answer.text
    pending = [run["id"] for run in answer.json()["runs"]]
    assert sorted(pending) == sorted(set(sampled) - labelled)
    counts = {key: answer.json()[key] for key in ("marked", "labelled", "pending")}
    done = len(set(sampled) & labelled)
    assert counts == {"marked": len(sampled), "labelled": done, "pending": len(sampled) - done}
    limited = client.get("/v1/review", params={"scorer": "length", "limit": 1}).json()
    assert [run["id"] for run in limited["runs"]] == pending[:1]
    if pending:
        first = answer.json()["runs"][0]
        assert first["output"].startswith("x") and first["score"] is not None
        label = {"scorer": "length", "run_id": pending[0], "annotator": "rev", "verdict": "pass"}
        assert _post(client, label).status_code == 200
        again = client.get("/v1/review", params={"scorer": "length"}).json()
        assert [run["id"] for run in again["runs"]] == pending[1:]
    # A scorer without a review rate has nothing to review; an unknown one is a 404.
    assert client.get("/v1/review", params={"scorer": "failing"}).json()["runs"] == []
    assert client.get("/v1/review", params={"scorer": "nope"}).status_code == 404


def test_one_annotators_flood_is_refused_and_costs_no_one_else_a_label(
    served: ServeProcess, client: httpx.Client, runs: list[dict[str, Any]]
) -> None:
    def flood(round_: int) -> list[dict[str, Any]]:
        return [
            {"scorer": "length", "run_id": run["run_id"], "annotator": "flood", "score": 0.01}
            for run in runs
        ]

    # The flooding annotator's budget (500 labels) holds 50 requests of 10 labels; the 51st is
    # refused whole, with the field named and a Retry-After, and stores nothing.
    for round_ in range(50):
        assert _post(client, *flood(round_)).status_code == 200
    before = sorted((r["id"], r["updatedAt"]) for r in _label_rows(served))
    over = _post(client, *flood(50))
    _refused(over, 429, "labels[0].annotator")
    assert over.json()["error"] == "too_many_labels"
    assert int(over.headers["Retry-After"]) == over.json()["retry_after"] >= 1
    assert sorted((r["id"], r["updatedAt"]) for r in _label_rows(served)) == before
    # While the flood goes on, other annotators' labels are admitted and stored, every one.
    people = [
        {"scorer": "length", "run_id": run["run_id"], "annotator": f"person-{i}", "score": 0.5}
        for i, run in enumerate(runs)
    ]
    with ThreadPoolExecutor(max_workers=8) as pool:
        floods = [pool.submit(_post, client, *flood(51 + i)) for i in range(30)]
        labelled = [pool.submit(_post, client, label) for label in people]
        flood_statuses = [future.result().status_code for future in floods]
        people_statuses = [future.result().status_code for future in labelled]
    assert flood_statuses == [429] * 30
    assert people_statuses == [200] * len(people)
    stored = {(r["runId"], r["annotator"]) for r in _label_rows(served)}
    assert {(label["run_id"], label["annotator"]) for label in people} <= stored
    # A request naming the flooding annotator among others is refused whole.
    mixed = _post(client, {**people[0], "annotator": "someone-new"}, flood(99)[1])
    _refused(mixed, 429, "labels[1].annotator")

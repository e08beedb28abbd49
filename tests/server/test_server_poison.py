"""Poison values against a real `scorewatch serve` with SQLite and JSONL sinks (issue 17, items
1-3): what the intake refuses (non-finite numbers; NUL and unpaired surrogates in ids) is a 422
naming the field; what it accepts (NUL, unpaired surrogates anywhere in the content) every sink
stores; a row a sink refuses fails alone, as an `unstorable` failure, while every other
client's row is stored and `?wait=true` tells each the truth; `GET /v1/scores` answers 200
whatever was stored, and a NUL in a filter is a 422."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from serve_support import ServeProcess, sqlite_rows, wait_idle, write_config

pytestmark = pytest.mark.e2e

CONFIG = """\
[server]
wait_timeout = 30

[[scorers]]
id = "length"
factory = "sw_test_scorers:make_length_scorer"

[sinks]
sqlite = "scores.db"
jsonl = "scores.jsonl"
"""

HEADERS = {"Content-Type": "application/json"}
# Text a client can send as JSON escapes: NUL, a lone high and a lone low surrogate.
NASTY = "\\u0000 nul, \\ud800 high, \\udfff low"
FFFD = "\ufffd"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    directory = tmp_path_factory.mktemp("poison")
    with ServeProcess(write_config(directory, CONFIG)) as process:
        # What a sink refuses for a reason of the row: SQLite aborts an insert (a constraint of
        # the operator's, as a CHECK or a trigger would be) for one output.
        conn = sqlite3.connect(directory / "scores.db")
        conn.execute(
            "CREATE TRIGGER refuse_poison BEFORE INSERT ON mastra_scorers "
            "WHEN NEW.output LIKE '%POISON-ROW%' BEGIN SELECT RAISE(ABORT, 'poison'); END"
        )
        conn.commit()
        conn.close()
        yield process


@pytest.fixture
def client(served: ServeProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served.url, timeout=60) as http:
        yield http


def raw_post(client: httpx.Client, path: str, text: str, **params: str) -> httpx.Response:
    return client.post(path, content=text.encode(), headers=HEADERS, params=params)


def test_non_finite_numbers_are_422_naming_the_field(client: httpx.Client) -> None:
    before = client.get("/v1/stats").json()["sampled"]
    answer = raw_post(
        client,
        "/v1/scores",
        '{"target": "t", "input": "q", "output": {"scores": [1, NaN], "x": {"y": -Infinity}}}',
    )
    assert answer.status_code == 422, answer.text
    body = answer.json()
    assert body["error"] == "invalid_request"
    [problem] = body["fields"]  # one per field of the request, wherever inside it
    assert problem["field"] in {"output.scores[1]", "output.x.y"}
    assert "NaN, Infinity" in problem["message"]
    batch = raw_post(
        client,
        "/v1/scores:batch",
        '{"items": [{"target": "t", "input": "q", "output": "a"},'
        ' {"target": "t", "input": Infinity, "output": "a"}]}',
    )
    assert batch.status_code == 422
    assert [f["field"] for f in batch.json()["fields"]] == ["items[1].input"]
    # Refused whole: nothing of either request was accepted.
    assert client.get("/v1/stats").json()["sampled"] == before


@pytest.mark.parametrize("number", ["1e400", "-1E+999", "9" * 309 + ".5", '[1, {"deep": 2e308}]'])
def test_numbers_past_a_double_are_422_not_stored_as_infinity(
    client: httpx.Client, number: str
) -> None:
    # Issue 28 item 13: Python reads 1e400 as infinity; it passed the check (which looked for
    # the words NaN and Infinity) and was stored as the string "Infinity".
    before = client.get("/v1/stats").json()["sampled"]
    text = f'{{"target": "t", "input": "q", "output": "a", "metadata": {{"n": {number}}}}}'
    answer = raw_post(client, "/v1/scores", text)
    assert answer.status_code == 422, answer.text
    [problem] = answer.json()["fields"]
    assert problem["field"].startswith("metadata.n")
    assert client.get("/v1/stats").json()["sampled"] == before
    # Large finite numbers and the text "1e400" are fine.
    fine = '{"target": "t", "input": "1e400", "output": "a", "metadata": {"n": 1e300}}'
    assert raw_post(client, "/v1/scores", fine).status_code == 202


def test_nul_and_lone_surrogates_in_identifiers_are_422(client: httpx.Client) -> None:
    for field in ("target", "trace_id", "span_id", "run_id"):
        body = {"target": "t", "input": "q", "output": "a", field: "ab\u0000cd"}
        answer = client.post("/v1/scores", json=body)
        assert answer.status_code == 422, (field, answer.text)
        assert [f["field"] for f in answer.json()["fields"]] == [field]
    lone = raw_post(client, "/v1/scores", '{"target": "t\\ud800", "input": "q", "output": "a"}')
    assert lone.status_code == 422
    assert lone.json()["fields"][0]["field"] == "target"


def test_nul_and_lone_surrogates_are_stored_by_every_sink(
    client: httpx.Client, served: ServeProcess
) -> None:
    document = (
        '{"scorers": ["length"], "target": "nasty", "trace_id": "t-nasty",'
        f' "input": "{NASTY}", "output": {{"text": "{NASTY}", "k\\u0000ey\\ud800": [1.5]}},'
        f' "metadata": {{"note": "{NASTY}"}}, "request_context": {{"v": "\\udc00"}}}}'
    )
    answer = raw_post(client, "/v1/scores", document, wait="true")
    assert answer.status_code == 200, answer.text
    [result] = answer.json()["results"]
    assert result["status"] == "success", (result["error"], result["error_code"])
    wait_idle(client)

    listed = client.get("/v1/scores", params={"target": "nasty"})
    assert listed.status_code == 200
    [row] = listed.json()["scores"]
    expected = f"{FFFD} nul, {FFFD} high, {FFFD} low"
    assert row["input"] == expected
    assert row["output"] == {"text": expected, f"k{FFFD}ey{FFFD}": [1.5]}
    assert row["metadata"]["note"] == expected
    assert row["requestContext"] == {"v": FFFD}

    directory = served.config.parent
    [stored] = [r for r in sqlite_rows(directory / "scores.db") if r["id"] == result["run_id"]]
    assert json.loads(stored["input"]) == expected
    lines = [
        json.loads(line)
        for line in (directory / "scores.jsonl").read_text("utf-8").split("\n")
        if line
    ]
    [line] = [line for line in lines if line["id"] == result["run_id"]]
    assert line["input"] == expected and line["output"] == row["output"]


def test_a_row_the_sink_refuses_fails_alone_and_wait_tells_the_truth(
    client: httpx.Client, served: ServeProcess
) -> None:
    before = client.get("/v1/stats").json()

    def send(index: int) -> dict[str, Any]:
        output = "POISON-ROW" if index == 7 else f"good answer {index} " + "x" * index
        body = {
            "scorers": ["length"],
            "target": "client-mix",
            "trace_id": f"mix-{index}",
            "input": "q",
            "output": output,
        }
        answer = client.post("/v1/scores", params={"wait": "true"}, json=body)
        assert answer.status_code == 200, answer.text
        result: dict[str, Any] = answer.json()["results"][0]
        return result

    # Many clients at once, so the bad row shares the writer's batches with good ones.
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(send, range(40)))
    wait_idle(client)

    poison = results[7]
    assert poison["status"] == "failed"
    assert poison["error_code"] == "unstorable"
    assert poison["score"] is None
    good = [r for i, r in enumerate(results) if i != 7]
    assert all(r["status"] == "success" for r in good)

    rows = {r["id"]: r for r in sqlite_rows(served.config.parent / "scores.db")}
    for result in good:
        assert rows[result["run_id"]]["status"] == "success"
    failed = rows[poison["run_id"]]
    assert failed["status"] == "failed" and failed["errorCode"] == "unstorable"
    assert failed["output"] is None  # the content the sink refused is not in the failure
    # JSONL took the row, then the failure: its last line per id agrees with SQLite.
    last: dict[str, Any] = {}
    for line in (served.config.parent / "scores.jsonl").read_text("utf-8").splitlines():
        parsed = json.loads(line)
        last[parsed["id"]] = parsed
    assert last[poison["run_id"]]["errorCode"] == "unstorable"
    assert all(last[r["run_id"]]["status"] == "success" for r in good)

    after = client.get("/v1/stats").json()
    assert after["sink_refused"] - before["sink_refused"] == 1
    assert after["scored"] - before["scored"] == 39
    assert after["failed"] - before["failed"] == 1
    assert after["sink_dropped"] == before["sink_dropped"]


def test_get_scores_answers_200_whatever_was_stored(
    client: httpx.Client, served: ServeProcess
) -> None:
    # Values another tool (or an older version) wrote straight into the table.
    conn = sqlite3.connect(served.config.parent / "scores.db")
    columns = "id, scorerId, runId, entityId, source, createdAt, updatedAt, status"
    stamp = "2020-01-01T00:00:00.000Z"
    for row_id, extra_column, value_sql in (
        ("raw-not-json", "output", "'{not json'"),
        ("raw-nan-json", "output", "'[NaN, Infinity]'"),
        ("raw-bad-utf8", "input", "CAST(X'61EDA080FF62' AS TEXT)"),
        ("raw-nan-score", "score", "'NaN'"),
    ):
        conn.execute(
            f"INSERT INTO mastra_scorers ({columns}, {extra_column}) VALUES "
            f"(?, 'length', ?, 'raw-target', 'LIVE', ?, ?, 'success', {value_sql})",
            (row_id, row_id, stamp, stamp),
        )
    conn.commit()
    conn.close()
    listed = client.get("/v1/scores", params={"target": "raw-target"})
    assert listed.status_code == 200, listed.text
    rows = {r["id"]: r for r in listed.json()["scores"]}
    assert rows["raw-not-json"]["output"] == "{not json"
    assert rows["raw-nan-json"]["output"] == ["NaN", "Infinity"]
    assert rows["raw-bad-utf8"]["input"].startswith("a") and FFFD in rows["raw-bad-utf8"]["input"]
    assert rows["raw-nan-score"]["score"] in ("NaN", None)
    assert client.get("/v1/scores").status_code == 200  # every page, the raw rows among them


def test_nul_in_a_filter_is_422(client: httpx.Client) -> None:
    for name in ("target", "scorer"):
        answer = client.get(f"/v1/scores?{name}=a%00b")
        assert answer.status_code == 422, answer.text
        assert answer.json()["fields"][0]["field"] == f"query.{name}"
    assert client.get("/v1/scores?cursor=not-a-cursor").status_code == 422

"""The real `scorewatch serve` process over HTTP: endpoints, error answers, auth, OpenAPI.

One server process (with a bearer token) and one loopback judge serve the whole module; tests
that read counters compare before/after.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from binary_support import require_binary
from scorewatch.live.entry import fraction_of
from scorewatch.testing import LoopbackJudgeServer
from serve_support import ServeProcess, judge_table, sqlite_rows, wait_idle, write_config

pytestmark = pytest.mark.e2e

TOKEN = "test-token-4f1c9b"
SECRET = "CONTENT-MARKER-7d1e"  # must never appear in the service's log

PREPROCESS = "Part 1 (alignment)"
ANALYZE = "Decide whether each question can be answered"
REASON = "Explain the summarization score"


def _route(body: dict[str, Any]) -> str:
    prompt = body["messages"][-1]["content"]
    if PREPROCESS in prompt:
        return json.dumps(
            {
                "alignment": [
                    {"claim": "Founded in 1995.", "supported": True, "reason": "stated"},
                    {"claim": "In Seattle.", "supported": True, "reason": "stated"},
                ],
                "questions": ["Was it founded in 1995?", "Was it in Seattle?"],
            }
        )
    if ANALYZE in prompt:
        return json.dumps(
            {
                "coverage": [
                    {"question": "Was it founded in 1995?", "answered": True, "reason": "yes"},
                    {"question": "Was it in Seattle?", "answered": False, "reason": "no"},
                ]
            }
        )
    if REASON in prompt:
        return "The score is 0.5 because the summary leaves out the city."
    return '{"score": 0.8}'


CONFIG = """\
[server]
auth_token_env = "SW_TEST_TOKEN"
wait_timeout = 20

{judge}

[[scorers]]
id = "summary"
kind = "summarization"
options = {{ max_questions = 3 }}

[[scorers]]
id = "length"
factory = "sw_test_scorers:make_length_scorer"

[[scorers]]
id = "judged"
factory = "sw_test_scorers:make_judged_scorer"

[[scorers]]
id = "failing"
factory = "sw_test_scorers:make_failing_scorer"

[[scorers]]
id = "picky"
factory = "sw_test_scorers:make_picky_scorer"

[[scorers]]
id = "half"
factory = "sw_test_scorers:make_length_scorer"
sampling = 0.5

[[scorers]]
id = "bot-only"
factory = "sw_test_scorers:make_length_scorer"
targets = ["support-bot"]

[sinks]
sqlite = "scores.db"
"""


@pytest.fixture(scope="module")
def judge() -> Iterator[LoopbackJudgeServer]:
    with LoopbackJudgeServer(_route) as server:
        yield server


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, judge: LoopbackJudgeServer
) -> Iterator[ServeProcess]:
    directory = tmp_path_factory.mktemp("serve-api")
    path = write_config(directory, CONFIG.format(judge=judge_table(judge.base_url)))
    env = {"SW_TEST_TOKEN": TOKEN, "SW_TEST_JUDGE_BASE": judge.base_url}
    process = ServeProcess(path, env=env)
    try:
        process.wait_listening()
        yield process
    finally:
        process.kill()


@pytest.fixture
def client(served: ServeProcess) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=served.url, headers=headers, timeout=30) as http:
        yield http


@pytest.fixture
def anonymous(served: ServeProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served.url, timeout=30) as http:
        yield http


def pair(**fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"input": "question", "output": "an answer", "target": "agent-a"}
    body.update(fields)
    return body


# ------------------------------------------------------------------------------------ auth


def test_v1_needs_the_bearer_token(anonymous: httpx.Client) -> None:
    for method, path in (("POST", "/v1/scores"), ("GET", "/v1/scorers"), ("GET", "/v1/stats")):
        response = anonymous.request(method, path, json=pair(scorers=["length"]))
        assert response.status_code == 401, path
        assert response.headers["www-authenticate"] == "Bearer"
        assert response.json()["error"] == "unauthorized"
    wrong = anonymous.get("/v1/scorers", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    assert wrong.json()["message"] == "invalid bearer token"
    basic = anonymous.get("/v1/scorers", headers={"Authorization": f"Basic {TOKEN}"})
    assert basic.status_code == 401
    assert TOKEN not in wrong.text


def test_probes_and_metrics_stay_open(anonymous: httpx.Client) -> None:
    assert anonymous.get("/healthz").json() == {"status": "ok"}
    ready = anonymous.get("/readyz")
    assert ready.status_code == 200
    assert ready.json() == {
        "status": "ready",
        "checks": {"accepting": True, "queue": True, "sink:sqlite": True},
    }
    metrics = anonymous.get("/metrics")
    assert metrics.status_code == 200
    assert "scorewatch_live" in metrics.text or "# HELP" in metrics.text


# ------------------------------------------------------------------------------- scoring


def test_202_then_the_result_is_stored(client: httpx.Client) -> None:
    response = client.post("/v1/scores", json=pair(scorers=["length"], output="x" * 40))
    assert response.status_code == 202
    body = response.json()
    assert body["skipped"] == []
    [accepted] = body["accepted"]
    assert accepted["scorer"] == "length"
    wait_idle(client)
    rows = client.get("/v1/scores", params={"scorer": "length", "limit": 1000}).json()["scores"]
    row = next(r for r in rows if r["id"] == accepted["run_id"])
    assert row["score"] == 0.4
    assert row["status"] == "success"
    assert row["source"] == "LIVE"
    assert row["entityId"] == "agent-a"


def test_wait_true_returns_the_summarization_result_through_the_judge(
    client: httpx.Client, judge: LoopbackJudgeServer
) -> None:
    before = judge.request_count
    response = client.post(
        "/v1/scores",
        params={"wait": "true"},
        json=pair(
            scorers=["summary"],
            input="The company was founded in 1995 in Seattle.",
            output="Founded in 1995.",
            target="support-bot",
            trace_id="0af7651916cd43dd8448eb211c80319c",
            span_id="b7ad6b7169203331",
        ),
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["complete"] is True
    [result] = body["results"]
    assert result["status"] == "success"
    assert result["score"] == 0.5  # min(alignment 1.0, coverage 0.5)
    assert result["reason"] == "The score is 0.5 because the summary leaves out the city."
    # The reference's id, then a digest of the request (a retry names the same run).
    assert result["run_id"].startswith(
        "scoring-summary-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-"
    )
    assert judge.request_count - before == 3
    rows = client.get("/v1/scores", params={"scorer": "summary", "target": "support-bot"}).json()
    stored = next(r for r in rows["scores"] if r["id"] == result["run_id"])
    assert stored["traceId"] == "0af7651916cd43dd8448eb211c80319c"
    assert set(stored["judge"]) == {"preprocess", "analyze", "generateReason"}
    assert "sk-test-judge" not in json.dumps(stored)


def test_one_judge_call_scorer_and_a_failing_scorer(client: httpx.Client) -> None:
    response = client.post(
        "/v1/scores", params={"wait": "true"}, json=pair(scorers=["judged", "failing"])
    )
    assert response.status_code == 200
    results = {r["scorer"]: r for r in response.json()["results"]}
    assert results["judged"]["status"] == "success"
    assert results["judged"]["score"] == 0.8
    failed = results["failing"]
    assert failed["status"] == "failed"
    assert failed["score"] is None
    assert failed["failed_step"] == "generate_score"
    assert "this scorer always fails" in failed["error"]
    rows = client.get("/v1/scores", params={"scorer": "failing", "status": "failed"}).json()
    stored = next(r for r in rows["scores"] if r["id"] == failed["run_id"])
    assert stored["score"] is None
    assert stored["errorType"] == "RuntimeError"
    assert stored["failedStep"] == "generateScore"


def test_a_not_scorable_run_is_neither_a_score_nor_a_failure(client: httpx.Client) -> None:
    response = client.post(
        "/v1/scores", params={"wait": "true"}, json=pair(scorers=["picky"], output="")
    )
    assert response.status_code == 200, response.text
    [result] = response.json()["results"]
    assert result["status"] == "not_scorable"
    assert result["score"] is None and result["error"] is None
    assert result["not_scorable"] == {"step": "preprocess", "reason": "empty output"}
    rows = client.get("/v1/scores", params={"scorer": "picky", "status": "not_scorable"}).json()
    stored = next(r for r in rows["scores"] if r["id"] == result["run_id"])
    assert stored["score"] is None and stored["status"] == "not_scorable"
    assert stored["metadata"]["notScorable"] == {"step": "preprocess", "reason": "empty output"}
    scored = client.post(
        "/v1/scores", params={"wait": "true"}, json=pair(scorers=["picky"], output="x")
    ).json()["results"][0]
    assert (scored["status"], scored["score"], scored["not_scorable"]) == ("success", 1, None)


def test_skipped_decisions_filter_then_sampling(client: httpx.Client) -> None:
    inside = next(f"{i:032x}" for i in range(1000) if fraction_of(f"{i:032x}") < 0.5)
    outside = next(f"{i:032x}" for i in range(1000) if fraction_of(f"{i:032x}") >= 0.5)
    body = client.post(
        "/v1/scores", json=pair(scorers=["half", "bot-only"], trace_id=outside, target="x")
    ).json()
    assert body["accepted"] == []
    assert sorted(body["skipped"], key=lambda s: s["scorer"]) == [
        {"scorer": "bot-only", "decision": "filtered"},
        {"scorer": "half", "decision": "not_sampled"},
    ]
    body = client.post(
        "/v1/scores",
        json=pair(scorers=["half", "bot-only"], trace_id=inside, target="support-bot"),
    ).json()
    assert sorted(a["scorer"] for a in body["accepted"]) == ["bot-only", "half"]


def test_all_scorers_when_none_are_named(client: httpx.Client) -> None:
    body = client.post("/v1/scores", json=pair(scorers=None, target="support-bot")).json()
    decided = {a["scorer"] for a in body["accepted"]} | {s["scorer"] for s in body["skipped"]}
    assert decided == {"summary", "length", "judged", "failing", "picky", "half", "bot-only"}
    wait_idle(client)


def test_batch_is_admitted_whole(client: httpx.Client) -> None:
    items = [pair(scorers=["length"], target="batch-target", output="y" * n) for n in (10, 20, 30)]
    response = client.post("/v1/scores:batch", json={"items": items})
    assert response.status_code == 202
    body = response.json()
    assert body["accepted"] == 3 and body["skipped"] == 0
    assert [len(item["accepted"]) for item in body["items"]] == [1, 1, 1]
    wait_idle(client)
    rows = client.get("/v1/scores", params={"target": "batch-target"}).json()
    assert rows["count"] == 3
    assert sorted(r["score"] for r in rows["scores"]) == [0.1, 0.2, 0.3]


def test_get_scores_filters(client: httpx.Client) -> None:
    for index in range(3):
        body = pair(scorers=["length"], target="filter-target", output=f"answer {index}")
        client.post("/v1/scores", json=body)
    wait_idle(client)
    everything = client.get("/v1/scores", params={"target": "filter-target"}).json()
    assert everything["count"] == 3
    assert (
        client.get("/v1/scores", params={"target": "filter-target", "limit": 2}).json()["count"]
        == 2
    )
    newest = everything["scores"][0]["createdAt"]
    since = client.get("/v1/scores", params={"target": "filter-target", "since": newest}).json()
    assert 1 <= since["count"] <= 3
    assert all(r["createdAt"] >= newest for r in since["scores"])
    future = client.get(
        "/v1/scores", params={"target": "filter-target", "since": "2999-01-01T00:00:00"}
    ).json()
    assert future["count"] == 0
    bad = client.get("/v1/scores", params={"since": "yesterday-ish"})
    assert bad.status_code == 422
    assert bad.json()["fields"][0]["field"] == "query.since"


def test_scorers_listing(client: httpx.Client) -> None:
    listed = {s["id"]: s for s in client.get("/v1/scorers").json()["scorers"]}
    assert set(listed) == {"summary", "length", "judged", "failing", "picky", "half", "bot-only"}
    assert listed["summary"]["source"] == "kind:summarization"
    assert listed["summary"]["judge_model"] == "openai/loopback-judge"
    assert listed["summary"]["has_judge"] is True
    assert listed["half"]["sampling"] == 0.5
    assert listed["bot-only"]["filtered"] is True
    assert listed["length"]["source"] == "factory:sw_test_scorers:make_length_scorer"
    assert [step["name"] for step in listed["judged"]["steps"]] == ["generate_score"]


# ----------------------------------------------------------------------------- bad input


def _fields(response: httpx.Response) -> dict[str, str]:
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["error"] == "invalid_request"
    return {p["field"]: p["message"] for p in body["fields"]}


def test_422_names_the_field(client: httpx.Client) -> None:
    missing = _fields(client.post("/v1/scores", json={"input": "q", "target": "t"}))
    assert missing == {"output": "required field is missing"}
    unknown = _fields(client.post("/v1/scores", json=pair(trace="abc")))
    assert unknown == {"trace": "unknown field"}
    wrong_type = _fields(client.post("/v1/scores", json=pair(target=42)))
    assert set(wrong_type) == {"target"}
    empty = _fields(client.post("/v1/scores", json=pair(target="")))
    assert set(empty) == {"target"}
    nested = _fields(
        client.post("/v1/scores:batch", json={"items": [pair(), {"input": 1, "target": "t"}]})
    )
    assert nested == {"items[1].output": "required field is missing"}
    too_many = _fields(client.post("/v1/scores:batch", json={"items": [pair()] * 1001}))
    assert set(too_many) == {"items"}
    limit = _fields(client.get("/v1/scores", params={"limit": 0}))
    assert set(limit) == {"query.limit"}


def test_422_for_invalid_json(client: httpx.Client) -> None:
    response = client.post(
        "/v1/scores",
        content=b'{"input": "q", "output": ',
        headers={"content-type": "application/json"},
    )
    fields = _fields(response)
    assert list(fields) == ["body"]
    assert fields["body"].startswith("invalid JSON")


def test_415_unless_the_body_is_declared_json(client: httpx.Client) -> None:
    body = json.dumps(pair(scorers=["length"])).encode()
    for content_type in (None, "text/plain", "application/x-www-form-urlencoded"):
        headers = {} if content_type is None else {"content-type": content_type}
        response = client.post("/v1/scores", content=body, headers=headers)
        assert response.status_code == 415, content_type
        assert response.json()["error"] == "unsupported_media_type"
    charset = client.post(
        "/v1/scores", content=body, headers={"content-type": "application/json; charset=utf-8"}
    )
    assert charset.status_code == 202


def test_413_over_one_mebibyte(client: httpx.Client) -> None:
    big = pair(output="z" * (1 << 20))
    response = client.post("/v1/scores", json=big)
    assert response.status_code == 413
    assert response.json()["error"] == "body_too_large"

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit is counted while reading
        yield b'{"input": "q", "target": "t", "output": "'
        for _ in range(20):
            yield b"w" * 65536
        yield b'"}'

    streamed = client.post(
        "/v1/scores", content=chunks(), headers={"content-type": "application/json"}
    )
    assert streamed.status_code == 413
    just_under = client.post("/v1/scores", json=pair(scorers=["length"], output="z" * 1_000_000))
    assert just_under.status_code == 202


def test_404_unknown_scorer_lists_the_known_ones(client: httpx.Client) -> None:
    response = client.post("/v1/scores", json=pair(scorers=["length", "sumary"]))
    assert response.status_code == 404
    body = response.json()
    assert body["error"] == "unknown_scorer"
    assert body["known_scorers"] == [
        "bot-only",
        "failing",
        "half",
        "judged",
        "length",
        "picky",
        "summary",
    ]
    assert "'sumary'" in body["message"]
    batch = client.post("/v1/scores:batch", json={"items": [pair(scorers=["nope"])]})
    assert batch.status_code == 404


def test_unknown_paths_and_methods_use_the_error_shape(client: httpx.Client) -> None:
    missing = client.get("/v1/nothing-here")
    assert missing.status_code == 404
    assert missing.json()["error"] == "not_found"
    wrong = client.delete("/v1/scores")
    assert wrong.status_code == 405
    assert wrong.json()["error"] == "method_not_allowed"


# ------------------------------------------------------------------------------ openapi


def test_openapi_document_describes_the_product(anonymous: httpx.Client) -> None:
    document = anonymous.get("/openapi.json").json()
    paths = document["paths"]
    assert {
        "/v1/scores",
        "/v1/scores:batch",
        "/v1/scorers",
        "/v1/stats",
        "/healthz",
        "/readyz",
    } <= set(paths)
    post = paths["/v1/scores"]["post"]
    assert {"202", "200", "401", "404", "413", "422", "429", "503"} <= set(post["responses"])
    assert post["security"] == [{"HTTPBearer": []}]
    schemas = document["components"]["schemas"]
    request = schemas["ScoreRequest"]
    assert request["examples"][0]["target"] == "support-bot"
    assert request["additionalProperties"] is False
    for name in ("input", "output", "target", "trace_id", "scorers"):
        assert request["properties"][name]["description"], name
    assert schemas["ErrorBody"]["properties"]["error"]["description"]
    assert document["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"


def test_docs_page_references_nothing_outside_the_service(anonymous: httpx.Client) -> None:
    page = anonymous.get("/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    html = page.text
    assert "http:" not in html and "https:" not in html and "//" not in html, html
    links = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert sorted(links) == [
        "/docs/assets/favicon-32x32.png",
        "/docs/assets/swagger-ui-bundle.js",
        "/docs/assets/swagger-ui.css",
    ]
    for link, kind in zip(sorted(links), ("image/png", "text/javascript", "text/css"), strict=True):
        asset = anonymous.get(link)
        assert asset.status_code == 200 and asset.content, link
        assert asset.headers["content-type"].startswith(kind), link
    assert "url: '/openapi.json'" in html and anonymous.get("/openapi.json").status_code == 200
    # Only the page's own files are served from Swagger UI's folder.
    assert anonymous.get("/docs/assets/index.html").status_code == 404
    assert anonymous.get("/docs/assets/..%2F__init__.py").status_code == 404


def test_docs_page_renders_in_chromium_without_a_network(
    served: ServeProcess, tmp_path: Path
) -> None:
    chromium = require_binary("chromium")
    host = served.url.split("//")[1].split(":")[0]
    dom = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            # Every host but the service's is unresolvable: a CDN reference would fail to load.
            f"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE {host}",
            "--virtual-time-budget=15000",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            served.url + "/docs",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    rendered = dom.stdout
    # Swagger UI ran (its script loaded) and rendered the operations of the OpenAPI document.
    assert 'class="swagger-ui' in rendered, dom.stderr[-2000:]
    assert "opblock" in rendered and "/v1/scores" in rendered, rendered[-2000:]


# ------------------------------------------------------------------------- content, ids


def test_content_and_token_never_reach_the_log(client: httpx.Client, served: ServeProcess) -> None:
    client.post("/v1/scores", params={"wait": "true"}, json=pair(input=SECRET, output=SECRET))
    client.post("/v1/scores", json=pair(scorers=["failing"], input=SECRET, output=SECRET))
    client.post("/v1/scores", json=pair(scorers=["length"], output=1, bogus=SECRET))
    wait_idle(client)
    log = served.stderr()
    assert "listening on" in log
    assert SECRET not in log
    assert TOKEN not in log
    rows = sqlite_rows(Path(served.config).parent / "scores.db")
    assert any(SECRET in (row["input"] or "") for row in rows)  # stored, as it should be

"""End to end: a real Prometheus scrapes a real scorewatch process (live and batch scoring, judge
retries and failures, queue drops, sink errors, and a Redis work queue with a worker, a
redelivery and a dead letter) with the short-window rules, every dashboard
query returns data, the variables list the expected values, and a real score drop fires
ScorewatchScoreDrop through a real Alertmanager to a loopback webhook."""

from __future__ import annotations

import contextlib
import json
import math
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
import yaml

from binary_support import IN_CI, require_binary
from deploy_support import (
    SHORT_RULES_FILE,
    dashboard_files,
    expand_variables,
    panel_targets,
    variable_queries,
)
from scale_support import REDIS_URL

pytestmark = [pytest.mark.e2e, pytest.mark.needs_binary]

WORKLOAD = Path(__file__).parents[1] / "deploy_workload.py"
# Grafana's interval variables, sized for a 1 s scrape interval.
E2E_VARIABLES = {"__rate_interval": "10s", "__interval": "2s", "__range": "1m"}
# Queries that may legitimately come back empty here, and why.
MAY_BE_EMPTY = {
    # No application exports its own GenAI token usage into this Prometheus.
    ("Judge vs application tokens", "B"),
    # Nothing fires before the score drop (checked with data in the alert test).
    ("Firing scorewatch alerts", "A"),
}
# The work-queue panels have data only when the workload runs its Redis stream: always under
# CI (.ci/run starts Redis; the test database is SCOREWATCH_TEST_REDIS_URL); locally only when
# Redis is there.
QUEUE_PANELS = {
    ("Work queue backlog", "A"),
    ("Work queue pending and consumer lag", "A"),
    ("Work queue pending and consumer lag", "B"),
    ("Work queue redeliveries", "A"),
    ("Dead-lettered by reason", "A"),
    ("Dead letters waiting", "A"),
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_for(condition: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except httpx.TransportError:
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.25)


class _WebhookHandler(BaseHTTPRequestHandler):
    received: list[dict[str, Any]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.received.append(json.loads(body))  # type: ignore[attr-defined]
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return


@dataclass
class Stack:
    prometheus: str
    alertmanager: str
    workload: subprocess.Popen[str]
    webhook_messages: list[dict[str, Any]] = field(default_factory=list)
    stream: str | None = None  # the workload's Redis stream, when Redis runs

    def query(self, expr: str) -> list[dict[str, Any]]:
        response = httpx.get(f"{self.prometheus}/api/v1/query", params={"query": expr}, timeout=10)
        assert response.status_code == 200, (expr, response.text)
        result: list[dict[str, Any]] = response.json()["data"]["result"]
        return result

    def query_range(self, expr: str, seconds: int = 20) -> list[dict[str, Any]]:
        end = time.time()
        params: dict[str, str | float] = {
            "query": expr,
            "start": end - seconds,
            "end": end,
            "step": 1,
        }
        response = httpx.get(f"{self.prometheus}/api/v1/query_range", params=params, timeout=10)
        assert response.status_code == 200, (expr, response.text)
        result: list[dict[str, Any]] = response.json()["data"]["result"]
        return result

    def label_values(self, label: str, selector: str) -> set[str]:
        response = httpx.get(
            f"{self.prometheus}/api/v1/label/{label}/values",
            params={"match[]": selector, "start": time.time() - 300, "end": time.time()},
            timeout=10,
        )
        assert response.status_code == 200, (selector, response.text)
        return set(response.json()["data"])

    def alerts_received(self, alertname: str) -> list[dict[str, Any]]:
        return [
            alert
            for message in list(self.webhook_messages)
            for alert in message["alerts"]
            if alert["labels"]["alertname"] == alertname
        ]


def _start(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as output:
        return subprocess.Popen(args, stdout=output, stderr=subprocess.STDOUT)


def _redis_stream() -> str | None:
    """A per-run stream name when Redis answers on loopback; None (queue panels may then be
    empty) locally without Redis; a failure under CI."""
    try:
        redis.Redis.from_url(REDIS_URL, socket_timeout=2).ping()
    except redis.RedisError as error:
        if IN_CI:
            pytest.fail(f"Redis is not reachable at {REDIS_URL} ({error}); .ci/run starts it")
        return None
    return f"swtest-e2e-{uuid.uuid4().hex[:12]}"


def _delete_stream(stream: str) -> None:
    client = redis.Redis.from_url(REDIS_URL, socket_timeout=5)
    with contextlib.closing(client):
        client.delete(stream, f"{stream}:dead")


def _stop(process: subprocess.Popen[Any]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    prometheus_bin = require_binary("prometheus")
    alertmanager_bin = require_binary("prometheus-alertmanager")
    tmp = tmp_path_factory.mktemp("e2e")
    processes: list[subprocess.Popen[Any]] = []

    webhook = ThreadingHTTPServer(("127.0.0.1", 0), _WebhookHandler)
    webhook.received = []  # type: ignore[attr-defined]
    threading.Thread(target=webhook.serve_forever, daemon=True).start()

    try:
        # Alertmanager first, so Prometheus's first alert has somewhere to go.
        am_port = _free_port()
        am_config = {
            "route": {
                "receiver": "webhook",
                "group_by": ["alertname", "gen_ai_evaluation_name", "scorewatch_target"],
                "group_wait": "1s",
                "group_interval": "1s",
                "repeat_interval": "1h",
            },
            "receivers": [
                {
                    "name": "webhook",
                    "webhook_configs": [
                        {
                            "url": f"http://127.0.0.1:{webhook.server_port}/alerts",
                            "send_resolved": True,
                        }
                    ],
                }
            ],
        }
        (tmp / "alertmanager.yml").write_text(yaml.safe_dump(am_config))
        processes.append(
            _start(
                [
                    alertmanager_bin,
                    f"--config.file={tmp / 'alertmanager.yml'}",
                    f"--storage.path={tmp / 'am'}",
                    f"--web.listen-address=127.0.0.1:{am_port}",
                    "--cluster.listen-address=",
                ],
                tmp / "alertmanager.log",
            )
        )
        alertmanager = f"http://127.0.0.1:{am_port}"
        _wait_for(lambda: httpx.get(f"{alertmanager}/-/ready").status_code == 200, "Alertmanager")

        stream = _redis_stream()
        queue_arguments = [REDIS_URL, stream] if stream is not None else []
        workload = subprocess.Popen(
            [sys.executable, str(WORKLOAD), str(tmp), *queue_arguments],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        processes.append(workload)
        assert workload.stdout is not None
        metrics_port = int(workload.stdout.readline())

        prom_port = _free_port()
        prom_config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(SHORT_RULES_FILE)],
            "alerting": {
                "alertmanagers": [{"static_configs": [{"targets": [f"127.0.0.1:{am_port}"]}]}]
            },
            "scrape_configs": [
                {
                    "job_name": "scorewatch",
                    "static_configs": [{"targets": [f"127.0.0.1:{metrics_port}"]}],
                }
            ],
        }
        (tmp / "prometheus.yml").write_text(yaml.safe_dump(prom_config))
        processes.append(
            _start(
                [
                    prometheus_bin,
                    f"--config.file={tmp / 'prometheus.yml'}",
                    f"--storage.tsdb.path={tmp / 'tsdb'}",
                    f"--web.listen-address=127.0.0.1:{prom_port}",
                    "--rules.alert.resend-delay=1s",
                ],
                tmp / "prometheus.log",
            )
        )
        prometheus = f"http://127.0.0.1:{prom_port}"
        _wait_for(lambda: httpx.get(f"{prometheus}/-/ready").status_code == 200, "Prometheus")

        stack = Stack(prometheus, alertmanager, workload, webhook.received, stream)  # type: ignore[attr-defined]
        # The baseline (30 s ending 30 s ago in the short-window rules) needs half a minute of
        # recorded history before it exists.
        _wait_for(
            lambda: stack.query(
                'scorewatch:evaluation_score:baseline{gen_ai_evaluation_name="relevancy",'
                'scorewatch_target="support-agent"}'
            ),
            "the score baseline",
            timeout=90,
        )
        yield stack
    finally:
        for process in reversed(processes):
            if process.stdin is not None:
                process.stdin.close()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(10)
            _stop(process)
        webhook.shutdown()
        if stream is not None:  # the workload deletes it on exit; this covers a crash
            _delete_stream(stream)


def _has_values(result: list[dict[str, Any]]) -> bool:
    for series in result:
        points = series.get("values") or [series.get("value")]
        if any(point and not math.isnan(float(point[1])) for point in points):
            return True
    return False


def _boards() -> dict[str, dict[str, Any]]:
    return {path.name: json.loads(path.read_text("utf-8")) for path in dashboard_files()}


def test_every_panel_query_returns_data(stack: Stack) -> None:
    may_be_empty = MAY_BE_EMPTY if stack.stream is not None else MAY_BE_EMPTY | QUEUE_PANELS
    empty = []
    checked = 0
    for name, board in _boards().items():
        for panel, target in panel_targets(board):
            expr = expand_variables(target["expr"], E2E_VARIABLES)
            result = stack.query(expr) if target.get("instant") else stack.query_range(expr)
            checked += 1
            if not _has_values(result) and (panel["title"], target["refId"]) not in may_be_empty:
                empty.append(f"{name}: {panel['title']} [{target['refId']}]: {expr}")
    assert checked >= 36
    assert empty == [], "panels without data:\n" + "\n".join(empty)


def test_the_work_queue_panels_show_the_redelivery_and_the_dead_letter(stack: Stack) -> None:
    if stack.stream is None:
        pytest.skip(f"no Redis at {REDIS_URL}: the workload ran without its work queue")
    stream = f'scorewatch_queue_stream="{stack.stream}"'
    # The two entries the dead consumer held were claimed again, and scored.
    redelivered = stack.query(f"scorewatch_queue_redeliveries_total{{{stream}}}")
    assert [float(series["value"][1]) for series in redelivered] == [2.0]
    dead = stack.query(f"scorewatch_queue_dead_lettered_total{{{stream}}}")
    assert {s["metric"]["scorewatch_queue_reason"]: float(s["value"][1]) for s in dead} == {
        "malformed": 1.0
    }
    assert float(stack.query(f"scorewatch_queue_dead_letters{{{stream}}}")[0]["value"][1]) == 1
    # The worker keeps up with a few entries per second: the backlog never nears the limit.
    backlog = stack.query(f"max_over_time(scorewatch_queue_backlog{{{stream}}}[5m])")
    assert 0 <= float(backlog[0]["value"][1]) < 100
    scored = stack.query('scorewatch_scorer_runs_total{gen_ai_evaluation_name="queued"}')
    assert sum(float(series["value"][1]) for series in scored) >= 10


def test_variables_list_the_expected_values(stack: Stack) -> None:
    for name, board in _boards().items():
        queries = variable_queries(board)
        found = {}
        for variable, query in queries.items():
            selector, label = query.removeprefix("label_values(").removesuffix(")").rsplit(",", 1)
            found[variable] = stack.label_values(label.strip(), expand_variables(selector))
        assert {"relevancy", "tone", "slow"} <= found["scorer"], name
        assert {"support-agent", "internal-tool"} <= found["target"], name
        assert found["model"] == {"gpt-4o-mini"}, name

    # Chained variables follow the scorer selection: `tone` only scored support-agent.
    target_query = variable_queries(_boards()["scorewatch-scores.json"])["target"]
    selector = target_query.removeprefix("label_values(").rsplit(",", 1)[0]
    assert stack.label_values(
        "scorewatch_target", expand_variables(selector, {"scorer": "tone"})
    ) == {"support-agent"}


def test_a_binding_budget_fires_its_alert(stack: Stack) -> None:
    def firing() -> list[dict[str, Any]]:
        rows = stack.query('ALERTS{alertname="ScorewatchBudgetBinding", alertstate="firing"}')
        return [r for r in rows if r["metric"].get("gen_ai_evaluation_name") == "budgeted"]

    (alert,) = _wait_for(firing, "ScorewatchBudgetBinding for the budgeted scorer", timeout=60)
    assert alert["metric"]["scorewatch_budget"] == "all"
    skipped = 'scorewatch_live_decisions_total{scorewatch_decision="skipped_budget"}'
    assert _has_values(stack.query(skipped))


def test_a_real_score_drop_fires_through_alertmanager(stack: Stack) -> None:
    drop = 'ALERTS{alertname="ScorewatchScoreDrop"}'
    # Scores are steady at ~0.9: nothing pending, nothing delivered.
    assert stack.query(drop) == []
    assert stack.alerts_received("ScorewatchScoreDrop") == []

    assert stack.workload.stdin is not None and stack.workload.stdout is not None
    stack.workload.stdin.write("drop\n")
    stack.workload.stdin.flush()
    assert stack.workload.stdout.readline().strip() == "dropped"

    def delivered() -> list[dict[str, Any]]:
        return [
            alert
            for alert in stack.alerts_received("ScorewatchScoreDrop")
            if alert["status"] == "firing"
            and alert["labels"]["gen_ai_evaluation_name"] == "relevancy"
            and alert["labels"]["scorewatch_target"] == "support-agent"
        ]

    alerts = _wait_for(delivered, "ScorewatchScoreDrop at the webhook", timeout=60)
    alert = alerts[0]
    assert alert["labels"]["severity"] == "critical"
    assert alert["annotations"]["runbook_url"].endswith("/ScorewatchScoreDrop.md")
    assert "relevancy" in alert["annotations"]["summary"]
    mean = float(alert["annotations"]["description"].split(" is ")[1].split(",")[0])
    assert mean < 0.7  # the short-window mean after the drop, not the old ~0.9

    # The scorer whose scores did not move never fired.
    assert all(
        a["labels"]["gen_ai_evaluation_name"] != "tone"
        for a in stack.alerts_received("ScorewatchScoreDrop")
    )
    # The Scores dashboard's alert table shows it.
    board = _boards()["scorewatch-scores.json"]
    table = next(t for p, t in panel_targets(board) if p["title"] == "Firing scorewatch alerts")
    rows = stack.query(expand_variables(table["expr"], E2E_VARIABLES))
    assert any(row["metric"].get("alertname") == "ScorewatchScoreDrop" for row in rows)

"""Hostile clients against a real `scorewatch serve` process: tokenless and slow bodies, forged
log lines, oversized scorer ids, invalid UTF-8 and deep nesting (issue 17, items 6, 10, 15)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from live_support import word_text
from serve_support import ServeProcess, write_config

pytestmark = pytest.mark.e2e

TOKEN = "hostile-test-token-5d1c"
BODY_TIMEOUT_S = 1.0

CONFIG = f"""\
[server]
auth_token_env = "SW_TEST_TOKEN"
body_timeout = {BODY_TIMEOUT_S}
log_level = "debug"

[[scorers]]
id = "length"
factory = "sw_test_scorers:make_length_scorer"

[[scorers]]
id = "failing"
factory = "sw_test_scorers:make_failing_scorer"

[sinks]
sqlite = "scores.db"

[telemetry]
prometheus = false
otlp = false
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    path = write_config(tmp_path_factory.mktemp("serve-hostile"), CONFIG)
    with ServeProcess(path, env={"SW_TEST_TOKEN": TOKEN}) as process:
        yield process


@pytest.fixture
def client(served: ServeProcess) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=served.url, headers=headers, timeout=30) as http:
        yield http


def _address(url: str) -> tuple[str, int]:
    host, _, port = url.removeprefix("http://").rpartition(":")
    return host, int(port)


def _open_dribbling(url: str, *, token: str | None, length: int) -> socket.socket:
    """A connection that declares a `length`-byte JSON body and sends 16 bytes of it."""
    sock = socket.create_connection(_address(url), timeout=10)
    lines = [
        "POST /v1/scores HTTP/1.1",
        "Host: test",
        "Content-Type: application/json",
        f"Content-Length: {length}",
    ]
    if token is not None:
        lines.append(f"Authorization: Bearer {token}")
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("ascii") + b'{"input": "aaaaa')
    return sock


def _answer(sock: socket.socket, timeout: float) -> tuple[int, bytes, bool]:
    """(status, everything read, whether the server closed the connection)."""
    sock.settimeout(timeout)
    data = b""
    closed = False
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                closed = True
                break
            data += chunk
    except TimeoutError:
        pass
    except ConnectionResetError:
        closed = True
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else 0
    return status, data, closed


def _healthz_ms(url: str) -> float:
    started = time.perf_counter()
    assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200
    return (time.perf_counter() - started) * 1000


# ------------------------------------------------------------------------ bodies (item 10)


def test_tokenless_dribbling_connections_cost_nothing_and_are_closed(
    served: ServeProcess,
) -> None:
    before = served.rss_bytes()
    sockets = [
        _open_dribbling(served.url, token=None, length=1 << 20) for _ in range(300)
    ]  # fmt: skip
    try:
        answers = [_answer(sock, timeout=10) for sock in sockets]
        assert [status for status, _d, _c in answers] == [401] * 300
        assert all(closed for _s, _d, closed in answers), "a tokenless connection stayed open"
        assert all(b"www-authenticate: Bearer" in data.lower().replace(
            b"bearer", b"Bearer") for _s, data, _c in answers)  # fmt: skip
        growth = served.rss_bytes() - before
        # 300 bodies of 1 MiB read would be 300 MiB; a connection buffer is a few KiB.
        assert growth < 40 * 1024 * 1024, f"serve grew by {growth / 2**20:.0f} MiB"
    finally:
        for sock in sockets:
            sock.close()
    assert _healthz_ms(served.url) < 10_000


def test_slow_bodies_are_timed_out_with_408_and_the_service_stays_responsive(
    served: ServeProcess,
) -> None:
    before = served.rss_bytes()
    sockets = [_open_dribbling(served.url, token=TOKEN, length=1 << 20) for _ in range(100)]
    try:
        started = time.monotonic()
        # While they dribble, the service answers others.
        assert _healthz_ms(served.url) < 10_000
        for sock in sockets[:50]:
            sock.sendall(b"a" * 1024)
        answers = [_answer(sock, timeout=BODY_TIMEOUT_S + 20) for sock in sockets]
        waited = time.monotonic() - started
    finally:
        for sock in sockets:
            sock.close()
    assert [status for status, _d, _c in answers] == [408] * 100
    assert all(closed for _s, _d, closed in answers)
    assert all(b'"body_timeout"' in data for _s, data, _c in answers)
    assert waited >= BODY_TIMEOUT_S * 0.9  # not refused before the limit
    assert served.rss_bytes() - before < 60 * 1024 * 1024
    assert served.process.poll() is None


def test_a_declared_length_over_the_limit_is_refused_unread(served: ServeProcess) -> None:
    sock = _open_dribbling(served.url, token=TOKEN, length=(1 << 20) + 1)
    try:
        status, data, closed = _answer(sock, timeout=10)
    finally:
        sock.close()
    assert status == 413 and b'"body_too_large"' in data and closed


# -------------------------------------------------------------------- log lines (item 6)


def test_client_strings_cannot_forge_log_lines(client: httpx.Client, served: ServeProcess) -> None:
    forged = "FORGED 2026-01-01 00:00:00,000 CRITICAL scorewatch.server: all data deleted"
    hostile: dict[str, Any] = {
        "input": "q",
        "output": "a",
        "target": f"bot\r\n{forged}",
        "trace_id": f"abc\n{forged}",
        "span_id": "s\u2028FORGED span",
        "metadata": {f"k\n{forged}": f"v\n{forged}"},
        "scorers": ["failing", "length"],
    }
    response = client.post("/v1/scores", params={"wait": "true"}, json=hostile)
    assert response.status_code == 200, response.text
    missing = client.post("/v1/scores", json={**hostile, "scorers": [f"x\n{forged}"]})
    assert missing.status_code == 404
    log = served.stderr()
    # The run failed and was logged (a warning) with its run id, which holds the trace id.
    assert "failed on run" in log
    for line in log.splitlines():
        assert not line.startswith("FORGED"), line
        assert "\u2028" not in line


def test_unknown_scorer_ids_are_echoed_cut_short(client: httpx.Client) -> None:
    ids = [f"{index}-" + "z" * 40_000 for index in range(20)]
    response = client.post(
        "/v1/scores", json={"input": "q", "output": "a", "target": "t", "scorers": ids}
    )
    assert response.status_code == 404
    body = response.json()
    assert body["error"] == "unknown_scorer"
    assert len(body["message"]) < 1000, len(body["message"])
    assert "'0-" in body["message"] and "and 15 more" in body["message"]
    assert body["known_scorers"] == ["failing", "length"]


# ------------------------------------------------------------ malformed bodies (item 15)


def test_invalid_utf8_and_deep_nesting_get_the_documented_422(client: httpx.Client) -> None:
    headers = {"Content-Type": "application/json"}
    bodies = {
        "UTF-8": b'{"input": "\xff\xfe", "output": "a", "target": "t"}',
        "deeper": b'{"input": ' + b"[" * 100_000 + b"]" * 100_000 + b', "output": 1}',
        "deeper than 128": b'{"input": ' + b'{"a": [' * 65 + b"1" + b"]}" * 65
        + b', "output": 1, "target": "t"}',
    }  # fmt: skip
    for expected, body in bodies.items():
        response = client.post("/v1/scores", content=body, headers=headers)
        assert response.status_code == 422, (expected, response.text)
        answer = response.json()
        assert answer["error"] == "invalid_request"
        assert answer["fields"][0]["field"] == "body"
        assert expected in answer["message"], answer["message"]
    # 128 levels are fine.
    fine = b'{"input": ' + b"[" * 127 + b"]" * 127 + b', "output": "a", "target": "t", ' \
        b'"scorers": ["length"]}'  # fmt: skip
    assert client.post("/v1/scores", content=fine, headers=headers).status_code == 202


# --------------------------------------------------------------- heavy scoring (item 7)

# Steps that keep working until the test lets them go (a file appears): whatever the machine's
# speed, the probes below run while the step runs. Each writes `started` first, and gives up
# after a minute (failing its run) rather than hang a broken test.
GATED_SCORERS = """\
import time
from pathlib import Path

import scorewatch as sw


def _until_released(work):
    Path("started").touch()
    deadline = time.monotonic() + 60
    while not Path("released").exists():
        if time.monotonic() > deadline:
            raise RuntimeError("never released")
        work()


def make_burning_scorer():
    # CPU-bound, as a heavy prebuilt scorer is: the distinct words of a megabyte, again and again.
    def burn(ctx):
        _until_released(lambda: len(set(str(ctx.run.output).split())))
        return 1.0

    return sw.create_scorer(id="burn", description="CPU until released").generate_score(burn)


def make_busy_scorer():
    # Holds its event loop: pure Python, never awaiting.
    def busy(ctx):
        if ctx.run.output == "busy":
            _until_released(lambda: None)
        return 1.0

    return sw.create_scorer(id="busy", description="Busy until released").generate_score(busy)
"""

HEAVY_CONFIG = """\
[server]
max_body_bytes = 4194304

[[scorers]]
id = "burn"
factory = "sw_gated_scorers:make_burning_scorer"

[sinks]
sqlite = "scores.db"

[telemetry]
prometheus = false
otlp = false
"""

BUSY_CONFIG = """\
[[scorers]]
id = "busy"
factory = "sw_gated_scorers:make_busy_scorer"

[sinks]
sqlite = "scores.db"

[telemetry]
prometheus = false
otlp = false
"""


def _gated_config(directory: Path, body: str) -> Path:
    (directory / "sw_gated_scorers.py").write_text(GATED_SCORERS, encoding="utf-8")
    return write_config(directory, body, module=False)


def _wait_started(directory: Path) -> None:
    deadline = time.monotonic() + 60
    while not (directory / "started").exists():
        assert time.monotonic() < deadline, "the gated step never started"
        time.sleep(0.01)


def _wait_idle(http: httpx.Client) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        stats: dict[str, Any] = http.get("/v1/stats").json()
        if stats["queued"] + stats["in_flight"] == 0:
            return stats
        assert time.monotonic() < deadline, stats
        time.sleep(0.05)


def test_healthz_answers_while_a_heavy_item_is_scored(tmp_path: Path) -> None:
    path = _gated_config(tmp_path, HEAVY_CONFIG)
    # A megabyte output: scored off the serving loop, by a step that burns CPU until released.
    item = {"input": "q", "output": word_text(1_000_000, 2), "target": "agent"}
    with ServeProcess(path) as served, httpx.Client(base_url=served.url, timeout=10) as http:
        assert http.post("/v1/scores", json=item).status_code == 202
        _wait_started(tmp_path)
        # The step holds a core until released: every probe answers meanwhile (within the
        # client's 10 s; on the serving loop, the step would hold them for its whole minute).
        answered = [http.get("/healthz").status_code for _ in range(5)]
        during = http.get("/v1/stats").json()
        (tmp_path / "released").touch()
        stats = _wait_idle(http)
    assert answered == [200] * 5
    assert during["in_flight"] == 1 and during["scored"] == 0, during
    assert stats["scored"] == 1 and stats["failed"] == 0, stats


def test_the_http_loop_answers_while_a_scorer_step_holds_the_scoring_loop(
    tmp_path: Path,
) -> None:
    path = _gated_config(tmp_path, BUSY_CONFIG)
    with ServeProcess(path) as served, httpx.Client(base_url=served.url, timeout=10) as http:
        assert http.post("/v1/scores", json=_item("busy")).status_code == 202
        _wait_started(tmp_path)
        # While the step holds the scoring loop: probes answer and new work is admitted.
        healthy = sum(http.get("/healthz").status_code == 200 for _ in range(5))
        admitted = http.post("/v1/scores", json=_item("quick")).status_code
        during = http.get("/v1/stats").json()
        (tmp_path / "released").touch()
        stats = _wait_idle(http)
    # Both answered before the busy run ended: on one shared loop, they would have waited for
    # it (and found it scored).
    assert (healthy, admitted) == (5, 202)
    assert during["scored"] == 0 and during["sampled"] == 2, during
    assert stats["scored"] == 2, stats


def _item(output: str) -> dict[str, str]:
    return {"input": "q", "output": output, "target": "agent"}

"""What a judge endpoint answers is not trusted (issue 28, items 15 and 16), against a real
`scorewatch serve` whose judged scorer takes the fast path to loopback servers: a compressed or
endless body is read up to a cap, never into memory whole; a redirect is not followed (the
prompt goes nowhere else, another host's answer is no verdict); `ALL_PROXY` is honoured as
the openai SDK honours it, and a proxy the client cannot speak to fails the call."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from scorewatch.testing import LoopbackJudgeServer, RawResponse
from serve_support import PeakRss, ServeProcess, write_config

pytestmark = pytest.mark.e2e

CONFIG = """\
[[scorers]]
id = "judged"
factory = "sw_test_scorers:make_judged_scorer"

[sinks]
sqlite = "scores.db"

[telemetry]
prometheus = false
otlp = false
"""

_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


def _no_proxies() -> dict[str, str]:
    """The environment's proxy variables emptied (both spellings), for a process of ours."""
    return {name: "" for base in _PROXY_VARIABLES for name in (base, base.lower())}


def _gzip_of_spaces(size: int) -> bytes:
    """`size` spaces, gzip-compressed (about a thousandth of that), built a megabyte at a time."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b" " * (1 << 20)
    parts = [packer.compress(block) for _ in range(size >> 20)]
    return b"".join([*parts, packer.flush()])


def _judged(serve: ServeProcess, output: str = "an answer") -> dict[str, Any]:
    """One judged run through serve (`?wait=true`): its report, plus `judge_error`, the
    judge's own error of its one execution as the stored row's judge record holds it."""
    with httpx.Client(base_url=serve.url, timeout=120) as client:
        answer = client.post(
            "/v1/scores",
            params={"wait": "true"},
            json={"input": "q", "output": output, "target": "bot"},
        )
        assert answer.status_code == 200, answer.text
        [result] = answer.json()["results"]
        rows = client.get("/v1/scores", params={"target": "bot", "limit": 1000}).json()
    [row] = [row for row in rows["scores"] if row["id"] == result["run_id"]]
    executions = row["judge"]["generateScore"]["executions"] if row["judge"] else []
    error = executions[-1].get("error") if executions else None
    return {**result, "judge_error": error or {}}


@pytest.fixture
def judge() -> Iterator[LoopbackJudgeServer]:
    with LoopbackJudgeServer() as running:
        yield running


def _serve(tmp_path: Path, judge_base: str, all_proxy: str = "") -> ServeProcess:
    environment = {"SW_TEST_JUDGE_BASE": judge_base, **_no_proxies()}
    environment.update(ALL_PROXY=all_proxy, all_proxy=all_proxy)
    return ServeProcess(write_config(tmp_path, CONFIG), env=environment)


@pytest.mark.parametrize("endless", [False, True], ids=["gzip-bomb", "endless-body"])
def test_a_huge_answer_is_a_failed_attempt_read_only_up_to_the_cap(
    tmp_path: Path, judge: LoopbackJudgeServer, endless: bool
) -> None:
    # Before: a 1 MB gzip bomb took serve to 2.9 GB, an endless body likewise.
    if endless:
        body, headers = b" " * (64 << 10), {"Content-Type": "application/json"}
    else:
        body = _gzip_of_spaces(256 << 20)  # 256 MiB of spaces in about 250 KB
        headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
    judge.script(RawResponse(200, body, headers, endless=endless))
    with _serve(tmp_path, judge.base_url) as serve:
        _judged(serve)  # the first judged run warms the process up
        sampler = PeakRss(serve)
        sampler.start()
        before = serve.rss_bytes()
        result = _judged(serve)
        grown = sampler.stop() - before
    assert result["status"] == "failed"
    assert result["judge_error"]["code"] == "RESPONSE_TOO_LARGE", result
    assert grown < 64 << 20, f"serve grew by {grown >> 20} MiB reading one answer"


@pytest.mark.parametrize("status", [307, 302, 301, 308])
def test_a_redirect_is_not_followed_and_the_other_host_never_hears_of_it(
    tmp_path: Path, judge: LoopbackJudgeServer, status: int
) -> None:
    # Before: a 307 re-POSTed the prompt to the other host; after a 302 that host's answer
    # was taken as the verdict.
    with LoopbackJudgeServer(default='{"score": 1}') as elsewhere:
        location = f"{elsewhere.base_url}/chat/completions"
        judge.script(RawResponse(status, b"", {"Location": location}))
        with _serve(tmp_path, judge.base_url) as serve:
            result = _judged(serve, output="the confidential answer")
        assert elsewhere.request_count == 0
    assert judge.request_count == 1  # one attempt, no retry
    assert result["status"] == "failed" and result["score"] is None
    assert result["judge_error"]["code"] == "REDIRECT_NOT_FOLLOWED", result
    assert f"HTTP {status}" in result["error"]


def test_all_proxy_is_honoured_and_a_proxy_it_cannot_speak_to_fails_the_call(
    tmp_path: Path,
) -> None:
    # Before: ALL_PROXY was ignored (a direct connection) while HTTPS_PROXY was honoured.
    unreachable = "http://judge.invalid:9/v1"  # only a proxy can reach it
    with LoopbackJudgeServer() as proxy:  # it records the absolute-form request, answers 404
        with _serve(tmp_path / "http", unreachable, f"http://127.0.0.1:{proxy.port}") as serve:
            result = _judged(serve)
        assert [r.path for r in proxy.requests] == [f"{unreachable}/chat/completions"]
    assert result["status"] == "failed"
    assert result["judge_error"]["code"] == "MODEL_NOT_FOUND", result

    with _serve(tmp_path / "socks", unreachable, "socks5://127.0.0.1:9") as serve:
        result = _judged(serve)
    assert result["status"] == "failed"
    assert result["judge_error"]["code"] == "PROXY_UNSUPPORTED", result
    assert "transport='litellm'" in result["error"]

"""A judge that keeps rejecting its credentials is paused (judge/breaker.py), on both paths; a
key named by `api_key_env` is read and named; a connection that fails names its address."""

from __future__ import annotations

import socket

import pytest

from scorewatch.judge import JudgeProviderError, JudgeRequest, LiteLLMJudge
from scorewatch.judge import breaker as breaker_module
from scorewatch.judge.breaker import CredentialBreaker
from scorewatch.judge.errors import JudgeTimeoutError
from scorewatch.testing import HttpError, LoopbackJudgeServer

pytestmark = pytest.mark.integration

KEY = "sk-breaker-sentinel-7d21"


def request() -> JudgeRequest:
    return JudgeRequest(prompt="Rate it.", instructions="Judge.", step="generate_reason")


async def _code(judge: LiteLLMJudge) -> str:
    with pytest.raises(JudgeProviderError) as caught:
        await judge.complete(request())
    return caught.value.code


async def test_three_rejections_in_a_row_pause_the_judge_without_calls(
    server: LoopbackJudgeServer, transport: str
) -> None:
    server.script([*[HttpError(401)] * 3, "a reason"])
    judge = LiteLLMJudge(
        "openai/x", api_base=server.base_url, api_key=KEY, transport=transport, max_retries=0
    )
    codes = [await _code(judge) for _ in range(5)]
    assert codes == ["AUTHENTICATION_FAILED"] * 3 + ["JUDGE_PAUSED"] * 2
    assert server.request_count == 3 and judge.paused_calls == 2
    with pytest.raises(JudgeProviderError) as caught:
        await judge.complete(request())
    paused = caught.value
    assert paused.retryable is False and paused.status_code == 401
    assert "no call was made" in paused.message and "check the api_key option" in paused.message
    assert KEY not in f"{paused} {paused!r} {paused.to_dict()}"


def _clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1000.0]
    monkeypatch.setattr(breaker_module.time, "monotonic", lambda: now[0])
    return now


def test_after_the_pause_one_call_goes_out_and_a_success_closes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = _clock(monkeypatch)
    breaker = CredentialBreaker(threshold=2, pause_s=30)
    rejected = JudgeProviderError("rejected (HTTP 401)", code="AUTHENTICATION_FAILED")
    breaker.failed("m", rejected)
    breaker.check("m")  # one rejection: still calling
    breaker.failed("m", rejected)
    with pytest.raises(JudgeProviderError, match="paused for 30s more"):
        breaker.check("m")
    now[0] += 31
    breaker.check("m")  # the pause is over: this call goes out
    breaker.failed("m", rejected)  # rejected again: paused again at once
    with pytest.raises(JudgeProviderError):
        breaker.check("m")
    now[0] += 31
    breaker.succeeded()
    breaker.failed("m", rejected)  # the row starts over after a success
    breaker.check("m")
    assert breaker.paused_calls == 2


def test_other_failures_neither_count_nor_break_the_row(monkeypatch: pytest.MonkeyPatch) -> None:
    _clock(monkeypatch)
    breaker = CredentialBreaker(threshold=2, pause_s=30)
    forbidden = JudgeProviderError("denied (HTTP 403)", code="PERMISSION_DENIED")
    breaker.failed("m", forbidden)
    for _ in range(5):
        breaker.failed("m", JudgeTimeoutError("slow"))
        breaker.failed("m", JudgeProviderError("5xx", code="PROVIDER_ERROR"))
    breaker.check("m")
    breaker.failed("m", forbidden)
    with pytest.raises(JudgeProviderError, match="paused"):
        breaker.check("m")


async def test_the_key_named_by_api_key_env_is_read_and_named(
    server: LoopbackJudgeServer, transport: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SW_BREAKER_KEY", KEY)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # without a key, nothing would be sent
    server.script(HttpError(401))
    judge = LiteLLMJudge(
        "openai/x", api_base=server.base_url, api_key_env="SW_BREAKER_KEY", transport=transport
    )
    assert judge.options["api_key"] == "***"
    with pytest.raises(JudgeProviderError) as caught:
        await judge.complete(request())
    assert caught.value.message.endswith("check SW_BREAKER_KEY (named by api_key_env)")
    assert "authorization" in server.requests[0].header_names
    monkeypatch.delenv("SW_BREAKER_KEY")
    unset = LiteLLMJudge("openai/x", api_key_env="SW_BREAKER_KEY", transport=transport)
    assert unset.missing_api_key() == (
        "judge model 'openai/x' has no API key: set SW_BREAKER_KEY (named by api_key_env)"
    )


async def test_a_connection_that_fails_names_the_address(transport: str) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base = f"http://127.0.0.1:{port}/v1"
    judge = LiteLLMJudge(
        "openai/x", api_base=base, api_key=KEY, transport=transport, max_retries=0, timeout=10
    )
    with pytest.raises(JudgeProviderError) as caught:
        await judge.complete(request())
    assert caught.value.code == "CONNECTION_ERROR"
    assert f"at http://127.0.0.1:{port}/v1" in caught.value.message

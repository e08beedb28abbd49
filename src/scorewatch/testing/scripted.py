"""`ScriptedJudge`: a judge model whose answers a test writes in advance."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterable
from typing import Union

from ..judge.protocol import JudgeReply, JudgeRequest
from ..judge.retry import RetryPolicy
from ..judge.usage import JudgeUsage

__all__ = ["Reply", "ScriptedJudge"]

Reply = Union[str, JudgeReply, BaseException]  # noqa: UP007 - a runtime alias
ReplyFunction = Callable[[JudgeRequest], "Reply | Awaitable[Reply]"]

DEFAULT_USAGE = JudgeUsage(input_tokens=10, output_tokens=20, total_tokens=30)


class ScriptedJudge:
    """A `JudgeModel` that answers from a script.

    `replies` is a list consumed in order, or a function of the request (sync or async). A reply
    is the raw text the model returns, a full `JudgeReply`, or an exception instance to raise.
    Text replies report `usage` (10 input and 20 output tokens unless told otherwise).
    `calls` counts calls; `requests` keeps every request seen. No retries unless a
    `retry_policy` is given.
    """

    def __init__(
        self,
        replies: Iterable[Reply] | ReplyFunction,
        *,
        model_id: str = "scripted-judge",
        provider: str | None = "scripted",
        usage: JudgeUsage = DEFAULT_USAGE,
        delay: float = 0.0,
        retry_policy: RetryPolicy | None = None,
    ) -> None:
        if callable(replies):
            self._reply_for: ReplyFunction | None = replies
            self._queue: list[Reply] = []
        else:
            self._reply_for = None
            self._queue = list(replies)
        self._model_id = model_id
        self._provider = provider
        self.usage = usage
        self.delay = delay
        if retry_policy is not None:
            self.retry_policy = retry_policy
        self.calls = 0
        self.requests: list[JudgeRequest] = []

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def provider(self) -> str | None:
        return self._provider

    async def complete(self, request: JudgeRequest) -> JudgeReply:
        self.calls += 1
        self.requests.append(request)
        if self.delay:
            await asyncio.sleep(self.delay)
        if self._reply_for is not None:
            reply = self._reply_for(request)
            if inspect.isawaitable(reply):
                reply = await reply
        elif self._queue:
            reply = self._queue.pop(0)
        else:
            raise AssertionError(
                f"ScriptedJudge ran out of replies at call {self.calls} (step {request.step!r})"
            )
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, JudgeReply):
            return reply
        return JudgeReply(text=reply, usage=self.usage, response_model=self._model_id)

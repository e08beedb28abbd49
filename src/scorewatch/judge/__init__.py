"""The model boundary: the judge protocol, requests and replies, retries, usage and cost.

This package knows nothing of scorers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import JudgeError, JudgeProviderError, JudgeTimeoutError, StructuredOutputError
from .protocol import JsonPromptInjection, JudgeCost, JudgeModel, JudgeReply, JudgeRequest
from .retry import NO_RETRY, RetryPolicy
from .usage import JudgeUsage, add_usage, normalize_usage

if TYPE_CHECKING:
    from .litellm_judge import LiteLLMJudge

__all__ = [
    "NO_RETRY",
    "JsonPromptInjection",
    "JudgeCost",
    "JudgeError",
    "JudgeModel",
    "JudgeProviderError",
    "JudgeReply",
    "JudgeRequest",
    "JudgeTimeoutError",
    "JudgeUsage",
    "LiteLLMJudge",
    "RetryPolicy",
    "StructuredOutputError",
    "add_usage",
    "normalize_usage",
]


def __getattr__(name: str) -> Any:
    # LiteLLMJudge's module is cheap, but keep the facade free of it until asked.
    if name == "LiteLLMJudge":
        from .litellm_judge import LiteLLMJudge

        return LiteLLMJudge
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

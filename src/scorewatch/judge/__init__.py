"""The model boundary: the judge protocol, requests and replies, retries, usage and cost.

This package knows nothing of scorers.

Importing it makes litellm's bundled price table the default (`LITELLM_LOCAL_MODEL_COST_MAP=True`
unless the environment already says otherwise), so that `import litellm` after `import
scorewatch`, in scorewatch or in the user's own code, never stalls on a download of prices.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._lazy import lazy_attribute
from .errors import JudgeError, JudgeProviderError, JudgeTimeoutError, StructuredOutputError
from .prices import offline_by_default
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

offline_by_default()

# LiteLLMJudge's module is cheap, but keep the facade free of it until asked.
_LAZY: dict[str, tuple[str, str | None]] = {"LiteLLMJudge": (".litellm_judge", "LiteLLMJudge")}


def __getattr__(name: str) -> Any:
    return lazy_attribute(globals(), _LAZY, name)

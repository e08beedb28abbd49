"""What a user writes to define steps: prompt steps and judge configuration."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..judge.protocol import JsonPromptInjection, JudgeModel, JudgeReply

if TYPE_CHECKING:
    from .result import StepContext

__all__ = ["CreatePrompt", "JudgeConfig", "PromptStep"]

CreatePrompt = Callable[["StepContext"], "str | Awaitable[str]"]


@dataclass(frozen=True, slots=True)
class JudgeConfig:
    """The judge of a scorer (scorer level) or of one prompt step (step level).

    Every field left as None at step level falls back to the scorer level. `model` is a litellm
    model id (`"openai/gpt-4o-mini"`, run through `LiteLLMJudge(model, **model_options)`) or any
    `JudgeModel`. The effective `json_prompt_injection` default is `"auto"`. `on_finish`, if set,
    is called with each validated reply; if it raises, the step fails and its judge record keeps
    the validated output.
    """

    model: str | JudgeModel | None = None
    instructions: str | None = None
    json_prompt_injection: JsonPromptInjection | None = None
    model_options: Mapping[str, Any] | None = None
    on_finish: Callable[[JudgeReply], object] | None = None

    def __repr__(self) -> str:
        # model_options may hold an API key: never print it.
        model = self.model if isinstance(self.model, str) else type(self.model).__name__
        options = sorted(self.model_options) if self.model_options else []
        return (
            f"JudgeConfig(model={model!r}, json_prompt_injection={self.json_prompt_injection!r}, "
            f"model_options=<{', '.join(options)}>)"
        )


@dataclass(frozen=True, slots=True)
class PromptStep:
    """A step answered by the judge.

    `create_prompt(ctx)` (sync or async) builds the user prompt. `output_schema` (a pydantic
    model class or a JSON-schema dict) is required for preprocess and analyze; generate_score asks
    for `{"score": number}`; generate_reason gets plain text.
    """

    description: str
    create_prompt: CreatePrompt
    output_schema: Any = None
    judge: JudgeConfig | None = None

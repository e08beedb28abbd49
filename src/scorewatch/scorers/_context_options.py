"""The keyword options shared by the scorers that judge an output against a context.

Faithfulness, hallucination, context precision, context recall and context relevance all take
the judge model first and then the same keywords: where the context comes from, the score's
scale and the judge model's options. They are declared once here, as a `TypedDict` the
factories unpack (`**options: Unpack[ContextOptions]`), so a type checker checks every call
and this module is the one place a new shared option is added. `ContextSettings.of` applies
the defaults and refuses, at construction, a keyword the factory does not know.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from ..core import StepContext
from ._judging import context_of, require_scale
from ._text import ContextExtractor

__all__ = ["ContextOptions", "ContextSettings"]


class ContextOptions(TypedDict, total=False):
    """The keywords of a context-judging scorer's factory (all optional)."""

    context: Sequence[str] | None
    """The context pieces, the same for every run."""
    context_extractor: ContextExtractor | None
    """`(input, output) -> pieces` for each run (sync or async); wins over `context`."""
    scale: float
    """What a perfect score is worth (default 1)."""
    model_options: Mapping[str, Any] | None
    """Options for `LiteLLMJudge` when the model is given as a litellm model id."""


@dataclass(frozen=True, slots=True)
class ContextSettings:
    """A factory's `ContextOptions` with the defaults applied."""

    context: Sequence[str] | None
    context_extractor: ContextExtractor | None
    scale: float
    model_options: Mapping[str, Any] | None

    @classmethod
    def of(
        cls, options: Mapping[str, Any], *, factory: str, extra: tuple[str, ...] = ()
    ) -> ContextSettings:
        """Check `options` (the factory's `**options`; `extra`: keywords of its own, read by
        the factory) and apply the defaults. Unknown keywords raise `TypeError` as Python
        does for a misspelt keyword."""
        known = ContextOptions.__optional_keys__ | set(extra)
        unknown = sorted(set(options) - known)
        if unknown:
            raise TypeError(f"{factory}() got an unexpected keyword argument {unknown[0]!r}")
        scale = options.get("scale", 1)
        require_scale(scale)
        return cls(
            context=options.get("context"),
            context_extractor=options.get("context_extractor"),
            scale=scale,
            model_options=options.get("model_options"),
        )

    def required_pieces(self, scorer: str) -> Callable[[StepContext], Awaitable[list[str]]]:
        """The run's context pieces, for a scorer that cannot judge without a context: raises
        now when neither `context` nor `context_extractor` was given."""
        return context_of(self.context, self.context_extractor, scorer=scorer)

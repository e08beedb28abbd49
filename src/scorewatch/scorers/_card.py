"""A prebuilt scorer's card, declared once in its module, and the catalogue the cards fill.

Each prebuilt scorer module declares one `ScorerCard` (its short name, id, name, description,
direction, judge calls and the options it needs one of) and registers its factory with
`@prebuilt(card)`, as inspect_ai's scorers register themselves. The factory builds its scorer
from the card (`card.create_scorer`), and `scorewatch.scorers.registry` reads the catalogue the
registrations filled: `scorewatch scorers`, `scorewatch eval --scorer`, serve's `[[scorers]]
kind` and `GET /v1/scorers` all see the same card. The options a factory requires are its own
signature's: the keyword parameters without a default.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Literal, TypeVar

from ..core import JudgeConfig, Scorer, create_scorer
from ..core.scorer import Direction

__all__ = ["CATALOGUE", "CONTEXT_OPTIONS", "ScorerCard", "ScorerSpec", "prebuilt"]

# The options of the scorers that judge a given context: one of them must be set.
CONTEXT_OPTIONS = ("context", "context_extractor")


@dataclass(frozen=True, slots=True)
class ScorerCard:
    """What a prebuilt scorer is called, what it measures and what it needs.

    `name`: the short name of the catalogue (`faithfulness`, `check-includes`); `id`,
    `scorer_name`: the scorer's own id and name, as the reference system's; `description`: what
    it measures (a factory whose options change what is checked may describe the built scorer
    more precisely); `judge_calls`: the judge calls of one run when every reply is well-formed
    (0: model-free); `one_of_options`: options of which one must be given. A judged scorer's
    card also holds what it tells its judge (`instructions`) and what its reason step explains
    (`subject`: `"faithfulness"` gives "Explain the faithfulness score").
    """

    name: str
    id: str
    scorer_name: str
    description: str
    judge_calls: int = 0
    direction: Direction = "higher_is_better"
    type: Literal["agent", "trajectory"] | None = "agent"
    one_of_options: tuple[str, ...] = ()
    instructions: str = ""
    subject: str = ""

    def create_scorer(
        self,
        *,
        scale: float = 1,
        judge: JudgeConfig | None = None,
        id: str | None = None,
        description: str | None = None,
        direction: Direction | None = None,
        categories: Mapping[str, float] | None = None,
    ) -> Scorer:
        """The scorer this card describes, before its steps; `id`, `description` and
        `direction` override the card's for a scorer configured otherwise."""
        return create_scorer(
            id=id or self.id,
            name=self.scorer_name,
            description=description or self.description,
            judge=judge,
            type=self.type,
            scale=scale,
            direction=direction or self.direction,
            categories=categories,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ScorerSpec(ScorerCard):
    """One entry of the catalogue: a card with the factory registered under it.

    `needs_model`: the factory takes the judge model first; `required_options`: its keyword
    parameters without a default (besides `model`)."""

    factory: Callable[..., Scorer]
    needs_model: bool
    required_options: tuple[str, ...]

    @classmethod
    def of(cls, card: ScorerCard, factory: Callable[..., Scorer]) -> ScorerSpec:
        parameters = list(inspect.signature(factory).parameters.values())
        needs_model = bool(parameters) and parameters[0].name == "model"
        required = tuple(
            p.name
            for p in parameters[1 if needs_model else 0 :]
            if p.default is inspect.Parameter.empty
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        )
        declared = {field.name: getattr(card, field.name) for field in fields(ScorerCard)}
        return cls(**declared, factory=factory, needs_model=needs_model, required_options=required)


# Short name -> entry, in registration order; filled as the scorer modules are imported.
CATALOGUE: dict[str, ScorerSpec] = {}

_Factory = TypeVar("_Factory", bound=Callable[..., Scorer])


def prebuilt(card: ScorerCard) -> Callable[[_Factory], _Factory]:
    """Register the decorated factory as the prebuilt scorer `card` describes."""

    def register(factory: _Factory) -> _Factory:
        known = CATALOGUE.get(card.name)
        if known is not None and known.factory is not factory:
            raise ValueError(
                f"two prebuilt scorers are named {card.name!r}: "
                f"{known.factory.__qualname__} and {factory.__qualname__}"
            )
        CATALOGUE[card.name] = ScorerSpec.of(card, factory)
        return factory

    return register

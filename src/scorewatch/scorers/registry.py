"""The prebuilt scorers by short name, for the CLI (`scorewatch scorers`, `scorewatch eval
--scorer NAME`) and the server configuration (`kind = "summarization"`).

    from scorewatch.scorers.registry import PREBUILT, build_scorer

    scorer = build_scorer("faithfulness", model="openai/gpt-4o-mini", context=["..."])
    check = build_scorer("check-includes", expected="sunny")

`PREBUILT` is filled by the scorers themselves: each module declares its card and registers its
factory with it (`scorewatch/scorers/_card.py`), so nothing here restates a scorer.
Names are lower-case and hyphenated; an underscore spelling (`content_similarity`) and the
scorer's id (`faithfulness-scorer`, `llm-tool-call-accuracy-scorer`, or without its `-scorer`)
are accepted. LLM-judged scorers need `model` (a litellm model id or a `JudgeModel`;
`model_options` go to `LiteLLMJudge`); model-free scorers ignore `model` and `model_options`,
so one command line can mix both kinds.
"""

from __future__ import annotations

from typing import Any

from ..core import Scorer
from ..errors import ScorewatchError
from ..judge.protocol import JudgeModel
from ._card import CATALOGUE, ScorerCard, ScorerSpec

__all__ = [
    "INVALID_SCORER_OPTIONS",
    "PREBUILT",
    "UNKNOWN_SCORER",
    "ScorerCard",
    "ScorerSpec",
    "build_scorer",
    "find",
    "known_names",
]

UNKNOWN_SCORER = "SCOREWATCH_UNKNOWN_SCORER"
INVALID_SCORER_OPTIONS = "SCOREWATCH_INVALID_SCORER_OPTIONS"

# Every prebuilt scorer, by short name: importing this module imported the scorers package,
# whose modules registered themselves.
PREBUILT: dict[str, ScorerSpec] = CATALOGUE


def known_names() -> list[str]:
    return sorted(PREBUILT)


def find(name: str) -> ScorerSpec | None:
    """The prebuilt scorer a name means (short name or scorer id, any case, `_` for `-`)."""
    key = name.strip().lower().replace("_", "-")
    by_id = {spec.id.removesuffix("-scorer"): spec for spec in PREBUILT.values()}
    for candidate in (key, key.removesuffix("-scorer")):
        found = PREBUILT.get(candidate) or by_id.get(candidate)
        if found is not None:
            return found
    return None


def _spec_for(name: str) -> ScorerSpec:
    found = find(name)
    if found is None:
        raise ScorewatchError(
            f"unknown scorer {name!r}; known scorers: {', '.join(known_names())}",
            code=UNKNOWN_SCORER,
            details={"name": name},
        )
    return found


def _options_error(spec: ScorerSpec, problem: str) -> ScorewatchError:
    return ScorewatchError(
        f"scorer {spec.name!r}: {problem}", code=INVALID_SCORER_OPTIONS, details={"name": spec.name}
    )


def build_scorer(name: str, model: str | JudgeModel | None = None, **options: Any) -> Scorer:
    """A prebuilt scorer by short name: `build_scorer("faithfulness", model=..., context=[...])`.

    Raises `ScorewatchError` (code `SCOREWATCH_UNKNOWN_SCORER`) listing the known names for an
    unknown name, and (code `SCOREWATCH_INVALID_SCORER_OPTIONS`) when an LLM-judged scorer has
    no model, a required option is missing or an option is not accepted.
    """
    spec = _spec_for(name)
    given = {key: value for key, value in options.items() if value is not None}
    missing = [option for option in spec.required_options if option not in given]
    if missing:
        raise _options_error(spec, f"needs option(s) {', '.join(missing)}")
    if spec.one_of_options and not any(option in given for option in spec.one_of_options):
        raise _options_error(spec, f"needs one of the options {', '.join(spec.one_of_options)}")
    if not spec.needs_model:
        given.pop("model_options", None)
        return _call(spec, (), given)
    if model is None:
        raise _options_error(spec, "is LLM-judged and needs a judge model (model=...)")
    return _call(spec, (model,), given)


def _call(spec: ScorerSpec, args: tuple[Any, ...], options: dict[str, Any]) -> Scorer:
    try:
        return spec.factory(*args, **options)
    except TypeError as exc:
        # An unknown keyword: say which scorer and which option, not a bare TypeError.
        raise _options_error(spec, str(exc)) from exc
    except ValueError as exc:
        raise _options_error(spec, str(exc)) from exc

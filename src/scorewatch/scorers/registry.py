"""The prebuilt scorers by short name, for the CLI (`scorewatch scorers`, `scorewatch eval
--scorer NAME`) and the server configuration (`kind = "summarization"`).

    from scorewatch.scorers.registry import PREBUILT, build_scorer

    scorer = build_scorer("faithfulness", model="openai/gpt-4o-mini", context=["..."])
    check = build_scorer("check-includes", expected="sunny")

Names are lower-case and hyphenated; an underscore spelling (`content_similarity`) and the
scorer's id (`faithfulness-scorer`, `llm-tool-call-accuracy-scorer`) are accepted.
LLM-judged scorers need `model` (a litellm model id or a `JudgeModel`; `model_options` go to
`LiteLLMJudge`); model-free scorers ignore `model` and `model_options`, so one command line can
mix both kinds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core import Scorer
from ..core.scorer import Direction
from ..errors import ScorewatchError
from ..judge.protocol import JudgeModel
from . import checks
from .answer_relevancy import create_answer_relevancy_scorer
from .answer_similarity import create_answer_similarity_scorer
from .bias import create_bias_scorer
from .completeness import create_completeness_scorer
from .content_similarity import create_content_similarity_scorer
from .context_precision import create_context_precision_scorer
from .context_recall import create_context_recall_scorer
from .context_relevance import create_context_relevance_scorer
from .faithfulness import create_faithfulness_scorer
from .hallucination import create_hallucination_scorer
from .keyword_coverage import create_keyword_coverage_scorer
from .multi_turn_judge import create_multi_turn_judge_scorer
from .noise_sensitivity import create_noise_sensitivity_scorer
from .prompt_alignment import create_prompt_alignment_scorer
from .rubric import create_rubric_scorer
from .rubric_label import create_rubric_label_scorer
from .summarization import create_summarization_scorer
from .textual_difference import create_textual_difference_scorer
from .tone_consistency import create_tone_consistency_scorer
from .tool_call_accuracy_code import create_tool_call_accuracy_code_scorer
from .tool_call_accuracy_llm import create_tool_call_accuracy_llm_scorer
from .toxicity import create_toxicity_scorer
from .trajectory_accuracy_code import create_trajectory_accuracy_code_scorer
from .trajectory_accuracy_llm import create_trajectory_accuracy_llm_scorer
from .trajectory_code import create_trajectory_code_scorer

__all__ = [
    "INVALID_SCORER_OPTIONS",
    "PREBUILT",
    "UNKNOWN_SCORER",
    "ScorerSpec",
    "build_scorer",
    "known_names",
]

UNKNOWN_SCORER = "SCOREWATCH_UNKNOWN_SCORER"
INVALID_SCORER_OPTIONS = "SCOREWATCH_INVALID_SCORER_OPTIONS"


@dataclass(frozen=True, slots=True)
class ScorerSpec:
    """One prebuilt scorer: its factory and what it needs.

    `judge_calls` is the number of judge calls one run makes when every reply is well-formed
    (0 for model-free scorers). `required_options` must be given to `build_scorer`.
    """

    name: str
    factory: Callable[..., Scorer]
    needs_model: bool
    description: str
    direction: Direction = "higher_is_better"
    judge_calls: int = 0
    required_options: tuple[str, ...] = ()
    one_of_options: tuple[str, ...] = ()


def _llm(
    name: str,
    factory: Callable[..., Scorer],
    description: str,
    calls: int,
    direction: Direction = "higher_is_better",
    required: tuple[str, ...] = (),
    one_of: tuple[str, ...] = (),
) -> ScorerSpec:
    return ScorerSpec(name, factory, True, description, direction, calls, required, one_of)


def _free(
    name: str, factory: Callable[..., Scorer], description: str, required: tuple[str, ...] = ()
) -> ScorerSpec:
    return ScorerSpec(name, factory, False, description, "higher_is_better", 0, required)


_CONTEXT = ("context", "context_extractor")

_SPECS = (
    _llm(
        "summarization",
        create_summarization_scorer,
        "Summary quality: the lower of claim alignment with the source and coverage of it",
        3,
    ),
    _llm(
        "faithfulness",
        create_faithfulness_scorer,
        "Share of the output's claims the context supports",
        3,
    ),
    _llm(
        "hallucination",
        create_hallucination_scorer,
        "Share of the output's claims the context does not back (lower is better)",
        3,
        "lower_is_better",
    ),
    _llm(
        "answer-relevancy",
        create_answer_relevancy_scorer,
        "Share of the output's statements that address the user's message",
        3,
    ),
    _llm(
        "answer-similarity",
        create_answer_similarity_scorer,
        "How closely the output matches the run's ground truth, unit by unit",
        3,
    ),
    _llm(
        "toxicity",
        create_toxicity_scorer,
        "Share of the output's statements that are toxic (lower is better)",
        2,
        "lower_is_better",
    ),
    _llm(
        "bias",
        create_bias_scorer,
        "Share of the output's opinions that are biased (lower is better)",
        3,
        "lower_is_better",
    ),
    _llm(
        "context-precision",
        create_context_precision_scorer,
        "Whether the useful context pieces are ranked first (mean average precision)",
        2,
        one_of=_CONTEXT,
    ),
    _llm(
        "context-recall",
        create_context_recall_scorer,
        "Share of the ground truth's claims that the context supports",
        3,
        one_of=_CONTEXT,
    ),
    _llm(
        "context-relevance",
        create_context_relevance_scorer,
        "Relevance of the given context to the request, and whether the response used it",
        2,
        one_of=_CONTEXT,
    ),
    _llm(
        "prompt-alignment",
        create_prompt_alignment_scorer,
        "How well the response follows its prompt's intent, requirements, format and tone",
        2,
    ),
    _llm(
        "tool-call-accuracy-llm",
        create_tool_call_accuracy_llm_scorer,
        "Share of the agent's tool calls the judge finds appropriate",
        2,
        required=("available_tools",),
    ),
    _llm(
        "noise-sensitivity",
        create_noise_sensitivity_scorer,
        "How well the answer resists noise added to its query, against a baseline answer",
        2,
        required=("baseline_response", "noisy_query"),
    ),
    _llm(
        "rubric",
        create_rubric_scorer,
        "1 only when the output meets every required criterion of your checklist",
        1,
    ),
    _llm(
        "rubric-label",
        create_rubric_label_scorer,
        "Grades the output against your rubric by choosing one of your labels",
        1,
        required=("rubric",),
    ),
    _llm(
        "trajectory-accuracy-llm",
        create_trajectory_accuracy_llm_scorer,
        "How necessary, well ordered and complete the judge finds the agent's steps",
        2,
    ),
    _llm(
        "multi-turn-judge",
        create_multi_turn_judge_scorer,
        "Whether the whole conversation meets your criterion (binary)",
        1,
        required=("criterion",),
    ),
    _free(
        "completeness",
        create_completeness_scorer,
        "Coverage of the input's words (stems) in the output",
    ),
    _free(
        "content-similarity",
        create_content_similarity_scorer,
        "Bigram Dice similarity of the output to the input",
    ),
    _free(
        "keyword-coverage",
        create_keyword_coverage_scorer,
        "Share of the input's keywords that appear in the output",
    ),
    _free(
        "textual-difference",
        create_textual_difference_scorer,
        "Longest-common-subsequence ratio of the output to the input",
    ),
    _free(
        "tone-consistency",
        create_tone_consistency_scorer,
        "Sentiment match with a reference text, or sentiment stability (AFINN-165)",
    ),
    _free(
        "tool-call-accuracy-code",
        create_tool_call_accuracy_code_scorer,
        "1 when the expected tool (or tool order) was called",
    ),
    _free(
        "trajectory-accuracy-code",
        create_trajectory_accuracy_code_scorer,
        "Share of the expected steps the agent took (strict, relaxed or unordered)",
    ),
    _free(
        "trajectory-code",
        create_trajectory_code_scorer,
        "Step accuracy, efficiency budgets, forbidden steps and retries in one score",
    ),
    _free(
        "check-includes",
        checks.includes,
        "1 when the output contains the text",
        ("expected",),
    ),
    _free(
        "check-excludes",
        checks.excludes,
        "1 when the output does not contain the text",
        ("unwanted",),
    ),
    _free("check-equals", checks.equals, "1 when the output equals the text", ("expected",)),
    _free(
        "check-matches",
        checks.matches,
        "1 when the output matches the regular expression",
        ("pattern",),
    ),
    _free(
        "check-called-tool",
        checks.called_tool,
        "1 when the tool was called",
        ("tool_name",),
    ),
    _free(
        "check-did-not-call",
        checks.did_not_call,
        "1 when the tool was not called",
        ("tool_name",),
    ),
    _free(
        "check-max-tool-calls",
        checks.max_tool_calls,
        "1 when at most that many tool calls were made",
        ("limit",),
    ),
    _free(
        "check-tool-order",
        checks.tool_order,
        "1 when the tools were called in that order",
        ("expected_order",),
    ),
    _free("check-used-no-tools", checks.used_no_tools, "1 when no tool was called"),
)

PREBUILT: dict[str, ScorerSpec] = {spec.name: spec for spec in _SPECS}


def known_names() -> list[str]:
    return sorted(PREBUILT)


# Scorer ids (less their `-scorer` suffix) that differ from the short name.
_ID_ALIASES = {
    "llm-tool-call-accuracy": "tool-call-accuracy-llm",
    "llm-trajectory-accuracy": "trajectory-accuracy-llm",
    "code-trajectory-accuracy": "trajectory-accuracy-code",
    "code-trajectory": "trajectory-code",
    "code-tool-call-accuracy": "tool-call-accuracy-code",
    "tone": "tone-consistency",
}


def _spec_for(name: str) -> ScorerSpec:
    key = name.strip().lower().replace("_", "-")
    for candidate in (key, key.removesuffix("-scorer")):
        candidate = _ID_ALIASES.get(candidate, candidate)
        if candidate in PREBUILT:
            return PREBUILT[candidate]
    raise ScorewatchError(
        f"unknown scorer {name!r}; known scorers: {', '.join(known_names())}",
        code=UNKNOWN_SCORER,
        details={"name": name},
    )


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

"""The answer-similarity scorer: does the output say what the ground-truth answer says?

Three judge calls:

1. preprocess (judge): the semantic units (one fact or idea each) of the output and of the
   run's `ground_truth`, `{"outputUnits": [str], "groundTruthUnits": [str]}`;
2. analyze (judge): `{"matches": [{"groundTruthUnit", "outputUnit", "matchType", "explanation"}],
   "extraInOutput": [str], "contradictions": [{"outputUnit", "groundTruthUnit",
   "explanation"}]}`: for each ground-truth unit how the output covers it (`exact`,
   `semantic`, `partial` or `missing`), the contradictions, and the output's extra units;
3. generate_score (function), the reference system's formula with the option weights:
   `(sum of match credits) / (matches x (1 + exact_match_bonus))
    - contradictions x contradiction_penalty - min(extras x extra_info_penalty,
    max_extra_info_penalty)`, clamped to 0..1, times `scale`, rounded half up to two decimals.
   Credits: exact 1 + exact_match_bonus, semantic `semantic_threshold`, partial
   `semantic_threshold / 2`, missing `-missing_penalty`, any other label 0. No ground truth or
   no matches -> 0;
4. generate_reason (judge): a short explanation.

Range 0..scale, higher is better. Without a ground truth the run fails with a clear error
(`require_ground_truth=True`, the default) or scores 0. Routing marker of the analyze prompt:
`Compare the output's units with the ground truth's units`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core import PromptStep, Scorer, StepContext
from ..judge.protocol import JudgeModel
from ._card import ScorerCard, prebuilt
from ._judging import (
    JudgeAnswer,
    Reason,
    bullets,
    field_of,
    items_of,
    judged_scorer,
    numbered,
    one_of,
    require_scale,
)
from ._text import as_text, response_text
from ._verdicts import labels_of
from .utils import round_to_two_decimals

__all__ = [
    "ANSWER_SIMILARITY_SCORER_ID",
    "SimilarityWeights",
    "answer_similarity_score",
    "create_answer_similarity_scorer",
]

ANSWER_SIMILARITY_SCORER_ID = "answer-similarity-scorer"

INSTRUCTIONS = (
    "You compare an answer with a reference answer, unit of meaning by unit of meaning. Different "
    "wording with the same meaning is a semantic match; a changed number, name or date is not. "
    "Be strict but fair: partial coverage is partial."
)

_CARD = ScorerCard(
    name="answer-similarity",
    id=ANSWER_SIMILARITY_SCORER_ID,
    scorer_name="Answer Similarity Scorer",
    description="Measures how closely the output matches the ground-truth answer, "
    "unit of meaning by unit",
    judge_calls=3,
    instructions=INSTRUCTIONS,
    subject="answer similarity",
)


class UnitLists(JudgeAnswer):
    outputUnits: list[str]
    groundTruthUnits: list[str]


class UnitMatch(JudgeAnswer):
    groundTruthUnit: str = ""
    outputUnit: str | None = None
    matchType: str = one_of("exact", "semantic", "partial", "missing")
    explanation: str = ""


class Contradiction(JudgeAnswer):
    outputUnit: str = ""
    groundTruthUnit: str = ""
    explanation: str = ""


class UnitComparison(JudgeAnswer):
    matches: list[UnitMatch]
    extraInOutput: list[str]
    contradictions: list[Contradiction]


@dataclass(slots=True, kw_only=True)
class SimilarityWeights:
    """The scoring weights (see the module docstring)."""

    semantic_threshold: float = 0.8
    exact_match_bonus: float = 0.2
    missing_penalty: float = 0.15
    contradiction_penalty: float = 1.0
    extra_info_penalty: float = 0.05
    max_extra_info_penalty: float = 0.2


def answer_similarity_score(
    matches: Sequence[Any],
    contradictions: int,
    extras: int,
    weights: SimilarityWeights | None = None,
    scale: float = 1,
) -> float:
    """The similarity score from the comparison (see the module docstring); 0 without
    matches."""
    if not matches:
        return 0
    w = weights or SimilarityWeights()
    credit_of = {
        "exact": 1 + w.exact_match_bonus,
        "semantic": w.semantic_threshold,
        "partial": w.semantic_threshold * 0.5,
        "missing": -w.missing_penalty,
    }
    credit = sum(credit_of.get(label, 0.0) for label in labels_of(matches, "matchType"))
    value = credit / (len(matches) * (1 + w.exact_match_bonus))
    value -= contradictions * w.contradiction_penalty
    value -= min(extras * w.extra_info_penalty, w.max_extra_info_penalty)
    return round_to_two_decimals(max(0.0, min(1.0, value)) * scale)


def _extract_prompt(output: str, ground_truth: str) -> str:
    return f"""Split both texts below into semantic units: one fact or idea each, keeping \
numbers, names and dates. Return empty lists for empty texts.

Output:
{output}

Ground truth:
{ground_truth}

Format: {{"outputUnits":[str],"groundTruthUnits":[str]}}
"""


def _analyze_prompt(output_units: Sequence[str], truth_units: Sequence[str]) -> str:
    return f"""Compare the output's units with the ground truth's units.
"matches": exactly one entry per ground-truth unit, in order, with the output unit that covers \
it (null if none) and "matchType": "exact" (same fact, same wording), "semantic" (same \
meaning), "partial" (part of it) or "missing".
"contradictions": output units that contradict a ground-truth unit.
"extraInOutput": output units the ground truth does not mention.

Ground-truth units:
{numbered(truth_units)}

Output units:
{numbered(output_units)}

Format: {{"matches":[{{"groundTruthUnit":str,"outputUnit":str|null,"matchType":str,\
"explanation":str}}],"extraInOutput":[str],"contradictions":[{{"outputUnit":str,\
"groundTruthUnit":str,"explanation":str}}]}}
"""


def _has_ground_truth(value: Any) -> bool:
    # The reference system's test: any falsy ground truth ("", 0, None) counts as none.
    return bool(value)


@prebuilt(_CARD)
def create_answer_similarity_scorer(
    model: str | JudgeModel,
    *,
    require_ground_truth: bool = True,
    semantic_threshold: float = 0.8,
    exact_match_bonus: float = 0.2,
    missing_penalty: float = 0.15,
    contradiction_penalty: float = 1.0,
    extra_info_penalty: float = 0.05,
    max_extra_info_penalty: float = 0.2,
    scale: float = 1,
    model_options: Mapping[str, Any] | None = None,
) -> Scorer:
    """How closely the output matches the run's `ground_truth`, unit by unit, times `scale`.

    Three judge calls; range 0..scale; higher is better. The weights are described in the
    module docstring.
    """
    require_scale(scale)
    weights = SimilarityWeights(
        semantic_threshold=semantic_threshold,
        exact_match_bonus=exact_match_bonus,
        missing_penalty=missing_penalty,
        contradiction_penalty=contradiction_penalty,
        extra_info_penalty=extra_info_penalty,
        max_extra_info_penalty=max_extra_info_penalty,
    )

    def extract_prompt(ctx: StepContext) -> str:
        if not _has_ground_truth(ctx.run.ground_truth):
            if require_ground_truth:
                raise ValueError(
                    "the answer similarity scorer needs the run's ground_truth "
                    "(or require_ground_truth=False to score such runs 0)"
                )
            return _extract_prompt("", "")
        return _extract_prompt(response_text(ctx.run.output), as_text(ctx.run.ground_truth))

    def analyze_prompt(ctx: StepContext) -> str:
        found = ctx.results.preprocess_step_result
        return _analyze_prompt(
            [str(u) for u in items_of(found, "outputUnits")],
            [str(u) for u in items_of(found, "groundTruthUnits")],
        )

    def score(ctx: StepContext) -> float:
        if not _has_ground_truth(ctx.run.ground_truth):
            return 0
        comparison = ctx.results.analyze_step_result
        return answer_similarity_score(
            items_of(comparison, "matches"),
            len(items_of(comparison, "contradictions")),
            len(items_of(comparison, "extraInOutput")),
            weights,
            scale,
        )

    def explain(ctx: StepContext) -> Reason:
        comparison = ctx.results.analyze_step_result
        matches = items_of(comparison, "matches")
        labels = labels_of(matches, "matchType")
        missing = [
            str(field_of(m, "groundTruthUnit"))
            for m, label in zip(matches, labels, strict=True)
            if label == "missing"
        ]
        contradictions = [
            str(field_of(c, "outputUnit")) for c in items_of(comparison, "contradictions")
        ]
        note = None
        if not _has_ground_truth(ctx.run.ground_truth):
            note = "No ground truth was given, so there was nothing to compare with: score 0."
        elif not matches:
            note = "The comparison found no ground-truth units, so the score is 0."
        return Reason(
            facts=f"Output:\n{response_text(ctx.run.output)}\n\n"
            f"Ground truth:\n{as_text(ctx.run.ground_truth)}\n\n"
            f"Ground-truth units compared: {len(matches)}, exact: {labels.count('exact')}, "
            f"semantic: {labels.count('semantic')}, partial: {labels.count('partial')}\n"
            f"Missing:\n{bullets(missing)}\nContradictions:\n{bullets(contradictions)}\n"
            f"Extra units in the output: {len(items_of(comparison, 'extraInOutput'))}",
            empty_note=note,
        )

    preprocess = PromptStep(
        description="Split the output and the ground truth into semantic units",
        create_prompt=extract_prompt,
        output_schema=UnitLists,
    )
    analyze = PromptStep(
        description="Compare the output's units with the ground truth's",
        create_prompt=analyze_prompt,
        output_schema=UnitComparison,
    )
    return judged_scorer(
        _CARD, model, model_options, scale, analyze, score, explain, preprocess=preprocess
    )

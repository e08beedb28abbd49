"""Model-free scorers: completeness, keyword coverage, content similarity, textual difference,
tone consistency. Scores on fixed texts, empty cases, run shapes, configuration."""

from __future__ import annotations

from difflib import SequenceMatcher
from typing import Any

import pytest
from rapidfuzz import fuzz

from scorewatch.scorers.completeness import create_completeness_scorer, key_elements
from scorewatch.scorers.content_similarity import create_content_similarity_scorer
from scorewatch.scorers.keyword_coverage import create_keyword_coverage_scorer, extract_keywords
from scorewatch.scorers.textual_difference import create_textual_difference_scorer
from scorewatch.scorers.tone_consistency import create_tone_consistency_scorer, polarity
from scorewatch.scorers.utils import create_agent_test_run, create_test_message


async def run(scorer: Any, input: Any, output: Any, **extra: Any) -> Any:
    result = await scorer.run(input=input, output=output, **extra)
    assert result.judge is None
    return result


def agent_run(question: str, answer: str) -> dict[str, Any]:
    return create_agent_test_run(
        input_messages=[create_test_message(question, "user")],
        output=[create_test_message(answer, "assistant")],
    )


# -------------------------------------------------------------------------------- completeness


async def test_completeness_counts_stems_of_content_words() -> None:
    scorer = create_completeness_scorer()
    assert scorer.id == "completeness-scorer"
    assert (scorer.direction, scorer.scale) == ("higher_is_better", 1)
    assert key_elements("Explain how photosynthesis works in plants") == [
        "explain",
        "photosynthesi",
        "plant",
    ]
    result = await run(scorer, "Explain how photosynthesis works in plants", "Plants use it.")
    # plant covered; explain and photosynthesis missing -> 1/3
    assert result.score == 0.33
    assert result.preprocess_step_result["missing_elements"] == ["explain", "photosynthesi"]


async def test_completeness_full_coverage_across_shapes() -> None:
    scorer = create_completeness_scorer()
    question, answer = "Describe the café's opening hours", "The CAFE opening hours: described."
    openai_input = [{"role": "system", "content": "be nice"}, {"role": "user", "content": question}]
    openai_output = {"role": "assistant", "content": answer}
    for result in (
        await run(scorer, question, answer),
        await run(scorer, openai_input, openai_output),
        await scorer.run(**agent_run(question, answer)),
    ):
        assert result.score == 1.0, result.preprocess_step_result


@pytest.mark.parametrize(
    ("question", "answer", "expected"),
    [("", "", 1.0), ("", "Paris is lovely", 0.0), ("the of and", "", 1.0), ("Paris?", "", 0.0)],
)
async def test_completeness_empty_cases(question: str, answer: str, expected: float) -> None:
    assert (await run(create_completeness_scorer(), question, answer)).score == expected


def test_completeness_language_option() -> None:
    assert key_elements("Les chats mangent", "french") == ["chat", "mangent"]
    with pytest.raises(ValueError, match="klingon"):
        create_completeness_scorer(language="klingon")


# ---------------------------------------------------------------------------- keyword coverage


async def test_keyword_coverage_from_input() -> None:
    scorer = create_keyword_coverage_scorer()
    assert scorer.id == "keyword-coverage-scorer"
    assert extract_keywords("What is the capital of France in 2024?") == ["capital", "france"]
    result = await run(scorer, "What is the capital of France?", "Paris is the capital.")
    assert result.score == 0.5
    assert result.preprocess_step_result["matched_keywords"] == ["capital"]
    # Exact word forms only: "capitals" does not cover "capital".
    assert (await run(scorer, "capital city", "capitals city")).score == 0.5


async def test_keyword_coverage_fixed_keywords_and_phrases() -> None:
    scorer = create_keyword_coverage_scorer(keywords=["New York", "rain", "snow"])
    result = await run(scorer, "ignored", "It rains in new-york; RAIN again.")
    assert result.preprocess_step_result["matched_keywords"] == ["New York", "rain"]
    assert result.score == 0.67
    # Whole words only: "rainbow" is not "rain".
    assert (await run(scorer, "x", "A rainbow over York")).score == 0.0


@pytest.mark.parametrize(("question", "answer"), [("", ""), ("the and of", "anything at all")])
async def test_keyword_coverage_nothing_to_cover_is_full(question: str, answer: str) -> None:
    assert (await run(create_keyword_coverage_scorer(), question, answer)).score == 1.0
    assert (await run(create_keyword_coverage_scorer(keywords=[]), question, answer)).score == 1.0


# -------------------------------------------------------------------------- content similarity


async def test_content_similarity_uses_rapidfuzz_ratio() -> None:
    scorer = create_content_similarity_scorer()
    assert scorer.id == "content-similarity-scorer"
    assert scorer.direction == "higher_is_better"
    result = await run(scorer, "Hello   World", "hello world")
    assert result.score == 1.0
    expected = round(fuzz.ratio("the cat sat on the mat", "the cat lay on a mat") / 100, 2)
    result = await run(scorer, "The cat sat on the mat", "The cat lay on a mat")
    assert result.score == expected
    assert 0 < result.score < 1


async def test_content_similarity_prefers_ground_truth_and_honours_options() -> None:
    scorer = create_content_similarity_scorer()
    result = await run(scorer, "unrelated question", "Paris", ground_truth="Paris")
    assert result.score == 1.0
    assert result.preprocess_step_result["reference_source"] == "ground_truth"
    strict = create_content_similarity_scorer(ignore_case=False, ignore_whitespace=False)
    assert (await run(strict, "ABC", "abc")).score == 0.0
    assert (await run(strict, "a  b", "a b")).score < 1.0


@pytest.mark.parametrize(("a", "b", "expected"), [("", "", 1.0), ("", "text", 0.0)])
async def test_content_similarity_empty(a: str, b: str, expected: float) -> None:
    assert (await run(create_content_similarity_scorer(), a, b)).score == expected


# -------------------------------------------------------------------------- textual difference


async def test_textual_difference_is_sequence_matcher_ratio() -> None:
    scorer = create_textual_difference_scorer()
    assert scorer.id == "textual-difference-scorer"
    result = await run(scorer, "The cat sat", "The cat sat down")
    ratio = SequenceMatcher(None, "The cat sat", "The cat sat down").ratio()
    assert result.score == round(ratio, 2) == 0.81
    found = result.preprocess_step_result
    assert found["changes"] == 1
    assert found["length_diff"] == pytest.approx(5 / 16)
    assert found["confidence"] == pytest.approx(11 / 16)


async def test_textual_difference_cases() -> None:
    scorer = create_textual_difference_scorer()
    assert (await run(scorer, "", "")).score == 1.0
    assert (await run(scorer, "abc", "")).score == 0.0
    assert (await run(scorer, "x", "same", ground_truth="same")).score == 1.0
    assert (await run(scorer, "ABC", "abc")).score == 0.0
    assert (await run(create_textual_difference_scorer(ignore_case=True), "ABC", "abc")).score == 1


# ----------------------------------------------------------------------------- tone consistency


def test_polarity_uses_the_shipped_vader_lexicon() -> None:
    assert polarity("I love this, it is wonderful!") > 0.5
    assert polarity("This is terrible and awful.") < -0.5
    assert polarity("") == 0.0


async def test_tone_stability_mode() -> None:
    scorer = create_tone_consistency_scorer()
    assert scorer.id == "tone-scorer"
    assert scorer.direction == "higher_is_better"
    steady = await run(scorer, "q", "I love this. It is wonderful!")
    mixed = await run(scorer, "q", "I love this. This is terrible and awful.")
    assert steady.preprocess_step_result["mode"] == "stability"
    assert steady.score > 0.9
    sentiments = mixed.preprocess_step_result["sentence_sentiments"]
    assert len(sentiments) == 2 and sentiments[0] > 0 > sentiments[1]
    spread = abs(sentiments[0] - sentiments[1]) / 2  # population std of two values
    assert mixed.score == round(1 - spread, 2)
    single = await run(scorer, "q", "Fine")
    assert single.score == 1.0


async def test_tone_reference_modes() -> None:
    reference = create_tone_consistency_scorer(reference_tone="Great, thanks so much!")
    happy = await run(reference, "q", "Wonderful, I am glad!")
    sad = await run(reference, "q", "This is awful.")
    assert happy.score > sad.score
    found = sad.preprocess_step_result
    assert sad.score == round(
        1 - abs(found["response_sentiment"] - found["reference_sentiment"]) / 2, 2
    )
    mirror = create_tone_consistency_scorer(compare_with_input=True)
    result = await scorer_run_agent(mirror, "I am furious, this is terrible!", "I hate it too.")
    assert result.preprocess_step_result["mode"] == "reference"
    assert result.preprocess_step_result["reference_sentiment"] < 0
    with pytest.raises(ValueError, match="not both"):
        create_tone_consistency_scorer(reference_tone="x", compare_with_input=True)


async def scorer_run_agent(scorer: Any, question: str, answer: str) -> Any:
    return await scorer.run(**agent_run(question, answer))


async def test_tone_empty_output_scores_zero() -> None:
    result = await run(create_tone_consistency_scorer(), "q", "   ")
    assert result.score == 0.0
    assert result.preprocess_step_result["mode"] == "empty"

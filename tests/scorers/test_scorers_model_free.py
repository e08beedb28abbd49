"""Model-free scorers: completeness, keyword coverage, content similarity, textual difference,
tone. Hand-worked values of the reference's formulas, run shapes, empty cases and the options
scorewatch adds. The recorded reference outputs are checked in
tests/scorers/test_scorers_reference_model_free.py."""

from __future__ import annotations

import itertools
import re
import sys
from collections import Counter
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scorer_runs import (
    create_agent_test_run,
    create_test_message,
)
from scorewatch.scorers._text import JS_SPACES, js_collapse_spaces, js_drop_spaces, js_trim
from scorewatch.scorers.completeness import create_completeness_scorer, key_elements
from scorewatch.scorers.content_similarity import (
    _SLICE,
    _bigrams,
    _byte_pairs,
    compare_two_strings,
    create_content_similarity_scorer,
)
from scorewatch.scorers.keyword_coverage import (
    _TAG,
    create_keyword_coverage_scorer,
    extract_keywords,
)
from scorewatch.scorers.textual_difference import (
    count_changes,
    create_textual_difference_scorer,
    lcs_ratio,
)
from scorewatch.scorers.tone_consistency import (
    _SENTENCE,
    create_tone_consistency_scorer,
    sentiment,
)

pytestmark = pytest.mark.unit


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


async def test_completeness_covers_word_stems() -> None:
    scorer = create_completeness_scorer()
    assert (scorer.id, scorer.name) == ("completeness-scorer", "Completeness Scorer")
    assert (scorer.direction, scorer.scale) == ("higher_is_better", 1)
    # Every word counts (the reference keeps "how" and "in"), reduced to its stem.
    elements = ["explain", "how", "photosynthesi", "work", "in", "plant"]
    assert key_elements("Explain how photosynthesis works in plants") == elements
    result = await run(scorer, "Explain how photosynthesis works in plants", "Plants use it.")
    assert result.score == pytest.approx(1 / 6)
    found = result.preprocess_step_result
    assert found["missingElements"] == ["explain", "how", "photosynthesi", "work", "in"]
    assert found["elementCounts"] == {"input": 6, "output": 3}


async def test_completeness_same_score_across_shapes() -> None:
    scorer = create_completeness_scorer()
    question, answer = "Describe the café's opening hours", "The CAFE opening hours: described."
    openai_input = [{"role": "system", "content": "be nice"}, {"role": "user", "content": question}]
    openai_output = {"role": "assistant", "content": answer}
    for result in (
        await run(scorer, question, answer),
        await run(scorer, openai_input, openai_output),
        await scorer.run(**agent_run(question, answer)),
    ):
        # Accents are stripped and "café's" splits into "cafe" and "s"; "s" is not covered.
        assert result.preprocess_step_result["missingElements"] == ["s"]
        assert result.score == pytest.approx(5 / 6)


@pytest.mark.parametrize(
    ("question", "answer", "expected"),
    [("", "", 1), ("", "Paris is lovely", 0), ("the of and", "", 0), ("Привет мир", "", 1)],
)
async def test_completeness_empty_cases(question: str, answer: str, expected: float) -> None:
    # Only a-z and 0-9 survive the reference's cleaning: Cyrillic text has no elements.
    assert (await run(create_completeness_scorer(), question, answer)).score == expected


async def test_completeness_needs_input_and_output() -> None:
    from scorewatch.core import ScorerRunError

    with pytest.raises(ScorerRunError):
        await create_completeness_scorer().run(input=None, output="x")


# ---------------------------------------------------------------------------- keyword coverage


async def test_keyword_coverage_from_input() -> None:
    scorer = create_keyword_coverage_scorer()
    assert (scorer.id, scorer.name) == ("keyword-coverage-scorer", "Keyword Coverage Scorer")
    assert extract_keywords("What is the capital of France in 2024?") == ["capital", "france"]
    result = await run(scorer, "What is the capital of France?", "Paris is the capital.")
    assert result.score == 0.5
    assert result.preprocess_step_result == {
        "referenceKeywords": ["capital", "france"],
        "responseKeywords": ["paris", "capital"],
    }
    assert result.analyze_step_result == {"totalKeywordsLength": 2, "matchedKeywordsLength": 1}
    # Exact word forms only: "capitals" does not cover "capital".
    assert (await run(scorer, "capital city", "capitals city")).score == 0.5


def test_keyword_extraction_rules() -> None:
    # Accents kept, case lowered, HTML tags and edge quotes dropped, URLs kept whole.
    assert extract_keywords("Café CRÈME <b>brûlée</b>") == ["café", "crème", "brûlée"]
    assert extract_keywords("'quoted' see https://Example.com/A?b=1, #") == [
        "quoted",
        "https://Example.com/A?b=1,",
    ]
    assert extract_keywords("42 3.14 v2 2024!") == ["v2"]  # "3.14" loses its dot: digits only
    assert extract_keywords("") == []


async def test_keyword_coverage_accented_words_match_exactly() -> None:
    scorer = create_keyword_coverage_scorer()
    assert (await run(scorer, "Café crème", "café CRÈME")).score == 1
    assert (await run(scorer, "Café crème", "cafe creme")).score == 0


async def test_keyword_coverage_fixed_keywords_and_phrases() -> None:
    scorer = create_keyword_coverage_scorer(keywords=["New York", "rain", "snow"])
    result = await run(scorer, "ignored", "It rains in new-york; RAIN again.")
    assert result.preprocess_step_result["responseKeywords"] == ["new york", "rain"]
    assert result.score == pytest.approx(2 / 3)
    # Whole words only: "rainbow" is not "rain".
    assert (await run(scorer, "x", "A rainbow over York")).score == 0


@pytest.mark.parametrize(("question", "answer"), [("", ""), ("the and of", "anything at all")])
async def test_keyword_coverage_nothing_to_cover_is_full(question: str, answer: str) -> None:
    assert (await run(create_keyword_coverage_scorer(), question, answer)).score == 1
    assert (await run(create_keyword_coverage_scorer(keywords=[]), question, answer)).score == 1


async def test_keyword_coverage_empty_run_has_the_reference_shape() -> None:
    result = await run(create_keyword_coverage_scorer(), "", "")
    assert result.preprocess_step_result == {
        "result": {"referenceKeywords": [], "responseKeywords": []}
    }
    assert result.analyze_step_result == {"totalKeywordsLength": 0, "matchedKeywordsLength": 0}


# -------------------------------------------------------------------------- content similarity


def test_bigram_dice_coefficient() -> None:
    # night/nacht share one bigram ("ht") of 4 + 4.
    assert compare_two_strings("night", "nacht") == 0.25
    assert compare_two_strings("a b", "ab") == 1  # white space is ignored
    assert compare_two_strings("a", "b") == 0
    # Emoji are two UTF-16 units, as in the reference: their shared high surrogate counts.
    assert compare_two_strings("😀a", "😀b") == 0.5
    assert compare_two_strings("aa", "aaaa") == 0.5  # a repeated bigram counts once per match


@given(st.text(alphabet="aab b\t😀é", max_size=30), st.text(alphabet="aab b\t😀é", max_size=30))
def test_bigram_dice_coefficient_is_the_textbook_formula(first: str, second: str) -> None:
    """The shared bigrams summed in C loops are `Counter.__and__`'s intersection, exactly."""
    a = first.replace(" ", "").replace("\t", "").encode("utf-16-le")
    b = second.replace(" ", "").replace("\t", "").encode("utf-16-le")
    units = [
        [a[i : i + 2] for i in range(0, len(a), 2)],
        [b[i : i + 2] for i in range(0, len(b), 2)],
    ]
    pairs = [Counter(itertools.pairwise(u)) for u in units]
    if units[0] == units[1]:
        expected = 1.0
    elif min(len(u) for u in units) < 2:
        expected = 0.0
    else:
        shared = sum((pairs[0] & pairs[1]).values())
        expected = 2.0 * shared / (len(units[0]) + len(units[1]) - 2)
    assert compare_two_strings(first, second) == expected


@given(
    st.one_of(st.text(), st.text(alphabet="ab \t\u00a0\u2028😀é", max_size=40)),
    st.one_of(st.text(), st.text(alphabet="ab \t\u00a0\u2028😀é", max_size=40)),
)
def test_bigram_dice_coefficient_on_any_text(first: str, second: str) -> None:
    """Any text (astral characters, every kind of white space): the counts `_bigrams` makes
    are those of one `Counter` over the pairs, and the score is the textbook formula over
    the UTF-16 units of the texts without JavaScript white space."""
    a = JS_SPACES.sub("", first).encode("utf-16-le", "surrogatepass")
    b = JS_SPACES.sub("", second).encode("utf-16-le", "surrogatepass")
    units = [
        [a[i : i + 2] for i in range(0, len(a), 2)],
        [b[i : i + 2] for i in range(0, len(b), 2)],
    ]
    for text in (first, second, units[0]):
        assert _bigrams(text) == Counter(itertools.pairwise(text))
    if units[0] == units[1]:
        expected = 1.0
    elif min(len(u) for u in units) < 2:
        expected = 0.0
    else:
        pairs = [Counter(itertools.pairwise(u)) for u in units]
        expected = 2.0 * sum((pairs[0] & pairs[1]).values()) / (len(a) // 2 + len(b) // 2 - 2)
    assert compare_two_strings(first, second) == expected


@given(st.text(alphabet=st.characters(max_codepoint=127), min_size=2, max_size=60))
def test_ascii_bigrams_are_the_byte_pairs_as_integers(text: str) -> None:
    """An ASCII text's bigrams counted as integers: one per pair of characters, each the
    pair's two bytes read as a native 16-bit integer, every pair counted once."""
    expected = Counter(
        int.from_bytes(f"{x}{y}".encode(), sys.byteorder) for x, y in itertools.pairwise(text)
    )
    assert _bigrams(text.encode("ascii"), _byte_pairs) == expected


def test_ascii_bigram_counts_across_slices() -> None:
    text = "ab" * _SLICE + "c" + "ba" * 3
    expected = Counter(
        int.from_bytes(f"{x}{y}".encode(), sys.byteorder) for x, y in itertools.pairwise(text)
    )
    assert _bigrams(text.encode("ascii"), _byte_pairs) == expected
    # Odd-length slices too: each slice's even and odd pairs, no pair lost at a seam.
    odd = "abc" * _SLICE + "d"
    assert _bigrams(odd.encode("ascii"), _byte_pairs) == Counter(
        int.from_bytes(f"{x}{y}".encode(), sys.byteorder) for x, y in itertools.pairwise(odd)
    )
    assert compare_two_strings(text, text[1:]) == compare_two_strings(
        text.replace("a", "\u00e4"), text[1:].replace("a", "\u00e4")
    )


def test_bigram_counts_across_slices() -> None:
    """A text longer than one slice is counted a slice at a time, the slices overlapping by one
    unit: the counts are those of the whole text at once."""
    text = "ab" * _SLICE + "c" + "ba" * 3
    assert _bigrams(text) == Counter(itertools.pairwise(text))


async def test_content_similarity_options_and_input_comparison() -> None:
    scorer = create_content_similarity_scorer()
    assert (scorer.id, scorer.name) == ("content-similarity-scorer", "Content Similarity Scorer")
    result = await run(scorer, "Hello   World", "hello world")
    assert result.score == 1
    assert result.preprocess_step_result == {
        "processedInput": "hello world",
        "processedOutput": "hello world",
    }
    # A ground truth is not used: the reference compares input and output.
    result = await run(scorer, "night", "Nacht", ground_truth="Nacht")
    assert result.score == 0.25
    strict = create_content_similarity_scorer(ignore_case=False, ignore_whitespace=False)
    assert (await run(strict, "ABC", "abc")).score == 0
    assert (await run(strict, "a  b", "a b")).preprocess_step_result["processedInput"] == "a  b"


@pytest.mark.parametrize(("a", "b", "expected"), [("", "", 1), ("", "text", 0)])
async def test_content_similarity_empty(a: str, b: str, expected: float) -> None:
    assert (await run(create_content_similarity_scorer(), a, b)).score == expected


# -------------------------------------------------------------------------- textual difference


async def test_textual_difference_is_the_lcs_ratio() -> None:
    scorer = create_textual_difference_scorer()
    assert (scorer.id, scorer.name) == ("textual-difference-scorer", "Textual Difference Scorer")
    result = await run(scorer, "The cat sat", "The cat sat down")
    assert result.score == pytest.approx(2 * 11 / 27)
    assert result.preprocess_step_result == {
        "ratio": pytest.approx(22 / 27),
        "changes": 1,
        "lengthDiff": pytest.approx(5 / 16),
        "confidence": pytest.approx(11 / 16),
    }


def test_lcs_ratio_and_changes() -> None:
    # A true LCS ("ab"): difflib's block matching finds one character and gives 1/3.
    assert lcs_ratio("bab", "acb") == pytest.approx(2 / 3)
    assert lcs_ratio("abcd", "acbd") == 0.75
    assert lcs_ratio("", "") == 1
    assert lcs_ratio("abc", "") == 0
    assert lcs_ratio("😀", "😁") == 0.5  # one shared surrogate of two units each
    assert count_changes("a b", "a  b") == 1  # white space only
    assert count_changes("a b c", "a x c d") == 2
    assert count_changes("a a b", "b a") == 1


async def test_textual_difference_compares_input_not_ground_truth() -> None:
    scorer = create_textual_difference_scorer()
    assert (await run(scorer, "x", "same", ground_truth="same")).score == 0
    assert (await run(scorer, "ABC", "abc")).score == 0


# ------------------------------------------------------------------------------------- tone


def test_sentiment_is_afinn_comparative() -> None:
    assert sentiment("I love this") == (3, 1.0)
    assert sentiment("This is terrible and awful.") == (-6, -1.2)
    assert sentiment("😍") == (3, 3.0)  # emoji labels from the Emoji Sentiment Ranking


async def test_tone_stability_mode() -> None:
    scorer = create_tone_consistency_scorer()
    assert (scorer.id, scorer.name) == ("tone-scorer", "Tone Scorer")
    assert scorer.direction == "higher_is_better"
    # Sentences: "I love this." -> 3/3; " It is wonderful!" -> 4/3; variance 1/36.
    result = await run(scorer, "q", "I love this. It is wonderful!")
    assert result.score == pytest.approx(1 - 1 / 36)
    assert result.preprocess_step_result["avgSentiment"] == pytest.approx(7 / 6)
    # Text after the last sentence end is not read (the reference's split).
    assert (await run(scorer, "q", "Fine. Terrible awful horrible")).score == 1


async def test_tone_reference_modes() -> None:
    reference = create_tone_consistency_scorer(reference_tone="Great, thanks so much!")
    happy = await run(reference, "q", "Wonderful, I am glad!")
    sad = await run(reference, "q", "This is awful.")
    assert happy.score > sad.score
    found = sad.preprocess_step_result
    assert found["difference"] == pytest.approx(
        abs(sentiment("This is awful.")[1] - sentiment("Great, thanks so much!")[1])
    )
    assert sad.score == max(0, 1 - found["difference"])
    mirror = create_tone_consistency_scorer(compare_with_input=True)
    result = await mirror.run(**agent_run("I am furious, this is terrible!", "I hate it too."))
    assert result.preprocess_step_result["referenceSentiment"] < 0
    with pytest.raises(ValueError, match="not both"):
        create_tone_consistency_scorer(reference_tone="x", compare_with_input=True)


async def test_tone_empty_output_is_stable() -> None:
    for scorer in (
        create_tone_consistency_scorer(),
        create_tone_consistency_scorer(reference_tone=""),
    ):
        result = await run(scorer, "q", "   ")
        assert result.score == 1
        assert result.preprocess_step_result == {
            "score": 1,
            "avgSentiment": 0,
            "sentimentVariance": 0,
        }


# ------------------------------------------------------------------- linear-time rewrites


@given(st.text(alphabet="ab.!? \n<>", max_size=40))
def test_linear_rewrites_match_the_reference_patterns(text: str) -> None:
    """The look-behind sentence pattern and the tail-skipping tag removal (both there to keep
    hostile texts linear) find exactly what the reference's patterns find."""
    assert _SENTENCE.findall(text) == re.findall(r"[^.!?]+[.!?]+", text)
    end = text.rfind(">") + 1
    assert _TAG.sub("", text[:end]) + text[end:] == re.sub(r"(<([^>]+)>)", "", text)
    spaces = "\t\n\v\f\r \u00a0\u2028\ufeff\x1c\x85"
    padded = f"{text}{spaces}"
    assert js_trim(padded) == padded.strip(spaces.replace("\x1c", "").replace("\x85", ""))


# JavaScript's white space, Python's other white space (the separator controls \x1c-\x1f,
# \x85), letters, and non-ASCII ones: where `str.split` and the JS set differ.
_SPACED = st.text(
    alphabet=st.sampled_from(
        list(" \t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\x85\xa0\u2028\u3000\ufeffaZ.é😀")
    ),
    max_size=24,
)


@given(text=_SPACED)
def test_white_space_is_collapsed_and_dropped_as_javascript_does(text: str) -> None:
    assert js_collapse_spaces(text) == js_trim(JS_SPACES.sub(" ", text))
    assert js_drop_spaces(text) == JS_SPACES.sub("", text)


_SCORED_TEXT = st.one_of(
    st.text(max_size=30),
    _SPACED,
    st.text(alphabet="What is our refund policy? Sale", max_size=40),
)


@given(
    first=_SCORED_TEXT,
    second=_SCORED_TEXT,
    ignore_case=st.booleans(),
    ignore_whitespace=st.booleans(),
)
def test_content_similarity_scores_its_processed_texts(
    first: str, second: str, ignore_case: bool, ignore_whitespace: bool
) -> None:
    """The scorer drops the single spaces its collapsed texts hold by one `str.replace`, and
    compares ASCII texts without looking for astral characters: the score is still
    `compare_two_strings` of the processed texts (JavaScript white space dropped, UTF-16
    units), and the processed texts the reference's normalisation."""
    scorer = create_content_similarity_scorer(
        ignore_case=ignore_case, ignore_whitespace=ignore_whitespace
    )
    result = scorer.run_sync(input=first, output=second)
    processed = []
    for text in (first, second):
        if ignore_case:
            text = text.lower()
        if ignore_whitespace:
            text = js_trim(JS_SPACES.sub(" ", text))
        processed.append(text)
    assert result.preprocess_step_result == {
        "processedInput": processed[0],
        "processedOutput": processed[1],
    }
    a, b = (JS_SPACES.sub("", text).encode("utf-16-le", "surrogatepass") for text in processed)
    units = [
        [a[i : i + 2] for i in range(0, len(a), 2)],
        [b[i : i + 2] for i in range(0, len(b), 2)],
    ]
    if units[0] == units[1]:
        expected: float = 1.0
    elif min(len(u) for u in units) < 2:
        expected = 0.0
    else:
        pairs = [Counter(itertools.pairwise(u)) for u in units]
        expected = 2.0 * sum((pairs[0] & pairs[1]).values()) / (len(units[0]) + len(units[1]) - 2)
    assert result.score == expected
    assert type(result.score) is (int if expected.is_integer() else float)

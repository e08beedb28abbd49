"""The shipped demo dataset: shape, annotation consistency, and the loader's validation."""

from __future__ import annotations

import copy
import json
import re
import statistics
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from scorewatch.demo.dataset import (
    ClaimAnnotation,
    DemoDataset,
    DemoDatasetError,
    DocumentKind,
    SummaryQuality,
    expected_summary_score,
    load_demo_dataset,
    parse_demo_dataset,
)

pytestmark = pytest.mark.unit


@pytest.fixture()
def raw_data() -> dict[str, Any]:
    text = resources.files("scorewatch.demo").joinpath("data/documents.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def _write(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "documents.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_has_at_least_thirty_documents_with_all_four_qualities(dataset: DemoDataset) -> None:
    assert len(dataset) >= 30
    assert len(list(dataset)) == len(dataset)
    for document in dataset:
        assert sorted(summary.quality for summary in document.summaries) == sorted(SummaryQuality)


def test_every_kind_of_document_is_represented(dataset: DemoDataset) -> None:
    counts = {kind: sum(1 for doc in dataset if doc.kind is kind) for kind in DocumentKind}
    assert all(count >= 8 for count in counts.values()), counts


def test_documents_have_the_promised_size_and_question_count(dataset: DemoDataset) -> None:
    for document in dataset:
        assert 120 <= document.word_count <= 400, document.id
        assert 5 <= len(document.questions) <= 8, document.id
        assert all(question.endswith("?") for question in document.questions), document.id


def test_ids_texts_and_questions_are_unique(dataset: DemoDataset) -> None:
    ids = [document.id for document in dataset]
    assert len(ids) == len(set(ids))
    summary_texts = [summary.text for _, summary in dataset.summaries()]
    assert len(summary_texts) == len(set(summary_texts))
    for document in dataset:
        assert len(document.questions) == len(set(document.questions)), document.id


def test_annotations_are_consistent_with_expected_scores(dataset: DemoDataset) -> None:
    for document, summary in dataset.summaries():
        assert len(summary.answered) == len(document.questions)
        assert summary.claims, (document.id, summary.quality)
        recomputed = expected_summary_score(
            summary.claims, summary.answered, len(document.questions)
        )
        assert summary.expected_score == recomputed, (document.id, summary.quality)
        assert summary.expected_score == _round_half_up(min(summary.alignment, summary.coverage))


def test_quality_labels_match_their_annotations(dataset: DemoDataset) -> None:
    for document, summary in dataset.summaries():
        where = (document.id, summary.quality.value)
        if summary.quality is SummaryQuality.HALLUCINATED:
            assert summary.unsupported_claims, where
        else:
            assert not summary.unsupported_claims, where
        if summary.quality is SummaryQuality.FAITHFUL:
            assert summary.coverage >= 0.85, where
        if summary.quality is SummaryQuality.INCOMPLETE:
            assert summary.coverage <= 0.6, where


def test_verbatim_summaries_copy_whole_sentences_of_their_source(dataset: DemoDataset) -> None:
    for document, summary in dataset.summaries(SummaryQuality.VERBATIM):
        sentences = re.split(r"(?<=[.!?])\s+", summary.text)
        assert len(sentences) >= 2, document.id
        for sentence in sentences:
            assert sentence in document.text, (document.id, sentence)


def test_mean_scores_are_ordered_by_quality(dataset: DemoDataset) -> None:
    means = {
        quality: statistics.mean(
            summary.expected_score for _, summary in dataset.summaries(quality)
        )
        for quality in SummaryQuality
    }
    assert means[SummaryQuality.FAITHFUL] >= 0.9
    assert means[SummaryQuality.FAITHFUL] > means[SummaryQuality.VERBATIM]
    assert means[SummaryQuality.FAITHFUL] > means[SummaryQuality.INCOMPLETE] + 0.3
    assert means[SummaryQuality.FAITHFUL] > means[SummaryQuality.HALLUCINATED] + 0.3
    for _, summary in dataset.summaries(SummaryQuality.FAITHFUL):
        assert 0.85 <= summary.expected_score <= 1
    for quality in (SummaryQuality.HALLUCINATED, SummaryQuality.INCOMPLETE):
        for _, summary in dataset.summaries(quality):
            assert 0.25 <= summary.expected_score <= 0.7, (quality, summary.expected_score)


def test_verbatim_summaries_are_aligned_but_partial(dataset: DemoDataset) -> None:
    verbatim = [summary for _, summary in dataset.summaries(SummaryQuality.VERBATIM)]
    assert all(summary.alignment == 1 for summary in verbatim)
    assert sum(1 for summary in verbatim if summary.coverage < 1) >= len(verbatim) // 2


def test_find_summary_returns_the_owning_document(dataset: DemoDataset) -> None:
    for document, summary in dataset.summaries():
        found = dataset.find_summary(summary.text)
        assert found is not None
        assert found[0] is document
        assert found[1] is summary
    document, summary = next(dataset.summaries(SummaryQuality.FAITHFUL))
    reflowed = "\n  ".join(summary.text.split(" "))
    assert dataset.find_summary(reflowed) == (document, summary)
    assert dataset.find_summary("A summary nobody wrote.") is None


def test_find_document_by_source_text(dataset: DemoDataset) -> None:
    for document in dataset:
        assert dataset.find_document(document.text) is document
        assert dataset.find_document(f"\n{document.text}  \n") is document
        assert dataset.document(document.id) is document
    assert dataset.find_document("Some other text.") is None
    with pytest.raises(KeyError):
        dataset.document("no-such-document")


def test_document_helpers(dataset: DemoDataset) -> None:
    document = dataset.documents[0]
    incomplete = document.summary("incomplete")
    assert incomplete.quality is SummaryQuality.INCOMPLETE
    missing = document.unanswered_questions(incomplete)
    assert len(missing) == len(document.questions) - incomplete.answered_count
    assert set(missing) <= set(document.questions)


def test_shipped_file_is_loaded_from_the_installed_package(dataset: DemoDataset) -> None:
    resource = resources.files("scorewatch.demo").joinpath("data/documents.json")
    assert resource.is_file()
    assert load_demo_dataset() is dataset  # cached: the dataset is immutable
    from_path = load_demo_dataset(str(resource))
    assert [doc.id for doc in from_path] == [doc.id for doc in dataset]


def test_expected_score_formula_edge_cases() -> None:
    supported = ClaimAnnotation(claim="a", supported=True, reason="stated")
    unsupported = ClaimAnnotation(claim="b", supported=False, reason="absent")
    assert expected_summary_score([], [True, True], 2) == 0
    assert expected_summary_score([supported], [], 0) == 0
    # The summarization worked example: 2 of 3 claims, 3 of 5 questions.
    claims = [supported, supported, unsupported]
    assert expected_summary_score(claims, [True, True, True, False, False], 5) == 0.6
    # 0.125 and 0.625 would round down under Python's banker's rounding; the scorer rounds up.
    assert expected_summary_score([supported], [True] + [False] * 7, 8) == 0.13
    assert expected_summary_score([supported], [True] * 5 + [False] * 3, 8) == 0.63


def test_loader_rejects_wrong_answered_length(tmp_path: Path, raw_data: dict[str, Any]) -> None:
    broken = copy.deepcopy(raw_data)
    document = broken["documents"][2]
    summary = document["summaries"][1]
    summary["answered"] = summary["answered"][:-1]
    with pytest.raises(DemoDatasetError) as caught:
        load_demo_dataset(_write(tmp_path, broken))
    message = str(caught.value)
    assert document["id"] in message
    assert summary["quality"] in message
    assert "answered" in message
    assert caught.value.code == "DEMO_DATASET_INVALID"
    assert caught.value.details == {"document": document["id"], "summary": summary["quality"]}


def test_loader_rejects_a_score_that_disagrees(tmp_path: Path, raw_data: dict[str, Any]) -> None:
    broken = copy.deepcopy(raw_data)
    document = broken["documents"][-1]
    summary = document["summaries"][0]
    summary["expected_score"] = round(summary["expected_score"] - 0.1, 2)
    with pytest.raises(DemoDatasetError, match="expected_score") as caught:
        load_demo_dataset(_write(tmp_path, broken))
    assert document["id"] in str(caught.value)
    assert summary["quality"] in str(caught.value)


def test_loader_rejects_missing_quality_and_duplicate_ids(raw_data: dict[str, Any]) -> None:
    missing = copy.deepcopy(raw_data)
    missing["documents"][0]["summaries"].pop()
    with pytest.raises(DemoDatasetError, match="lacks summaries of quality verbatim"):
        parse_demo_dataset(json.dumps(missing))

    duplicated = copy.deepcopy(raw_data)
    twin = copy.deepcopy(duplicated["documents"][0])
    twin["text"] += " A different ending."
    duplicated["documents"].append(twin)
    with pytest.raises(DemoDatasetError, match="appears twice"):
        parse_demo_dataset(json.dumps(duplicated))


def test_loader_rejects_schema_errors(raw_data: dict[str, Any]) -> None:
    few_questions = copy.deepcopy(raw_data)
    few_questions["documents"][0]["questions"] = few_questions["documents"][0]["questions"][:4]
    with pytest.raises(DemoDatasetError, match="schema"):
        parse_demo_dataset(json.dumps(few_questions))
    with pytest.raises(DemoDatasetError, match="not valid JSON"):
        parse_demo_dataset("{not json")


def _round_half_up(value: float) -> float:
    return float(f"{int(value * 100 + 0.5 + 1e-9) / 100:.2f}")

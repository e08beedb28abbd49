"""The demo dataset: source documents with candidate summaries of known quality.

Each document carries closed yes/no questions its text answers "yes"; each of its four summaries
carries the judge-style annotations the summarization scorer would produce for it: the summary's
atomic claims judged against the source, and for every question whether the summary alone answers
it. `expected_score` is what the summarization scorer must return for that summary when a judge
agrees with the annotations, so the loader refuses a file whose scores disagree with them.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterable, Iterator, Sequence
from enum import StrEnum
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from scorewatch.errors import ScorewatchError

__all__ = [
    "ClaimAnnotation",
    "DemoDataset",
    "DemoDatasetError",
    "DemoDocument",
    "DemoSummary",
    "DocumentKind",
    "SummaryQuality",
    "expected_summary_score",
    "load_demo_dataset",
    "parse_demo_dataset",
]

_DATA_PACKAGE = "scorewatch.demo"
_DATA_FILE = "data/documents.json"
# Two floats computed by different code paths may differ in the last bits; scores are 2-decimal.
_SCORE_TOLERANCE = 1e-9

MIN_QUESTIONS = 5
MAX_QUESTIONS = 8

NonEmptyText = Annotated[str, StringConstraints(strip_whitespace=False, min_length=1)]
DocumentId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]*$")]


class DocumentKind(StrEnum):
    NEWS = "news"
    SUPPORT_TICKET = "support_ticket"
    MEETING_NOTES = "meeting_notes"


class SummaryQuality(StrEnum):
    FAITHFUL = "faithful"
    """Every claim holds and the key points are all there."""
    HALLUCINATED = "hallucinated"
    """Some claims are invented or contradict the source."""
    INCOMPLETE = "incomplete"
    """Every claim holds but key points are missing."""
    VERBATIM = "verbatim"
    """Sentences copied from the source: aligned by construction, covering only what was copied."""


class DemoDatasetError(ScorewatchError):
    """The shipped (or given) demo dataset is malformed or its annotations disagree."""

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(
            message,
            code="DEMO_DATASET_INVALID",
            domain="DEMO",
            category="SYSTEM",
            details=details,
        )


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ClaimAnnotation(_Frozen):
    """One atomic claim of a summary, judged against the source."""

    claim: NonEmptyText
    supported: bool
    reason: NonEmptyText


class DemoSummary(_Frozen):
    """A candidate summary of one document, with its annotations."""

    quality: SummaryQuality
    text: NonEmptyText
    claims: tuple[ClaimAnnotation, ...]
    answered: tuple[bool, ...]
    """One entry per question of the document, in the document's order."""
    expected_score: float = Field(ge=0, le=1)

    @property
    def supported_claim_count(self) -> int:
        return sum(1 for verdict in self.claims if verdict.supported)

    @property
    def answered_count(self) -> int:
        return sum(1 for flag in self.answered if flag)

    @property
    def unsupported_claims(self) -> tuple[str, ...]:
        return tuple(verdict.claim for verdict in self.claims if not verdict.supported)

    @property
    def alignment(self) -> float:
        """Share of claims the source supports (0 when the summary makes no claim)."""
        return _ratio(self.supported_claim_count, len(self.claims))

    @property
    def coverage(self) -> float:
        """Share of the document's questions the summary alone answers."""
        return _ratio(self.answered_count, len(self.answered))


class DemoDocument(_Frozen):
    """A source document, the questions it answers "yes", and its candidate summaries."""

    id: DocumentId
    kind: DocumentKind
    title: NonEmptyText
    text: NonEmptyText
    questions: tuple[NonEmptyText, ...] = Field(min_length=MIN_QUESTIONS, max_length=MAX_QUESTIONS)
    """Most important first, as the summarization judge is asked to order them."""
    summaries: tuple[DemoSummary, ...]

    def summary(self, quality: SummaryQuality | str) -> DemoSummary:
        wanted = SummaryQuality(quality)
        for candidate in self.summaries:
            if candidate.quality is wanted:
                return candidate
        raise KeyError(f"document {self.id!r} has no {wanted.value} summary")

    def unanswered_questions(self, summary: DemoSummary) -> tuple[str, ...]:
        return tuple(
            question
            for question, answered in zip(self.questions, summary.answered, strict=True)
            if not answered
        )

    @property
    def word_count(self) -> int:
        return len(self.text.split())


def expected_summary_score(
    claims: Sequence[ClaimAnnotation], answered: Sequence[bool], question_count: int
) -> float:
    """min(alignment, coverage) rounded half-up to two decimals; 0 when either axis is empty."""
    if not claims or question_count == 0:
        return 0.0
    alignment = _ratio(sum(1 for verdict in claims if verdict.supported), len(claims))
    coverage = _ratio(sum(1 for flag in answered if flag), question_count)
    return _round_half_up(min(alignment, coverage))


class DemoDataset:
    """The validated, immutable collection of demo documents."""

    def __init__(self, documents: Iterable[DemoDocument]) -> None:
        self._documents = tuple(documents)
        self._by_id: dict[str, DemoDocument] = {}
        self._by_source: dict[str, DemoDocument] = {}
        self._by_summary: dict[str, tuple[DemoDocument, DemoSummary]] = {}
        for document in self._documents:
            _check_document(document)
            self._index(document)

    def _index(self, document: DemoDocument) -> None:
        if document.id in self._by_id:
            raise DemoDatasetError(
                f"demo dataset: document id {document.id!r} appears twice",
                details={"document": document.id},
            )
        self._by_id[document.id] = document
        source_key = _lookup_key(document.text)
        if source_key in self._by_source:
            raise DemoDatasetError(
                f"demo dataset: document {document.id!r} has the same text as document "
                f"{self._by_source[source_key].id!r}",
                details={"document": document.id},
            )
        self._by_source[source_key] = document
        for summary in document.summaries:
            summary_key = _lookup_key(summary.text)
            if summary_key in self._by_summary:
                other_document, other_summary = self._by_summary[summary_key]
                raise DemoDatasetError(
                    f"demo dataset: document {document.id!r}, summary {summary.quality.value!r} "
                    f"has the same text as document {other_document.id!r}, summary "
                    f"{other_summary.quality.value!r}",
                    details={"document": document.id, "summary": summary.quality.value},
                )
            self._by_summary[summary_key] = (document, summary)

    @property
    def documents(self) -> tuple[DemoDocument, ...]:
        return self._documents

    def __len__(self) -> int:
        return len(self._documents)

    def __iter__(self) -> Iterator[DemoDocument]:
        return iter(self._documents)

    def document(self, document_id: str) -> DemoDocument:
        try:
            return self._by_id[document_id]
        except KeyError:
            raise KeyError(f"no demo document with id {document_id!r}") from None

    def find_summary(self, summary_text: str) -> tuple[DemoDocument, DemoSummary] | None:
        """The document and summary whose text this is (whitespace runs are not significant)."""
        return self._by_summary.get(_lookup_key(summary_text))

    def find_document(self, source_text: str) -> DemoDocument | None:
        """The document whose source text this is (whitespace runs are not significant)."""
        return self._by_source.get(_lookup_key(source_text))

    def summaries(
        self, quality: SummaryQuality | str | None = None
    ) -> Iterator[tuple[DemoDocument, DemoSummary]]:
        """Every (document, summary) pair, optionally only those of one quality."""
        wanted = None if quality is None else SummaryQuality(quality)
        for document in self._documents:
            for summary in document.summaries:
                if wanted is None or summary.quality is wanted:
                    yield document, summary


class _DatasetFile(_Frozen):
    version: int = Field(ge=1)
    documents: tuple[DemoDocument, ...]


def parse_demo_dataset(raw: str | bytes, *, origin: str = "<demo dataset>") -> DemoDataset:
    """Parse and validate a demo dataset from its JSON text."""
    try:
        parsed = _DatasetFile.model_validate(json.loads(raw))
    except json.JSONDecodeError as error:
        raise DemoDatasetError(
            f"{origin}: not valid JSON: {error}", details={"origin": origin}
        ) from error
    except ValidationError as error:
        raise DemoDatasetError(
            f"{origin}: does not match the demo dataset schema:\n{error}",
            details={"origin": origin, "error_count": error.error_count()},
        ) from error
    return DemoDataset(parsed.documents)


def load_demo_dataset(path: str | Path | None = None) -> DemoDataset:
    """Load the dataset shipped in the package, or the one at `path`."""
    if path is None:
        return _load_shipped_dataset()
    file_path = Path(path)
    return parse_demo_dataset(file_path.read_bytes(), origin=str(file_path))


@cache
def _load_shipped_dataset() -> DemoDataset:
    # The dataset is immutable (frozen models, tuples), so one shared instance is safe.
    data = resources.files(_DATA_PACKAGE).joinpath(_DATA_FILE)
    return parse_demo_dataset(data.read_bytes(), origin=f"{_DATA_PACKAGE}/{_DATA_FILE}")


def _check_document(document: DemoDocument) -> None:
    seen: set[SummaryQuality] = set()
    for summary in document.summaries:
        where = f"demo dataset: document {document.id!r}, summary {summary.quality.value!r}"
        details = {"document": document.id, "summary": summary.quality.value}
        if summary.quality in seen:
            raise DemoDatasetError(f"{where} appears twice", details=details)
        seen.add(summary.quality)
        if len(summary.answered) != len(document.questions):
            raise DemoDatasetError(
                f"{where}: 'answered' has {len(summary.answered)} entries but the document has "
                f"{len(document.questions)} questions",
                details=details,
            )
        expected = expected_summary_score(summary.claims, summary.answered, len(document.questions))
        if abs(expected - summary.expected_score) > _SCORE_TOLERANCE:
            raise DemoDatasetError(
                f"{where}: expected_score is {summary.expected_score} but the annotations give "
                f"{expected} (min of {summary.supported_claim_count}/{len(summary.claims)} "
                f"supported claims and {summary.answered_count}/{len(document.questions)} "
                "answered questions, rounded half-up to two decimals)",
                details=details,
            )
    missing = [quality.value for quality in SummaryQuality if quality not in seen]
    if missing:
        raise DemoDatasetError(
            f"demo dataset: document {document.id!r} lacks summaries of quality "
            f"{', '.join(missing)}",
            details={"document": document.id, "missing": missing},
        )


def _ratio(part: int, whole: int) -> float:
    return 0.0 if whole == 0 else min(1.0, part / whole)


def _round_half_up(value: float) -> float:
    # Python's round() is banker's rounding; the scorer rounds half up like JavaScript.
    return math.floor((value + sys.float_info.epsilon) * 100 + 0.5) / 100


def _lookup_key(text: str) -> str:
    return " ".join(text.split())

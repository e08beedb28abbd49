"""A simulated judge: a loopback OpenAI-compatible server that answers the summarization scorer's
three prompts with the demo dataset's annotations.

It lets the demo (and the docs' examples) run the real pipeline — litellm over HTTP, judge
records, token usage, latency, estimated cost — without an API key or a network. The judge
recognizes each prompt by the fixed phrase the scorer puts in it (`Part 1 (alignment)`,
`Decide whether each question can be answered`, `Explain the summarization score`), finds the
source and summary in the dataset, and answers:

- preprocess: the summary's annotated claims and the document's questions;
- analyze: one verdict per asked question, from the summary's `answered` annotations, with a
  short reason;
- generate reason: a sentence naming the axis that decided the score.

So the scorer's result for a dataset summary is the summary's `expected_score`. A text that is
not in the dataset gets a crude lexical verdict instead (claims supported when their words are in
the source; questions drawn from the source's sentences), so any input still gets an answer.

Usage is proportional to what was sent and answered (about 4 characters per token), latency is
jittered between `latency_s` bounds (longer answers take longer), and the simulated model has a
price registered in litellm's table (`register_simulated_model`), so cost estimates are not zero.
"""

from __future__ import annotations

import json
import math
import random
import re
import threading
from collections.abc import Mapping
from typing import Any, Final

from ..judge.prices import import_litellm
from ..testing.judge_server import Behaviour, HttpError, LoopbackJudgeServer, Reply
from .dataset import DemoDataset, DemoDocument, DemoSummary, load_demo_dataset

__all__ = [
    "SIMULATED_INPUT_COST_PER_TOKEN",
    "SIMULATED_MODEL",
    "SIMULATED_MODEL_ID",
    "SIMULATED_OUTPUT_COST_PER_TOKEN",
    "SimulatedJudge",
    "SimulatedVerdicts",
    "UnrecognizedPrompt",
    "estimate_tokens",
    "register_simulated_model",
]

SIMULATED_MODEL: Final = "scorewatch-simulated-judge"
SIMULATED_MODEL_ID: Final = f"openai/{SIMULATED_MODEL}"
# Priced like a small hosted model (USD per token), so the demo's cost figures are plausible.
SIMULATED_INPUT_COST_PER_TOKEN: Final = 0.15e-6
SIMULATED_OUTPUT_COST_PER_TOKEN: Final = 0.60e-6
_CHARS_PER_TOKEN: Final = 4.0
# A long answer takes longer to generate; beyond this many tokens the latency stops growing.
_SLOW_ANSWER_TOKENS: Final = 400

_ALIGNMENT_MARKER: Final = "Part 1 (alignment)"
_COVERAGE_MARKER: Final = "Decide whether each question can be answered"
_REASON_MARKER: Final = "Explain the summarization score"

_WORD = re.compile(r"[a-z0-9][a-z0-9'\-.,]*[a-z0-9]|[a-z0-9]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'])")
# Words too common to say anything about support or coverage.
_FILLER: Final = frozenset(
    [
        "a", "an", "the", "and", "or", "but", "of", "to", "in", "on", "at", "for", "by", "with",
        "from", "as", "is", "are", "was", "were", "be", "been", "will", "would", "it", "its",
        "this", "that", "these", "those", "there", "their", "they", "he", "she", "his", "her",
        "we", "our", "you", "your", "i", "not", "no", "does", "did", "do", "has", "have", "had",
        "can", "could", "should", "may", "might", "than", "then", "so", "if", "into", "about",
        "over", "also", "which", "who", "whom", "what", "when", "where", "why", "how", "all",
        "any", "each", "some", "such", "only", "very", "more", "most",
    ]
)  # fmt: skip


def estimate_tokens(text: str) -> int:
    """About one token per four characters (the usual rule of thumb for English), at least 1."""
    return max(1, math.ceil(len(text) / _CHARS_PER_TOKEN))


def register_simulated_model() -> None:
    """Give the simulated model a price (and a context window) in litellm's model table."""
    import_litellm().register_model(
        {
            SIMULATED_MODEL_ID: {
                "input_cost_per_token": SIMULATED_INPUT_COST_PER_TOKEN,
                "output_cost_per_token": SIMULATED_OUTPUT_COST_PER_TOKEN,
                "cache_read_input_token_cost": 0.0,
                "cache_creation_input_token_cost": 0.0,
                "litellm_provider": "openai",
                "mode": "chat",
                "max_input_tokens": 128_000,
                "max_output_tokens": 16_384,
            }
        }
    )


class UnrecognizedPrompt(ValueError):
    """The request is not one of the summarization scorer's three prompts."""


# --------------------------------------------------------------------------------------------
# verdicts: request JSON -> answer text


class SimulatedVerdicts:
    """Turns a chat-completion request body into the answer a careful judge would give."""

    def __init__(self, dataset: DemoDataset | None = None) -> None:
        self.dataset = dataset if dataset is not None else load_demo_dataset()

    def answer(self, body: Mapping[str, Any]) -> str:
        """The answer text for one request; `UnrecognizedPrompt` for any other prompt."""
        prompt = _last_user_text(body)
        if _ALIGNMENT_MARKER in prompt:
            return _to_json(self._source_judgement(prompt))
        if _COVERAGE_MARKER in prompt:
            return _to_json(self._coverage(prompt))
        if _REASON_MARKER in prompt:
            return _explain(prompt)
        raise UnrecognizedPrompt(
            "the simulated judge answers only the summarization scorer's prompts"
        )

    # -- preprocess --------------------------------------------------------------------------

    def _source_judgement(self, prompt: str) -> dict[str, Any]:
        source = _between(prompt, "Source Text:\n", "\n\nSummary:\n")
        summary = _between(prompt, "\n\nSummary:\n", "\n\nJSON:")
        limit_match = re.search(r"at most (\d+) closed questions", prompt)
        limit = int(limit_match.group(1)) if limit_match else 10
        known = self._known(summary)
        document = known[0] if known else self.dataset.find_document(source)
        if known is not None and _same_text(known[0].text, source):
            alignment = [
                {"claim": verdict.claim, "supported": verdict.supported, "reason": verdict.reason}
                for verdict in known[1].claims
            ]
        else:
            alignment = _lexical_alignment(summary, source)
        if document is not None and _same_text(document.text, source):
            questions = list(document.questions[:limit])
        else:
            questions = _lexical_questions(source, limit)
        return {"alignment": alignment, "questions": questions}

    # -- analyze -----------------------------------------------------------------------------

    def _coverage(self, prompt: str) -> dict[str, Any]:
        summary = _between(prompt, "Summary:\n", "\n\nNumber of questions:")
        listed = _between(prompt, "\nQuestions:\n", "\n\nFormat:")
        questions = [
            match.group(1).strip() for match in re.finditer(r"^\[\d+\] (.*)$", listed, re.M)
        ]
        known = self._known(summary)
        verdicts = []
        for question in questions:
            answered = _annotated_answer(known, question)
            if answered is None:
                answered = _mostly_contained(question, summary, 0.6)
            verdicts.append(
                {
                    "question": question,
                    "answered": answered,
                    "reason": _coverage_reason(question, answered),
                }
            )
        return {"coverage": verdicts}

    def _known(self, summary: str) -> tuple[DemoDocument, DemoSummary] | None:
        return self.dataset.find_summary(summary) if summary.strip() else None


def _annotated_answer(known: tuple[DemoDocument, DemoSummary] | None, question: str) -> bool | None:
    if known is None:
        return None
    document, summary = known
    wanted = _normalize(question)
    for asked, answered in zip(document.questions, summary.answered, strict=True):
        if _normalize(asked) == wanted:
            return answered
    return None


_ANSWERED_REASONS: Final = (
    "The summary states this.",
    "Stated in the summary.",
    "The summary gives this directly.",
)
_UNANSWERED_REASONS: Final = (
    "The summary does not mention this.",
    "Not stated in the summary.",
    "The summary leaves this out.",
)


def _coverage_reason(question: str, answered: bool) -> str:
    choices = _ANSWERED_REASONS if answered else _UNANSWERED_REASONS
    # Stable per question, so the same request always gets the same answer.
    return choices[sum(map(ord, question)) % len(choices)]


# -- generate reason ---------------------------------------------------------------------------


def _explain(prompt: str) -> str:
    score = _field(prompt, r"^Score: (\S+) out of")
    alignment = _number(_field(prompt, r"^Alignment score: (\S+)"))
    coverage = _number(_field(prompt, r"^Coverage score: (\S+)"))
    unsupported = _bullets(prompt, "Unsupported claims:\n")
    missing = _bullets(prompt, "Unanswered questions:\n")
    if "made no claims" in prompt:
        return f"The score is {score} because the summary makes no claims that could be checked."
    if "gave no questions" in prompt:
        return f"The score is {score} because the source gave no questions to check coverage."
    if not unsupported and not missing:
        return (
            f"The score is {score} because every claim is supported by the source and the "
            "summary answers every question."
        )
    alignment_part = (
        f"{_count(len(unsupported), 'claim')} not supported by the source "
        f'(e.g. "{_trim(unsupported[0])}")'
        if unsupported
        else ""
    )
    coverage_part = (
        f'{_count(len(missing), "key question")} left unanswered (e.g. "{_trim(missing[0])}")'
        if missing
        else ""
    )
    if alignment is not None and coverage is not None and alignment < coverage:
        return f"The score is {score} because alignment decided it: {alignment_part}."
    if alignment is not None and coverage is not None and coverage < alignment:
        return f"The score is {score} because coverage decided it: {coverage_part}."
    both = " and ".join(part for part in (alignment_part, coverage_part) if part)
    return f"The score is {score} because both axes are equally low: {both}."


def _field(prompt: str, pattern: str) -> str:
    match = re.search(pattern, prompt, re.M)
    return match.group(1) if match else "0"


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _bullets(prompt: str, heading: str) -> list[str]:
    start = prompt.find(heading)
    if start < 0:
        return []
    items: list[str] = []
    for line in prompt[start + len(heading) :].splitlines():
        if not line.startswith("- "):
            break
        items.append(line[2:])
    return [] if items == ["none"] else items


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


def _trim(text: str, limit: int = 90) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# -- texts not in the dataset: a lexical stand-in ----------------------------------------------


def _content_words(text: str) -> list[str]:
    return [word for word in _WORD.findall(text.lower()) if word not in _FILLER]


def _mostly_contained(text: str, evidence: str, share: float) -> bool:
    words = _content_words(text)
    if not words:
        return False
    present = set(_content_words(evidence))
    return sum(1 for word in words if word in present) / len(words) >= share


def _sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE_END.split(text.strip()) if part.strip()]


def _lexical_alignment(summary: str, source: str) -> list[dict[str, Any]]:
    verdicts = []
    for sentence in _sentences(summary):
        supported = _mostly_contained(sentence, source, 0.8)
        reason = "The source states this." if supported else "The source does not say this."
        verdicts.append({"claim": sentence, "supported": supported, "reason": reason})
    return verdicts


def _lexical_questions(source: str, limit: int) -> list[str]:
    return [
        f'Does the source state that "{sentence.rstrip(".!?")}"?'
        for sentence in _sentences(source)[:limit]
    ]


# -- request parsing ----------------------------------------------------------------------------


def _last_user_text(body: Mapping[str, Any]) -> str:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return ""
    for message in reversed(messages):
        if isinstance(message, Mapping) and message.get("role") == "user":
            return _content_text(message.get("content"))
    return ""


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return ""


def _all_text(body: Mapping[str, Any]) -> str:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return ""
    return "\n".join(
        _content_text(message.get("content"))
        for message in messages
        if isinstance(message, Mapping)
    )


def _between(text: str, start: str, end: str) -> str:
    begin = text.find(start)
    if begin < 0:
        return ""
    begin += len(start)
    finish = text.find(end, begin)
    return text[begin:] if finish < 0 else text[begin:finish]


def _normalize(text: str) -> str:
    return " ".join(text.split()).casefold()


def _same_text(left: str, right: str) -> bool:
    return " ".join(left.split()) == " ".join(right.split())


def _to_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


# --------------------------------------------------------------------------------------------
# the server


class SimulatedJudge:
    """The simulated judge on a loopback port, ready for litellm.

    ```python
    with SimulatedJudge() as judge:
        scorer = create_summarization_scorer(judge.model_id, model_options=judge.model_options)
    ```

    `latency_s` bounds each answer's delay (150–600 ms by default; `(0, 0)` for none); `seed`
    makes the jitter repeatable. Requests it does not recognize get an HTTP 400 that says so.
    """

    def __init__(
        self,
        dataset: DemoDataset | None = None,
        *,
        latency_s: tuple[float, float] = (0.15, 0.6),
        seed: int | None = None,
        port: int = 0,
    ) -> None:
        low, high = latency_s
        if low < 0 or high < low:
            raise ValueError(
                f"latency_s must be (low, high) with 0 <= low <= high, got {latency_s}"
            )
        self.verdicts = SimulatedVerdicts(dataset)
        self.latency_s = (float(low), float(high))
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._answered = 0
        self._refused = 0
        self._server = LoopbackJudgeServer(
            self._behaviour, model=SIMULATED_MODEL, record_requests=False, port=port
        )

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> SimulatedJudge:
        register_simulated_model()
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()

    def __enter__(self) -> SimulatedJudge:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what callers use ---------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return self._server.base_url

    @property
    def model_id(self) -> str:
        """The litellm model id to judge with."""
        return SIMULATED_MODEL_ID

    @property
    def model_options(self) -> dict[str, Any]:
        """`LiteLLMJudge` options that point litellm at this server (the key is a placeholder)."""
        return {"api_base": self.base_url, "api_key": "simulated-no-key-needed"}

    @property
    def answered(self) -> int:
        """Requests answered with a verdict."""
        with self._lock:
            return self._answered

    @property
    def refused(self) -> int:
        """Requests refused (not a summarization prompt)."""
        with self._lock:
            return self._refused

    # -- one request --------------------------------------------------------------------------

    def _behaviour(self, body: dict[str, Any]) -> Behaviour:
        try:
            text = self.verdicts.answer(body)
        except UnrecognizedPrompt as error:
            with self._lock:
                self._refused += 1
            return HttpError(400, str(error), error_type="invalid_request_error")
        prompt_tokens = estimate_tokens(_all_text(body))
        completion_tokens = estimate_tokens(text)
        with self._lock:
            self._answered += 1
            delay = self._delay(completion_tokens)
        return Reply(
            text,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            delay=delay,
        )

    def _delay(self, completion_tokens: int) -> float:
        low, high = self.latency_s
        span = high - low
        length_share = min(1.0, completion_tokens / _SLOW_ANSWER_TOKENS)
        # 60% of the range follows the answer's length, 40% is jitter.
        return low + span * (0.6 * length_share + 0.4 * self._random.random())

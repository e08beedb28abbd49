"""What `POST /v1/scores` and `POST /v1/scores:batch` do with a parsed request: check what the
types cannot (identifiers, non-finite numbers, known scorers), admit its items, turn the
intake's refusals into `ApiError`s; and `answer_plain_score`, the same request answered without
FastAPI's per-request machinery.

Most traffic is one plain `POST /v1/scores`. FastAPI spends more on such a request (middleware
layers, dependency solving, parsing twice over) than serve's own work does, so the guard hands
it here: one parse of the raw body into `ScoreRequest`, the same checks and admission as the
route, the same answer bytes. Anything else (a query string such as `?wait=true`, a body that
does not parse or pass the checks) goes on to the route, so every refusal keeps the one shape
and wording the route and its error handlers give it; nothing is decided or counted before that
hand-over.
"""

from __future__ import annotations

import functools
import json
import operator
import re
from collections.abc import Sequence
from typing import Any, Final

from pydantic import ValidationError

from ...._asgi import Send
from ....sinks.storable import non_finite_path
from ...config.file import key_path
from ...intake.admission import BAD_ID_MESSAGE as _BAD_ID_MESSAGE
from ...intake.admission import BAD_ID_TEXT as _BAD_ID_TEXT
from ...intake.admission import draws_run_id, next_run_id
from ...intake.interface import (
    Admission,
    IntakeClosedError,
    QueueFullError,
    ScoreItem,
    Skipped,
)
from ...intake.redis_queue import IntakeUnavailableError, OutcomeUnknownError
from ..errors import ApiError, error_body
from ..guard import send_answer, send_json
from ..models import ScoreRequest
from ..state import ServiceState

__all__ = [
    "accepted_answer",
    "accepted_body",
    "admit",
    "answer_plain_score",
    "check_scorers",
    "check_values",
    "item_of",
    "refusal_error",
]

# The content fields of a request, read in one call (not a `getattr` each, on every request).
_CONTENT_FIELDS: Final = ScoreRequest.CONTENT_FIELDS
_contents_of: Final = operator.attrgetter(*_CONTENT_FIELDS)

# `ScoreRequest.model_validate_json`, the same validation, without its wrapper's keywords.
_validate_json: Final = ScoreRequest.__pydantic_validator__.validate_json

# A number that may be past a double's range: a three-digit exponent or 309 digits in a row.
_HUGE_NUMBER: Final = re.compile(rb"[0-9][eE]\+?[0-9]{3}|[0-9]{309}")


def item_of(service: ServiceState, request: ScoreRequest, size: int = 0) -> ScoreItem:
    """The item of `request`, whose call is made from it only when something needs the call
    (a filter, a sampled run: `ScoreItem.of_draft`), and then once: when the client sent no
    run id and the scorers it names would have one made up (`draws_run_id`: a filter, or a
    rate other than 0), the id is drawn first and the call made with it, instead of admission
    copying the call to add it. Then the request's identity leaves the id out
    (`made_up_run_id`)."""
    scorers = request.scorers
    named = tuple(scorers) if scorers is not None else None
    if request.run_id is None and (
        service.draws_run_id
        if scorers is None
        else draws_run_id(service.scorers[scorer_id].entry for scorer_id in scorers)
    ):
        return ScoreItem.of_draft(request, named, size, made_up_run_id=next_run_id())
    return ScoreItem.of_draft(request, named, size)


def check_values(requests: Sequence[ScoreRequest], raw: bytes, prefix: str = "") -> None:
    """Strict JSON at the boundary: NaN and Infinity (which Python's JSON reader accepts), and
    numbers past a double's range (`1e400`, which it reads as infinity), are refused with the
    field that holds them, and identifiers may hold no NUL characters or unpaired surrogates.
    Text content may hold anything: the sinks store it (see docs)."""
    # A NUL or a lone surrogate reaches a string only through a `\u` escape: JSON readers
    # refuse raw control characters, and the guard refuses a body that is not UTF-8.
    escaped = b"\\u" in raw
    if not escaped:
        # The usual body: no escape, every content a text or null: nothing below would find
        # anything, so nothing is walked (no field names, no zip).
        for request in requests:
            for content in _contents_of(request):
                if content is not None and not isinstance(content, str):
                    break
            else:
                continue
            break
        else:
            return
    # Only a body spelling one of those numbers can hold one: most are not walked. Scanned for
    # once, and only when some content is a number or structure (text holds no number).
    maybe_non_finite: bool | None = None
    problems: list[dict[str, str]] = []
    for index, request in enumerate(requests):
        item = f"items[{index}]." if prefix else ""
        if escaped:
            for name in request.ID_FIELDS:
                value = getattr(request, name)
                if isinstance(value, str) and _BAD_ID_TEXT.search(value):
                    problems.append({"field": f"{item}{name}", "message": _BAD_ID_MESSAGE})
            for position, scorer_id in enumerate(request.scorers or ()):
                if _BAD_ID_TEXT.search(scorer_id):
                    field = f"{item}scorers[{position}]"
                    problems.append({"field": field, "message": _BAD_ID_MESSAGE})
        for name, content in zip(_CONTENT_FIELDS, _contents_of(request), strict=True):
            if content is None or isinstance(content, str):
                continue
            if maybe_non_finite is None:
                maybe_non_finite = (
                    b"NaN" in raw or b"Infinity" in raw or _HUGE_NUMBER.search(raw) is not None
                )
            where = non_finite_path(content) if maybe_non_finite else None
            if where is not None:
                problems.append(
                    {
                        "field": key_path([f"{item}{name}", *where]),
                        "message": "NaN, Infinity and numbers past a double's range are "
                        "not stored as numbers; send a finite number, null or a string",
                    }
                )
    if problems:
        summary = "; ".join(f"{p['field']}: {p['message']}" for p in problems[:5])
        raise ApiError(422, "invalid_request", summary, fields=problems)


# An unknown scorer id is echoed back so the client sees its typo, but only so much of it.
_SHOWN_ID_CHARS = 64
_SHOWN_IDS = 5


def _shown(scorer_id: str) -> str:
    if len(scorer_id) > _SHOWN_ID_CHARS:
        return repr(scorer_id[:_SHOWN_ID_CHARS]) + "…"
    return repr(scorer_id)


def check_scorers(service: ServiceState, requests: Sequence[ScoreRequest]) -> None:
    unknown: list[str] = []
    for request in requests:
        for scorer_id in request.scorers or ():
            if scorer_id not in service.scorers and scorer_id not in unknown:
                unknown.append(scorer_id)
    if unknown:
        known = service.known_scorers
        shown = ", ".join(_shown(s) for s in unknown[:_SHOWN_IDS])
        if len(unknown) > _SHOWN_IDS:
            shown += f" and {len(unknown) - _SHOWN_IDS} more"
        raise ApiError(
            404,
            "unknown_scorer",
            f"unknown scorer{'s' if len(unknown) > 1 else ''} {shown}; known: {', '.join(known)}",
            known_scorers=known,
        )


async def admit(
    service: ServiceState, items: Sequence[ScoreItem], *, want_results: bool = False
) -> list[Admission]:
    try:
        return await service.intake.admit(items, want_results=want_results)
    except _REFUSALS as refusal:
        raise refusal_error(service, refusal) from None


_REFUSALS: Final = (QueueFullError, OutcomeUnknownError, IntakeUnavailableError, IntakeClosedError)


def refusal_error(service: ServiceState, refusal: Exception) -> ApiError:
    """The answer to an intake's refusal to admit a request (one of `_REFUSALS`)."""
    retry = service.config.server.retry_after
    if isinstance(refusal, QueueFullError):
        if refusal.needed > refusal.capacity:
            return ApiError(
                413,
                "batch_too_large",
                f"the request needs {refusal.needed} queue slots, more than the queue holds "
                f"({refusal.capacity}); split it",
            )
        reason = refusal.detail or (
            f"the scoring queue is full ({refusal.needed} slot(s) needed, {refusal.free} free)"
        )
        # When the intake knows how long the queue needs to make room, say so (capped).
        wait = retry if refusal.retry_after is None else min(max(retry, refusal.retry_after), 60)
        return ApiError(429, "queue_full", f"{reason}; retry after {wait}s", retry_after=wait)
    if isinstance(refusal, OutcomeUnknownError):
        return ApiError(
            503,
            "outcome_unknown",
            "the work queue did not confirm the append: the runs may or may not have been "
            "accepted; retry the same request (same trace/span or run ids give the same run "
            "ids, stored once) or look the run ids up",
            retry_after=retry,
            runs=[
                {"item": index, "scorer": scorer, "run_id": run_id}
                for index, scorer, run_id in refusal.runs
            ],
        )
    if isinstance(refusal, IntakeUnavailableError):
        return ApiError(
            503,
            "queue_unavailable",
            "the work queue cannot be reached; nothing was accepted, retry later",
            retry_after=retry,
        )
    return ApiError(  # IntakeClosedError
        503,
        "shutting_down",
        "the service is shutting down and accepts no new requests",
        headers={"Connection": "close"},
        retry_after=retry,
    )


def accepted_body(admission: Admission) -> dict[str, Any]:
    return {
        "accepted": [{"scorer": a.scorer, "run_id": a.run_id} for a in admission.accepted],
        "skipped": [{"scorer": s.scorer, "decision": s.decision} for s in admission.skipped],
    }


async def answer_plain_score(service: ServiceState, body: bytes, send: Send) -> bool:
    """Answer a `POST /v1/scores` without a query string whose body is a valid `ScoreRequest`
    (202, or the intake's refusal: 429, 503, ...) and return True; return False, having sent
    and decided nothing, for the route to answer any other.

    `model_validate_json` reads the body once, with what Python's JSON reader gives where both
    accept it; what only the route's reader accepts (a byte-order mark, lone surrogates in
    escapes, numbers of thousands of digits) fails here and goes on to the route."""
    try:
        request: ScoreRequest = _validate_json(body)
        check_values((request,), body)
        if request.scorers is not None:
            check_scorers(service, (request,))
    except (ValidationError, ApiError):
        return False
    try:  # `admit`, without a coroutine of its own
        (admission,) = await service.intake.admit((item_of(service, request, len(body)),))
    except _REFUSALS as refusal:
        error = refusal_error(service, refusal)
        content = error_body(error.code, error.message, **error.extra)
        await send_json(send, error.status, content, error.headers)
        return True
    if admission.accepted:
        await send_answer(send, 202, *accepted_answer(admission))
        return True
    # Nothing accepted: the answer depends on the skipped decisions alone, few and repeated.
    await send_answer(send, 202, *_skipped_answer(tuple(admission.skipped)))
    return True


def accepted_answer(admission: Admission) -> tuple[bytes, tuple[tuple[bytes, bytes], ...]]:
    """`json_answer(accepted_body(admission))`, the same bytes, without the dicts and lists of
    the body nor a walk of them: the parts that repeat (a scorer's `{"scorer":...,"run_id":`,
    a skipped decision's object) are made once; only each run id is encoded per answer."""
    runs, skips = admission.accepted, admission.skipped
    if len(runs) == 1 and not skips:
        # The usual answer (one scorer, sampled): no generators, no joins of one part.
        scorer, run_id = runs[0]
        text = f"{_ONE_RUN_HEAD}{_accepted_prefix(scorer)}{_json_text(run_id)}{_ONE_RUN_TAIL}"
    else:
        accepted = ",".join(
            f"{_accepted_prefix(run.scorer)}{_json_text(run.run_id)}}}" for run in runs
        )
        skipped = ",".join(_skipped_object(skip) for skip in skips)
        text = f'{{"accepted":[{accepted}],"skipped":[{skipped}]}}'
    body = text.encode()
    return body, ((b"content-length", str(len(body)).encode("ascii")), _JSON_TYPE)


# What surrounds the one accepted run's object (its prefix, its run id, `}`) when nothing was
# skipped: `accepted_answer`'s general form with one part and none.
_ONE_RUN_HEAD: Final = '{"accepted":['
_ONE_RUN_TAIL: Final = '}],"skipped":[]}'


# A JSON string as Starlette writes it (`ensure_ascii=False`).
_json_text: Final = json.encoder.encode_basestring
_JSON_TYPE: Final = (b"content-type", b"application/json")


@functools.lru_cache(maxsize=256)
def _accepted_prefix(scorer_id: str) -> str:
    return f'{{"scorer":{_json_text(scorer_id)},"run_id":'


@functools.lru_cache(maxsize=256)
def _skipped_object(skip: Skipped) -> str:
    return f'{{"scorer":{_json_text(skip.scorer)},"decision":{_json_text(skip.decision)}}}'


@functools.lru_cache(maxsize=256)
def _skipped_answer(skipped: tuple[Skipped, ...]) -> tuple[bytes, tuple[tuple[bytes, bytes], ...]]:
    """The 202 body and headers of an item nothing accepted, made once per set of decisions."""
    return accepted_answer(Admission(skipped=list(skipped)))

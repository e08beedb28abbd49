"""`POST /v1/traces`: the OTLP/HTTP trace receiver (https://opentelemetry.io/docs/specs/otlp/).

Bodies are `ExportTraceServiceRequest`s in `application/x-protobuf` or `application/json`,
optionally `Content-Encoding: gzip`; the answer is an `ExportTraceServiceResponse` in the
request's encoding, with `partial_success` when spans were refused (the buffer's bounds). A body
that cannot be read is answered 400 with a `google.rpc.Status`, and nothing of it is kept. The
guard in front has already checked the bearer token (before reading), bounded the body in size
and time, and answers 503 while draining (OTLP clients retry 503 and 429).
"""

from __future__ import annotations

import asyncio
import zlib
from typing import Literal

from fastapi import APIRouter, Request, Response
from google.protobuf import json_format
from google.rpc.status_pb2 import Status  # type: ignore[import-untyped]
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from ....traces.otlp import TraceDataError, parse_json, parse_protobuf
from ....traces.spans import SpanRecord, spans_from_request
from ...config.traces_settings import TRACES_PATH
from ...intake.otlp_traces import TracesIntake
from ..guard import json_problem
from ..state import service_of

__all__ = ["router"]

Encoding = Literal["protobuf", "json"]
_MEDIA: dict[str, Encoding] = {"application/x-protobuf": "protobuf", "application/json": "json"}
_CONTENT_TYPE = {"protobuf": "application/x-protobuf", "json": "application/json"}
# Decoding costs about 35 us per span of an instrumented model call (measured): past this many
# bytes (a millisecond or so of decoding), the work goes to a thread.
_INLINE_BYTES = 16 << 10
# google.rpc.Code values the answers use.
_INVALID_ARGUMENT = 3
_RESOURCE_EXHAUSTED = 8
_UNIMPLEMENTED = 12

router = APIRouter(tags=["traces"])


class _Refusal(Exception):
    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def _encode(message: ExportTraceServiceResponse | Status, encoding: Encoding) -> bytes:
    if encoding == "protobuf":
        return bytes(message.SerializeToString())
    return str(json_format.MessageToJson(message, indent=None)).encode("utf-8")


def _answer(
    status: int,
    message: ExportTraceServiceResponse | Status,
    encoding: Encoding,
    headers: dict[str, str] | None = None,
) -> Response:
    content = _encode(message, encoding)
    return Response(content, status, headers=headers, media_type=_CONTENT_TYPE[encoding])


def _inflate(body: bytes, limit: int) -> bytes:
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        data = inflater.decompress(body, limit + 1)
    except zlib.error as error:
        raise _Refusal(400, _INVALID_ARGUMENT, f"body: not gzip data: {error}") from None
    if len(data) > limit:
        raise _Refusal(
            413,
            _INVALID_ARGUMENT,
            f"body: over {limit} bytes once decompressed (traces.max_decoded_bytes)",
        )
    if not inflater.eof:
        raise _Refusal(400, _INVALID_ARGUMENT, "body: truncated gzip data")
    return data


def _decode(body: bytes, encoding: Encoding, gzipped: bool, limit: int) -> list[SpanRecord]:
    """The spans of one export request; raises `_Refusal`. Runs on the loop or in a thread."""
    if gzipped:
        body = _inflate(body, limit)
    try:
        request: ExportTraceServiceRequest
        if encoding == "json":
            problem = json_problem(body)
            if problem is not None:
                raise _Refusal(400, _INVALID_ARGUMENT, f"body: {problem}")
            request = parse_json(body, where="body")
        else:
            request = parse_protobuf(body, where="body")
    except TraceDataError as error:
        raise _Refusal(400, _INVALID_ARGUMENT, error.message) from None
    return list(spans_from_request(request))


def _media(request: Request) -> Encoding | None:
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return _MEDIA.get(media)


@router.post(
    TRACES_PATH,
    summary="Receive OTLP/HTTP traces; selected spans are scored once their subtree is complete",
    response_class=Response,
    responses={
        200: {
            "description": "ExportTraceServiceResponse, in the request's encoding; "
            "`partialSuccess.rejectedSpans` counts spans refused by the buffer's bounds.",
            "content": {"application/x-protobuf": {}, "application/json": {}},
        },
        400: {"description": "Unreadable body (a google.rpc.Status); nothing of it is kept."},
        401: {"description": "Missing or wrong bearer token."},
        413: {"description": "Body over server.max_body_bytes, or traces.max_decoded_bytes."},
        429: {"description": "The scoring queue is full; retry after `Retry-After` seconds."},
        415: {
            "description": "Not application/x-protobuf or application/json, or an unknown "
            "Content-Encoding (gzip is supported)."
        },
        503: {"description": "Shutting down; retry after `Retry-After`."},
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": "An OTLP ExportTraceServiceRequest.",
            "content": {"application/x-protobuf": {}, "application/json": {}},
        }
    },
)
async def export_traces(request: Request) -> Response:
    service = service_of(request)
    intake = service.intake
    encoding = _media(request)
    if encoding is None or not isinstance(intake, TracesIntake):
        return _answer(
            415,
            Status(
                code=_UNIMPLEMENTED,
                message="send an OTLP ExportTraceServiceRequest as application/x-protobuf "
                "or application/json",
            ),
            "json" if encoding is None else encoding,
        )
    content_encoding = request.headers.get("content-encoding", "").strip().lower()
    if content_encoding not in ("", "identity", "gzip"):
        message = f"Content-Encoding {content_encoding[:40]!r} is not supported; use gzip"
        return _answer(415, Status(code=_UNIMPLEMENTED, message=message), encoding)
    if intake.saturated():
        # The runs of these spans could not be queued: the sender keeps them and retries
        # (OTLP exporters honour 429 and Retry-After) instead of this service dropping them.
        intake.refused_busy()
        retry = service.config.server.retry_after
        message = f"the scoring queue is full; retry after {retry}s"
        status = Status(code=_RESOURCE_EXHAUSTED, message=message)
        return _answer(429, status, encoding, {"Retry-After": str(retry)})
    body = await request.body()
    limit = intake.settings.max_decoded_bytes
    gzipped = content_encoding == "gzip"
    try:
        if len(body) > _INLINE_BYTES or gzipped:
            spans = await asyncio.to_thread(_decode, body, encoding, gzipped, limit)
        else:
            spans = _decode(body, encoding, gzipped, limit)
    except _Refusal as refusal:
        return _answer(refusal.status, Status(code=refusal.code, message=refusal.message), encoding)
    rejected = intake.receive(spans)
    response = ExportTraceServiceResponse()
    if rejected:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = (
            f"{rejected} of {len(spans)} spans refused: the trace buffer is at its bounds "
            "(traces.buffer max_bytes / max_spans_per_trace) or a span was sent twice"
        )
    return _answer(200, response, encoding)

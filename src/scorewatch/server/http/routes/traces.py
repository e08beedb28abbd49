"""`POST /v1/traces`: the OTLP/HTTP trace receiver (https://opentelemetry.io/docs/specs/otlp/).

Bodies are `ExportTraceServiceRequest`s in `application/x-protobuf` or `application/json`,
optionally `Content-Encoding: gzip`; the answer is an `ExportTraceServiceResponse` in the
request's encoding, with `partial_success` for spans refused for good (a span sent twice, or
past `max_spans_per_trace`). A request the trace buffer cannot hold now (the client's share or
the buffer full), or sent while runs wait for the scoring queue, is refused whole with 429 and
`Retry-After` (503 while the work queue is unreachable or the service shuts down): the statuses
OTLP exporters retry, unlike a partial success. One that no client may ever hold is a 413. A
body that cannot be read is answered 400 with a `google.rpc.Status`, and nothing of it is kept.
The guard in front has already checked the bearer token (before reading), bounded the body in
size and time, and answers 503 while draining.
"""

from __future__ import annotations

import zlib
from typing import Literal

from fastapi import APIRouter, Request, Response
from google.protobuf import json_format
from google.rpc.status_pb2 import Status  # type: ignore[import-untyped]
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from ....traces.assembly import Offer
from ....traces.otlp import TraceDataError, parse_json, parse_protobuf
from ...config.traces_settings import TRACES_PATH
from ...intake.otlp_traces import TracesIntake
from ..guard import json_problem
from ..state import service_of

__all__ = ["router"]

Encoding = Literal["protobuf", "json"]
_MEDIA: dict[str, Encoding] = {"application/x-protobuf": "protobuf", "application/json": "json"}
_CONTENT_TYPE = {"protobuf": "application/x-protobuf", "json": "application/json"}
# google.rpc.Code values the answers use.
_INVALID_ARGUMENT = 3
_RESOURCE_EXHAUSTED = 8
_UNIMPLEMENTED = 12
_UNAVAILABLE = 14

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


def _decode(
    body: bytes, encoding: Encoding, gzipped: bool, limit: int
) -> ExportTraceServiceRequest:
    """One export request, parsed; raises `_Refusal`. Runs on the trace thread, which converts
    its spans (`TracesIntake`)."""
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
    return request


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
            "`partialSuccess.rejectedSpans` counts spans refused for good (sent twice, or past "
            "max_spans_per_trace).",
            "content": {"application/x-protobuf": {}, "application/json": {}},
        },
        400: {"description": "Unreadable body (a google.rpc.Status); nothing of it is kept."},
        401: {"description": "Missing or wrong bearer token."},
        413: {
            "description": "Body over server.max_body_bytes, or traces.max_decoded_bytes, or "
            "more spans of one client than its share of the trace buffer ever holds."
        },
        429: {
            "description": "Nothing kept: the client's share or the trace buffer is full, or "
            "runs wait for the scoring queue; retry after `Retry-After` seconds."
        },
        415: {
            "description": "Not application/x-protobuf or application/json, or an unknown "
            "Content-Encoding (gzip is supported)."
        },
        503: {
            "description": "Nothing kept: shutting down, or the work queue is unreachable; "
            "retry after `Retry-After`."
        },
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
    retry = service.config.server.retry_after
    busy = intake.busy()
    if busy is not None:
        # The runs of these spans could not be queued: the sender keeps them and retries
        # (OTLP exporters honour 429 / 503 and Retry-After) instead of this service dropping
        # them.
        if busy == "queue_full":
            message = f"the scoring queue is full; retry after {retry}s"
            return _retry(429, _RESOURCE_EXHAUSTED, message, encoding, retry)
        message = f"the work queue cannot be reached; retry after {retry}s"
        return _retry(503, _UNAVAILABLE, message, encoding, retry)
    body = await request.body()
    limit = intake.settings.max_decoded_bytes
    gzipped = content_encoding == "gzip"
    source = request.client.host if request.client is not None else ""
    try:
        offer = await intake.receive(lambda: _decode(body, encoding, gzipped, limit), source)
    except _Refusal as refusal:
        return _answer(refusal.status, Status(code=refusal.code, message=refusal.message), encoding)
    if offer.refused is not None:
        return _refused(offer, encoding, retry)
    response = ExportTraceServiceResponse()
    if offer.dropped:
        response.partial_success.rejected_spans = offer.dropped
        response.partial_success.error_message = (
            f"{offer.dropped} spans refused for good: sent before (same span id from this "
            "client), or past traces.buffer.max_spans_per_trace"
        )
    return _answer(200, response, encoding)


def _retry(status: int, code: int, message: str, encoding: Encoding, retry: int) -> Response:
    return _answer(
        status, Status(code=code, message=message), encoding, {"Retry-After": str(retry)}
    )


def _refused(offer: Offer, encoding: Encoding, retry: int) -> Response:
    """Nothing of the request was kept: a status the exporter retries, unless it never fits."""
    message = offer.message
    if offer.refused == "too_large":
        return _answer(413, Status(code=_INVALID_ARGUMENT, message=message), encoding)
    if offer.refused == "shutdown":
        return _retry(503, _UNAVAILABLE, message, encoding, retry)
    return _retry(429, _RESOURCE_EXHAUSTED, message, encoding, retry)

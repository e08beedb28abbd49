"""A loopback stand-in for OpenAI's Batch API, for tests, benchmarks and the docs.

It follows the documented interface (https://platform.openai.com/docs/api-reference/batch and
/files): `POST /v1/files` (multipart, `purpose=batch`) stores a JSONL input file;
`POST /v1/batches` (`input_file_id`, `endpoint=/v1/chat/completions`, `completion_window=24h`)
creates a batch that moves `validating` -> `in_progress` -> `finalizing` -> `completed` (or
`failed` when a line is invalid: not JSON, no `custom_id`, a `custom_id` used twice, another
`url`), with `request_counts` kept as it goes; `GET /v1/batches/{id}`, `GET /v1/batches` (newest
first, `after`, `limit`, `has_more`), `POST /v1/batches/{id}/cancel` and
`GET /v1/files/{id}/content` (the output file: one line per answered request,
`{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error": null}`, and
the error file: the same lines for requests answered with an error status).

Each request line is answered as `LoopbackJudgeServer` answers a chat completion (its script,
`answer()`); it also still serves `/v1/chat/completions` directly. Without a script, a request
asking for a JSON object gets the smallest object its schema allows (from `response_format`, or
from the schema the judge wrote into the prompt) and a free-text request gets a sentence: any
scorer runs to its end. `line_counts` counts every `custom_id` received in any batch, which is
how a test checks that a resumed run submitted nothing twice.

Run it on its own (the docs do): `python -m scorewatch.testing.batch_server --url-file url.txt`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import signal
import threading
import time
from collections import Counter
from collections.abc import Mapping
from email import policy
from email.parser import BytesParser
from pathlib import Path
from typing import Any

from ..evals.estimate import smallest_instance
from .judge_server import Behaviour, HttpError, JudgeScript, LoopbackJudgeServer, Reply

__all__ = ["STAND_IN_REASON", "BatchStandInServer", "main", "schema_answer"]

_ENDPOINT = "/v1/chat/completions"
_SCHEMA_MARK = "conform to this JSON schema:\n"
STAND_IN_REASON = "The stand-in judge read the request and scored it by its schema."


def schema_answer(body: dict[str, Any]) -> Behaviour:
    """The stand-in's default answer: the smallest object the request's schema allows, or a
    sentence for a free-text request."""
    schema: Any = None
    response_format = body.get("response_format")
    if isinstance(response_format, Mapping):
        schema = (response_format.get("json_schema") or {}).get("schema")
    if schema is None:
        for message in body.get("messages") or []:
            content = message.get("content") if isinstance(message, Mapping) else None
            if isinstance(content, str) and _SCHEMA_MARK in content:
                text = content.split(_SCHEMA_MARK, 1)[1]
                schema, _ = json.JSONDecoder().raw_decode(text)
    if not isinstance(schema, Mapping):
        return Reply(STAND_IN_REASON)
    return Reply(json.dumps(smallest_instance(schema)))


class BatchStandInServer(LoopbackJudgeServer):
    """The Batch API on `http://127.0.0.1:PORT/v1`.

    `validating_s` is how long a batch stays `validating`, `line_s` how long each request
    takes once `in_progress` (a batch takes at least `min_in_progress_s` there), so a test can
    catch a batch mid-way."""

    def __init__(
        self,
        script: JudgeScript | None = None,
        *,
        validating_s: float = 0.05,
        line_s: float = 0.0,
        min_in_progress_s: float = 0.05,
        **options: Any,
    ) -> None:
        super().__init__(schema_answer if script is None else script, **options)
        self.validating_s = validating_s
        self.line_s = line_s
        self.min_in_progress_s = min_in_progress_s
        self.files: dict[str, dict[str, Any]] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.line_counts: Counter[str] = Counter()
        self._contents: dict[str, bytes] = {}
        self._work: set[asyncio.Task[None]] = set()
        self._ids = 0
        self._tag = secrets.token_hex(3)  # ids unique across servers, as the real API's are
        self._lock = threading.Lock()

    def _new_id(self, prefix: str) -> str:
        with self._lock:
            self._ids += 1
            return f"{prefix}_standin{self._tag}{self._ids:06d}"

    # --- routes -----------------------------------------------------------------------------

    async def _other_route(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, bytes, str] | None:
        route, _, query = path.partition("?")
        parts = route.strip("/").split("/")
        if parts[:1] != ["v1"] or len(parts) < 2 or parts[1] not in ("files", "batches"):
            return None
        try:
            if not headers.get("authorization", "").startswith("Bearer "):
                raise _Refused(401, "no API key: send Authorization: Bearer <key>")
            answer = self._route(method, parts[1:], query, headers, body)
        except _Refused as refused:
            error = HttpError(refused.status, refused.message, error_type="invalid_request_error")
            return refused.status, json.dumps(error.body()).encode(), "application/json"
        if isinstance(answer, bytes):
            return 200, answer, "application/octet-stream"
        return 200, json.dumps(answer).encode(), "application/json"

    def _route(
        self,
        method: str,
        parts: list[str],
        query: str,
        headers: Mapping[str, str],
        body: bytes,
    ) -> dict[str, Any] | bytes:
        if parts == ["files"] and method == "POST":
            return self._upload(headers.get("content-type", ""), body)
        if parts[0] == "files" and len(parts) == 3 and parts[2] == "content" and method == "GET":
            if parts[1] not in self._contents:
                raise _Refused(404, f"no file {parts[1]}")
            return self._contents[parts[1]]
        if parts == ["batches"] and method == "POST":
            return self._create(_json_object(body))
        if parts == ["batches"] and method == "GET":
            return self._list(dict(pair.partition("=")[::2] for pair in query.split("&") if pair))
        if parts[0] == "batches" and len(parts) >= 2 and parts[1] in self.batches:
            batch = self.batches[parts[1]]
            if len(parts) == 2 and method == "GET":
                return dict(batch)
            if parts[2:] == ["cancel"] and method == "POST":
                if batch["status"] in ("validating", "in_progress"):
                    batch["status"] = "cancelling"
                return dict(batch)
        raise _Refused(404, f"no route for {method} /v1/{'/'.join(parts)}")

    def _upload(self, content_type: str, body: bytes) -> dict[str, Any]:
        if not content_type.startswith("multipart/form-data"):
            raise _Refused(400, "POST /v1/files takes multipart/form-data")
        message = BytesParser(policy=policy.HTTP).parsebytes(
            b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body
        )
        fields: dict[str, tuple[str | None, bytes]] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True)
            if isinstance(name, str) and isinstance(payload, bytes):
                fields[name] = (part.get_filename(), payload)
        if fields.get("purpose", (None, b""))[1].decode() != "batch":
            raise _Refused(400, "purpose must be 'batch'")
        if "file" not in fields:
            raise _Refused(400, "no file field")
        filename, data = fields["file"]
        return self._store(data, filename or "upload.jsonl", "batch")

    def _store(self, data: bytes, filename: str, purpose: str) -> dict[str, Any]:
        file_id = self._new_id("file")
        self._contents[file_id] = data
        self.files[file_id] = {
            "id": file_id,
            "object": "file",
            "bytes": len(data),
            "created_at": int(time.time()),
            "filename": filename,
            "purpose": purpose,
            "status": "processed",
        }
        return dict(self.files[file_id])

    def _create(self, request: dict[str, Any]) -> dict[str, Any]:
        file_id = request.get("input_file_id")
        if not isinstance(file_id, str) or file_id not in self._contents:
            raise _Refused(400, "input_file_id names no uploaded file")
        if request.get("endpoint") != _ENDPOINT:
            raise _Refused(400, f"endpoint must be {_ENDPOINT}")
        if request.get("completion_window") != "24h":
            raise _Refused(400, "completion_window must be '24h'")
        batch_id = self._new_id("batch")
        now = int(time.time())
        batch: dict[str, Any] = {
            "id": batch_id,
            "object": "batch",
            "endpoint": _ENDPOINT,
            "errors": None,
            "input_file_id": file_id,
            "completion_window": "24h",
            "status": "validating",
            "output_file_id": None,
            "error_file_id": None,
            "created_at": now,
            "in_progress_at": None,
            "expires_at": now + 86_400,
            "finalizing_at": None,
            "completed_at": None,
            "failed_at": None,
            "cancelled_at": None,
            "request_counts": {"total": 0, "completed": 0, "failed": 0},
            "metadata": request.get("metadata"),
        }
        self.batches[batch_id] = batch
        task = asyncio.get_running_loop().create_task(self._process(batch))
        self._work.add(task)
        task.add_done_callback(self._work.discard)
        return dict(batch)

    def _list(self, query: Mapping[str, str]) -> dict[str, Any]:
        newest_first = list(reversed(self.batches.values()))
        after = query.get("after")
        if after in self.batches:
            newest_first = newest_first[[b["id"] for b in newest_first].index(after) + 1 :]
        limit = max(1, min(int(query.get("limit") or 20), 100))
        page = [dict(batch) for batch in newest_first[:limit]]
        return {
            "object": "list",
            "data": page,
            "first_id": page[0]["id"] if page else None,
            "last_id": page[-1]["id"] if page else None,
            "has_more": len(newest_first) > limit,
        }

    # --- a batch's life ---------------------------------------------------------------------

    async def _process(self, batch: dict[str, Any]) -> None:
        await asyncio.sleep(self.validating_s)
        lines, problem = _parse_lines(self._contents[batch["input_file_id"]])
        if problem is not None:
            batch.update(
                status="failed",
                failed_at=int(time.time()),
                errors={"object": "list", "data": [problem]},
            )
            return
        started = time.monotonic()
        batch.update(status="in_progress", in_progress_at=int(time.time()))
        counts = batch["request_counts"]
        counts["total"] = len(lines)
        answered: list[bytes] = []
        failed: list[bytes] = []
        for line in lines:
            if batch["status"] == "cancelling":
                break
            self.line_counts[line["custom_id"]] += 1
            if self.line_s > 0:
                await asyncio.sleep(self.line_s)
            status, body = self.answer(line["body"])
            output = {
                "id": self._new_id("batch_req"),
                "custom_id": line["custom_id"],
                "response": {
                    "status_code": status,
                    "request_id": self._new_id("req"),
                    "body": body,
                },
                "error": None,
            }
            (answered if status == 200 else failed).append(json.dumps(output).encode() + b"\n")
            counts["completed" if status == 200 else "failed"] += 1
        rest = self.min_in_progress_s - (time.monotonic() - started)
        if rest > 0:
            await asyncio.sleep(rest)
        batch.update(status="finalizing", finalizing_at=int(time.time()))
        for key, written in (("output_file_id", answered), ("error_file_id", failed)):
            if written:
                stored = self._store(
                    b"".join(written), f"{batch['id']}_{key}.jsonl", "batch_output"
                )
                batch[key] = stored["id"]
        if batch["status"] == "cancelling":
            batch.update(status="cancelled", cancelled_at=int(time.time()))
        else:
            batch.update(status="completed", completed_at=int(time.time()))


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        parsed = json.loads(body)
    except ValueError:
        raise _Refused(400, "the body is not JSON") from None
    if not isinstance(parsed, dict):
        raise _Refused(400, "the body is not a JSON object")
    return parsed


def _parse_lines(data: bytes) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The input file's request lines, or the validation error of the first bad one."""
    lines: list[dict[str, Any]] = []
    seen: set[str] = set()
    for number, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except ValueError:
            line = None
        problem = None
        if not isinstance(line, dict) or not isinstance(line.get("body"), dict):
            problem = "the line is not a request object with a body"
        elif not isinstance(line.get("custom_id"), str) or line["custom_id"] in seen:
            problem = "custom_id is missing or not unique"
        elif line.get("method") != "POST" or line.get("url") != _ENDPOINT:
            problem = f"method must be POST and url {_ENDPOINT}"
        if problem is not None:
            return [], {"code": "invalid_request", "message": problem, "line": number}
        assert isinstance(line, dict)
        seen.add(line["custom_id"])
        lines.append(line)
    return lines, None


def main(argv: list[str] | None = None) -> int:
    """Serve until SIGTERM or SIGINT; the base URL goes to stdout (and `--url-file`)."""
    parser = argparse.ArgumentParser(prog="python -m scorewatch.testing.batch_server")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--url-file", help="write the base URL here once serving")
    parser.add_argument("--line-s", type=float, default=0.0, help="seconds per request line")
    args = parser.parse_args(argv)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    with BatchStandInServer(port=args.port, line_s=args.line_s, record_requests=False) as server:
        if args.url_file:
            Path(args.url_file).write_text(server.base_url + "\n", encoding="utf-8")
        print(server.base_url, flush=True)
        stop.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

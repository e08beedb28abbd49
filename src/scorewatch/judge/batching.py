"""A batching judge: every judge call of a run is answered through OpenAI's Batch API.

`BatchingJudge` answers judge requests in place of the judge models themselves (it is a judge
stand-in, core/judge_standin.py): a request is turned into the body its judge would POST
(`LiteLLMJudge.batch_body`), queued, and awaited. When no new request has arrived for `linger`
seconds, every queued request is one round: one batch per judge model (at most `max_lines`
requests each), uploaded, created, polled every `poll_interval` seconds and downloaded. Each
request's future then gets the reply its judge would have returned (`batch_reply`, priced at
the batch price) or the error (`batch_failure`), and the scorer that asked goes on to its next
step, whose requests make the next round. So a run of multi-step scorers over N items takes one
round per step, and everything around the call (retries, validation, judge records, events) is
the scorer core's own.

A request's `custom_id` is a digest of its model and body plus how many identical requests came
before it in this run, so the same run started again asks the same requests under the same ids.
That is what makes a killed run resumable: the state file (`batch_state`) lists every submitted
batch's ids, and a restarted run answers a listed request from that batch (polling it, or
downloading its output again) rather than submitting it a second time.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .batch_api import TERMINAL_STATUSES, OpenAIBatchClient
from .batch_state import BatchRecord, BatchState
from .errors import JudgeError, JudgeProviderError
from .openai_http import HttpStatusError
from .protocol import JudgeModel, JudgeReply, JudgeRequest

__all__ = ["BatchableJudge", "BatchingJudge"]

logger = logging.getLogger("scorewatch.judge.batch")

MAX_LINES = 50_000
"""The most requests one batch may hold (the Batch API's limit)."""
_POLL_MISSES = 5
"""Status polls failing in a row before the batch's requests fail (their scorers may retry)."""


@runtime_checkable
class BatchableJudge(Protocol):
    """A judge model that can be asked through the Batch API (`LiteLLMJudge` is one)."""

    @property
    def model_id(self) -> str: ...

    @property
    def options(self) -> dict[str, Any]: ...

    async def batch_body(self, request: JudgeRequest) -> dict[str, Any]: ...

    def batch_reply(self, request: JudgeRequest, response: Any, batch_id: str) -> JudgeReply: ...

    def batch_client(self) -> OpenAIBatchClient: ...

    def batch_failure(self, error: Exception) -> JudgeError: ...


@dataclass(slots=True)
class _Pending:
    custom_id: str
    model: BatchableJudge
    request: JudgeRequest
    body: dict[str, Any]
    answer: asyncio.Future[JudgeReply]


class _UnknownBatch(Exception):
    """A batch the state file lists that the server answers 404 for."""


@dataclass(slots=True)
class _Result:
    """A finished batch: its id, final status and each answered request's line."""

    batch_id: str
    status: str
    lines: dict[str, dict[str, Any]] = field(default_factory=dict)
    failure: str | None = None


class BatchingJudge:
    """The judge stand-in of a batch-priced run; use `async with` around the run (it starts
    and stops the round-flushing task) and `judging_with(batching)` (core) for its scorers.

    `report` receives one line per event worth showing (a batch submitted, its status and
    counts as they change, a batch resumed from the state file)."""

    transport = "openai_batch"
    """What the judge records of a batch-priced run name as their transport."""

    def __init__(
        self,
        state_path: Path,
        *,
        poll_interval: float = 30.0,
        linger: float = 0.5,
        max_lines: int = MAX_LINES,
        report: Callable[[str], None] | None = None,
    ) -> None:
        self.state_path = state_path
        self.poll_interval = poll_interval
        self.linger = linger
        self.max_lines = max_lines
        self._report = report or (lambda line: None)
        self._state = BatchState.load(state_path)
        self._known: dict[str, BatchRecord] = {
            custom_id: record for record in self._state.batches for custom_id in record.custom_ids
        }
        self._results: dict[int, asyncio.Task[_Result]] = {}  # by id() of the record
        self._seen: Counter[str] = Counter()
        self._queue: list[_Pending] = []
        self._arrived = asyncio.Event()
        self._rounds = max((record.round for record in self._state.batches), default=0)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._flusher: asyncio.Task[None] | None = None
        self._save_lock = asyncio.Lock()
        self.submitted = 0
        """Requests this process submitted in new batches (not those answered from the state)."""
        self.resumed = 0
        """Requests answered from a batch an earlier, killed run submitted."""

    @property
    def rounds(self) -> int:
        return self._rounds

    async def __aenter__(self) -> BatchingJudge:
        self._flusher = asyncio.create_task(self._flush_rounds(), name="scorewatch-batch-rounds")
        return self

    async def __aexit__(self, *exc: object) -> None:
        tasks = [task for task in (self._flusher, *self._tasks) if task is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    # --- a judge call -----------------------------------------------------------------------

    async def __call__(self, model: JudgeModel, request: JudgeRequest) -> JudgeReply:
        if not isinstance(model, BatchableJudge):
            raise JudgeError(
                f"judge model {model.model_id!r} ({type(model).__name__}) cannot be batched: "
                "batch-priced scoring needs a litellm model id (openai/<name>)",
                code="BATCH_UNSUPPORTED",
                category="USER",
                retryable=False,
            )
        body = await model.batch_body(request)
        digest = hashlib.sha256(
            json.dumps([model.model_id, body], sort_keys=True, ensure_ascii=False).encode()
        ).hexdigest()[:32]
        custom_id = f"sw-{digest}-{self._seen[digest]}"
        self._seen[digest] += 1
        pending = _Pending(
            custom_id, model, request, body, asyncio.get_running_loop().create_future()
        )
        record = self._known.get(custom_id)
        if record is not None:
            self._spawn(self._answer_known(pending, record))
        else:
            self._queue.append(pending)
            self._arrived.set()
        return await pending.answer

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # --- rounds -----------------------------------------------------------------------------

    async def _flush_rounds(self) -> None:
        """Send what is queued as one round once `linger` seconds pass without a new request
        (every scorer still running is then waiting on this round)."""
        while True:
            await self._arrived.wait()
            for _ in range(20):  # at most 20 lingers: a steady trickle still gets sent
                self._arrived.clear()
                try:
                    await asyncio.wait_for(self._arrived.wait(), self.linger)
                except TimeoutError:
                    break
            self._arrived.clear()
            queued, self._queue = self._queue, []
            if queued:
                self._rounds += 1
                self._spawn(self._round(self._rounds, queued))

    async def _round(self, number: int, queued: list[_Pending]) -> None:
        by_model: dict[tuple[str, str], list[_Pending]] = {}
        for pending in queued:
            group = (pending.model.model_id, repr(sorted(pending.model.options.items())))
            by_model.setdefault(group, []).append(pending)
        chunks = [
            group[start : start + self.max_lines]
            for group in by_model.values()
            for start in range(0, len(group), self.max_lines)
        ]
        await asyncio.gather(*(self._submit(number, chunk) for chunk in chunks))

    async def _submit(self, number: int, chunk: list[_Pending]) -> None:
        model = chunk[0].model
        client = model.batch_client()
        lines = "".join(
            json.dumps(
                {
                    "custom_id": p.custom_id,
                    "method": "POST",
                    "url": "/v1/chat/completions",
                    "body": p.body,
                },
                ensure_ascii=False,
            )
            + "\n"
            for p in chunk
        ).encode()
        try:
            file_id = await client.upload(lines, f"scorewatch-round-{number}.jsonl")
            record = BatchRecord(
                round=number,
                input_file_id=file_id,
                custom_ids=[p.custom_id for p in chunk],
                model=model.model_id,
            )
            self._state.batches.append(record)
            await self._save()
            created = await client.create(file_id, {"scorewatch_round": str(number)})
            record.batch_id = str(created["id"])
            await self._save()
        except Exception as error:
            _fail(chunk, model.batch_failure(error))
            return
        self.submitted += len(chunk)
        self._report(
            f"batch round {number}: submitted {record.batch_id} ({len(chunk)} requests, "
            f"model {model.model_id})"
        )
        try:
            result = await self._result_of(record, client, model)
        except Exception as error:
            _fail(chunk, model.batch_failure(error))
            return
        for pending in chunk:
            self._resolve(pending, result)

    async def _answer_known(self, pending: _Pending, record: BatchRecord) -> None:
        try:
            result = await self._result_of(record, pending.model.batch_client(), pending.model)
        except _UnknownBatch:
            # The server no longer knows the batch (another account, long expired): its
            # requests were never answered for this run, so they are sent again.
            self._known.pop(pending.custom_id, None)
            self._queue.append(pending)
            self._arrived.set()
            return
        except Exception as error:
            if not pending.answer.done():
                pending.answer.set_exception(pending.model.batch_failure(error))
            return
        self.resumed += 1
        self._resolve(pending, result)

    def _result_of(
        self, record: BatchRecord, client: OpenAIBatchClient, model: BatchableJudge
    ) -> asyncio.Task[_Result]:
        """The one task that waits for `record`'s batch and reads its answers."""
        task = self._results.get(id(record))
        if task is None:
            task = asyncio.create_task(self._finish(record, client, model))
            self._results[id(record)] = task
        return task

    async def _finish(
        self, record: BatchRecord, client: OpenAIBatchClient, model: BatchableJudge
    ) -> _Result:
        if record.batch_id is None:  # created, or not, by a run killed before it said which
            found = await client.find_by_input(record.input_file_id)
            if found is None:
                found = await client.create(
                    record.input_file_id, {"scorewatch_round": str(record.round)}
                )
            record.batch_id = str(found["id"])
            await self._save()
            self._report(f"batch round {record.round}: resuming {record.batch_id}")
        batch_id = record.batch_id
        shown: tuple[Any, ...] | None = None
        misses = 0
        while True:
            try:
                batch = await client.retrieve(batch_id)
            except Exception as error:  # a poll that failed: the batch goes on regardless
                if isinstance(error, HttpStatusError) and error.status_code == 404:
                    self._report(f"batch round {record.round}: the server does not know {batch_id}")
                    raise _UnknownBatch(batch_id) from error
                misses += 1
                if misses >= _POLL_MISSES:
                    raise
                logger.warning("polling batch %s failed (%s)", batch_id, type(error).__name__)
                await asyncio.sleep(self.poll_interval)
                continue
            misses = 0
            status = str(batch.get("status"))
            counts = batch.get("request_counts") or {}
            seen = (status, counts.get("completed"), counts.get("failed"))
            if seen != shown:
                shown = seen
                self._report(
                    f"batch round {record.round}: {batch_id} {status} "
                    f"({counts.get('completed', 0)}/{counts.get('total') or len(record.custom_ids)}"
                    f" done, {counts.get('failed', 0)} failed)"
                )
            if status in TERMINAL_STATUSES:
                break
            await asyncio.sleep(self.poll_interval)
        result = _Result(batch_id, status, failure=_batch_errors(batch))
        for key in ("output_file_id", "error_file_id"):
            file_id = batch.get(key)
            if isinstance(file_id, str) and file_id:
                for line in (await client.content(file_id)).splitlines():
                    if line.strip():
                        parsed = json.loads(line)
                        if isinstance(parsed, dict) and isinstance(parsed.get("custom_id"), str):
                            result.lines[parsed["custom_id"]] = parsed
        return result

    def _resolve(self, pending: _Pending, result: _Result) -> None:
        if pending.answer.done():
            return
        try:
            reply = self._reply(pending, result)
        except JudgeError as error:
            pending.answer.set_exception(error)
        else:
            pending.answer.set_result(reply)

    def _reply(self, pending: _Pending, result: _Result) -> JudgeReply:
        model = pending.model
        line = result.lines.get(pending.custom_id)
        if line is None:
            reason = result.failure or f"the batch ended {result.status} without answering it"
            raise JudgeProviderError(
                f"judge batch {result.batch_id} for model {model.model_id!r}: {reason}",
                code="BATCH_FAILED" if result.status == "failed" else "BATCH_UNANSWERED",
                retryable=result.status != "failed",
            )
        response = line.get("response")
        status = response.get("status_code") if isinstance(response, Mapping) else None
        body = response.get("body") if isinstance(response, Mapping) else None
        if status == 200 and isinstance(body, Mapping):
            try:
                return model.batch_reply(pending.request, body, result.batch_id)
            except Exception as unreadable:
                raise model.batch_failure(unreadable) from unreadable
        if isinstance(status, int):
            error_body = body.get("error") if isinstance(body, Mapping) else None
            code = error_body.get("code") if isinstance(error_body, Mapping) else None
            failure = HttpStatusError(status, {}, code if isinstance(code, str) else None)
            raise model.batch_failure(failure) from None
        refusal = line.get("error")
        code = refusal.get("code") if isinstance(refusal, Mapping) else None
        raise JudgeProviderError(
            f"judge batch {result.batch_id} for model {model.model_id!r} failed the request"
            f" ({code or 'no code'})",
            code="BATCH_REQUEST_FAILED",
            retryable=True,
        )

    async def _save(self) -> None:
        async with self._save_lock:
            await asyncio.to_thread(BatchState.write, self.state_path, self._state.dumps())


def _fail(chunk: list[_Pending], failure: JudgeError) -> None:
    """Fail every request of `chunk` still waiting with `failure`."""
    for pending in chunk:
        if not pending.answer.done():
            pending.answer.set_exception(failure)


def _batch_errors(batch: Mapping[str, Any]) -> str | None:
    """The first of a failed batch's validation errors, by code and line (never its text: the
    server's message may quote the request)."""
    errors = batch.get("errors")
    data = errors.get("data") if isinstance(errors, Mapping) else None
    if not isinstance(data, list) or not data or not isinstance(data[0], Mapping):
        return None
    first = data[0]
    return f"the batch failed validation ({first.get('code')}, line {first.get('line')})"

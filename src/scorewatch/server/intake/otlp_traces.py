"""`TracesIntake`: serve's intake with OTLP trace assembly in front of it.

All the trace work runs on one thread of its own, never on the loop that answers requests:
`POST /v1/traces` hands `receive` the decoding of its body, and the thread decodes it and
offers the spans to the process's `TraceBuffer`, whole (`TraceBuffer.offer`: kept, or refused
whole for the sender to send again). A background task looks every `[traces]
assembly_interval` seconds for selected spans whose subtree is complete; the thread extracts
their runs, and the task admits them on the loop through the wrapped intake's `admit`, exactly
as `POST /v1/scores` does: the same filters, sampling by trace id, queue (in process, or the
Redis stream read by `scorewatch worker`), sinks and telemetry. Each item carries the evaluated
span's trace and span ids and `score_source = "trace"`, so its rows name the span and its
evaluation events are parented to it. The buffer is only ever touched on that thread, so it
needs no lock.

A run the queue cannot take now (full, or the Redis queue unreachable) is not dropped: it waits,
first in line, and export requests are refused unread meanwhile (`busy`), so that exporters
keep their spans and send them again instead of this service accepting what it would drop.

With `[traces.sessions]`, a run that names its conversation is also a turn of it: the same
thread keeps it in the process's `SessionBuffer` and, each round, admits the sessions that
closed as runs of their own for the session scorers (docs/traces.md, "Conversations").

When no scorer that may sample has a filter or a spend budget (and without sessions), which
traces any scorer samples follows from the trace id (`TraceSampling`): the spans of the other
traces are not converted, assembled or extracted, only counted (`not_sampled`) and held as ids,
so duplicates and `max_spans_per_trace` are still refused as before.

Everything else of the `Intake` protocol is the wrapped intake's. `shutdown` first stops the
assembly and admits every selected span still held (its subtree as far as it arrived), so the
drain budget covers them; what cannot be admitted is counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import traceback
from collections import Counter, deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Literal

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ...core.events import current_observers
from ...live.budgets import budgeted
from ...live.entry import LiveScorerEntry
from ...telemetry.names import INSTRUMENTATION_SCOPE
from ...traces.assembly import Offer, TraceBuffer
from ...traces.collect import Extraction, extract_ready
from ...traces.counts import TraceCounts
from ...traces.run import ExtractedRun
from ...traces.sessions import SessionBuffer
from ...traces.spans import SpanRecord, UnsampledSpans, split_request
from ..config.file import ServeConfig
from ..config.traces_settings import TracesSettings
from .admission import InvalidTargetError
from .interface import Admission, Intake, IntakeClosedError, QueueFullError, ScoreItem
from .redis_queue import IntakeUnavailableError, OutcomeUnknownError
from .trace_sampling import TraceSampling

__all__ = ["Busy", "TracesIntake", "build_traces_intake"]

logger = logging.getLogger("scorewatch.server")

Busy = Literal["queue_full", "unavailable"]
"""Why export requests are refused unread: the scoring queue cannot take runs now (429), or
the work queue cannot be reached (503)."""

# Outcomes of admitting a run after which it waits to be admitted again.
_WAIT: dict[str, Busy] = {"queue_full": "queue_full", "unavailable": "unavailable"}


class TracesIntake:
    """An `Intake` that also assembles exported spans into runs for the intake it wraps."""

    def __init__(
        self,
        inner: Intake,
        settings: TracesSettings,
        *,
        clock: Callable[[], float] = time.monotonic,
        scorer_ids: Sequence[str] = (),
        sampling: TraceSampling | None = None,
    ) -> None:
        self.inner = inner
        self.settings = settings
        sessions = settings.sessions
        # Sessions take every run that names a conversation, sampled or not: every trace is
        # extracted then.
        self._sampling = sampling if sessions is None else None
        self._scorers: tuple[str, ...] | None = None
        if settings.scorers is not None:
            self._scorers = tuple(settings.scorers)
        elif sessions is not None:  # every configured scorer (`scorer_ids`) but the sessions'
            self._scorers = tuple(i for i in scorer_ids if i not in sessions.scorers)
        self._sessions = SessionBuffer(sessions, clock=clock) if sessions is not None else None
        self._session_scorers = tuple(sessions.scorers) if sessions is not None else None
        self._keys = sessions.keys if sessions is not None else None
        self._buffer = TraceBuffer(settings.select or None, settings.buffer, clock=clock)
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scorewatch-traces")
        self._own = 0  # spans of scorewatch's own telemetry, never scored (no feedback loop)
        self._runs: dict[str, int] = {}
        self._busy = 0  # export requests refused unread: runs could not be queued
        # Runs the queue could not take yet, oldest first, and why.
        self._waiting: deque[ScoreItem] = deque()
        self._waiting_for: Busy = "queue_full"
        self._task: asyncio.Task[None] | None = None
        self._round: asyncio.Future[int] | None = None
        self._closed = False
        self._unregister = current_observers().register_source(TraceCounts, self.trace_counts)

    # -- the intake protocol: the wrapped intake's ------------------------------------------------

    @property
    def capacity(self) -> int:
        return self.inner.capacity

    async def admit(
        self, items: Sequence[ScoreItem], *, want_results: bool = False
    ) -> list[Admission]:
        return await self.inner.admit(items, want_results=want_results)

    def saturated(self) -> bool:
        return self.inner.saturated()

    def refuse_early(self) -> int | None:
        return self.inner.refuse_early()

    def stats(self) -> dict[str, int]:
        snapshot = self.inner.stats()
        counts = self.trace_counts()
        buffer = self._buffer
        snapshot["traces_spans_received"] = counts.spans_received
        snapshot["traces_spans_held"] = buffer.spans_held
        snapshot["traces_bytes_held"] = buffer.bytes_held
        snapshot["traces_held"] = len(buffer)
        snapshot["traces_runs_waiting"] = len(self._waiting)
        if self._sessions is not None:
            snapshot["traces_sessions_open"] = len(self._sessions)
            snapshot["traces_sessions_bytes_held"] = self._sessions.bytes_held
        refused = Counter(dict(buffer.counts.requests_refused))
        refused["busy"] = self._busy
        for prefix, counter in (
            ("traces_requests_refused_", refused),
            ("traces_spans_dropped_", counts.spans_dropped),
            ("traces_evicted_", counts.traces_evicted),
            ("traces_runs_", counts.runs),
            ("traces_sessions_", counts.sessions),
        ):
            for reason, count in counter.items():
                snapshot[prefix + reason] = count
        return snapshot

    async def shutdown(self, timeout: float) -> int:  # noqa: ASYNC109 - a drain budget
        if not self._closed:
            self._closed = True
            task, self._task = self._task, None
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            if self._round is not None:  # a round under way finishes: its spans are popped
                with contextlib.suppress(Exception):
                    await self._round
            await self.release(flush=True)
        return await self.inner.shutdown(timeout)

    async def aclose(self) -> None:
        self._unregister()
        self._thread.shutdown(wait=False, cancel_futures=True)
        await self.inner.aclose()

    # -- spans in ------------------------------------------------------------------------------

    def busy(self) -> Busy | None:
        """Whether to refuse an export request before reading it, and why (counted): runs wait
        for the queue already, or the queue is full. Called on the serving loop."""
        if self._waiting:
            reason: Busy = self._waiting_for
        elif self.inner.saturated():
            reason = "queue_full"
        else:
            return None
        self._busy += 1
        return reason

    async def receive(
        self,
        decode: Callable[[], ExportTraceServiceRequest | Sequence[SpanRecord]],
        source: str,
    ) -> Offer:
        """Decode one export request (`decode`, which may raise; a parsed request, or its spans
        already converted) and offer its spans to the buffer as sent from `source` (the client's
        address), on the trace thread. The offer says what was kept, or why nothing was (OTLP's
        partial success, or a status to retry)."""
        loop = asyncio.get_running_loop()
        if self._task is None and not self._closed:
            self._task = loop.create_task(self._assemble())
        return await loop.run_in_executor(self._thread, self._file, decode, source)

    def _file(
        self, decode: Callable[[], ExportTraceServiceRequest | Sequence[SpanRecord]], source: str
    ) -> Offer:
        decoded = decode()
        unsampled: Sequence[UnsampledSpans] = ()
        if isinstance(decoded, ExportTraceServiceRequest):
            sampling = self._sampling
            split = split_request(
                decoded,
                _every if sampling is None else sampling.sampled,
                ignore_scope=INSTRUMENTATION_SCOPE,
            )
            kept, unsampled, own = split.spans, split.unsampled, split.ignored
        else:
            kept = [span for span in decoded if span.scope != INSTRUMENTATION_SCOPE]
            own = len(decoded) - len(kept)
        if self._closed:
            # Shutting down (the guard answers 503 before this, but a request may be past it).
            self._buffer.counts.requests_refused["shutdown"] += 1
            return Offer(refused="shutdown", message="the service is shutting down")
        offer = self._buffer.offer(kept, source, unsampled)
        if offer.refused is None:
            self._own += own
        return offer

    def trace_counts(self) -> TraceCounts:
        """The counts so far. Read by metric collection, possibly from another thread while
        the loop counts: each counter is copied by `dict()`, which the GIL makes atomic."""
        buffer = self._buffer.counts
        runs = dict(self._runs)
        if buffer.nested_skipped:
            runs["nested"] = buffer.nested_skipped
        lost = sum(dict(buffer.lost_selected).values())
        if lost:
            runs["evicted"] = lost
        counts = TraceCounts(spans_received=buffer.spans_received + self._own)
        counts.spans_dropped.update(dict(buffer.spans_dropped))
        if self._own:
            counts.spans_dropped["own"] = self._own
        if buffer.spans_unsampled:
            counts.spans_dropped["not_sampled"] = buffer.spans_unsampled
        counts.traces_evicted.update(dict(buffer.traces_evicted))
        counts.runs.update(runs)
        if self._sessions is not None:
            counts.sessions.update(self._sessions.counts.outcomes())
        return counts

    # -- runs out ------------------------------------------------------------------------------

    async def _assemble(self) -> None:
        while True:
            await asyncio.sleep(self.settings.assembly_interval)
            # Shielded: cancelling the assembly at shutdown must not drop the runs of a round
            # already taken out of the buffer; shutdown waits for the round instead.
            self._round = asyncio.ensure_future(self.release())
            try:
                await asyncio.shield(self._round)
            except asyncio.CancelledError:
                raise
            except Exception as error:  # never let one bad round end the assembly
                # By type and place only: the message of an error raised on span data can
                # quote the agent's content, which must not reach a log.
                frame = traceback.extract_tb(error.__traceback__)[-1:]
                where = f"{frame[0].filename}:{frame[0].lineno}" if frame else "?"
                logger.error(
                    "trace assembly round failed (%s at %s); continuing",
                    type(error).__name__,
                    where,
                )

    async def release(self, *, flush: bool = False) -> int:
        """Admit the runs of every complete selected span (every one held, with `flush`), after
        the runs already waiting; returns how many were admitted. Without `flush`, a run the
        queue cannot take waits for the next round, with every run after it."""
        loop = asyncio.get_running_loop()
        items, skipped = await loop.run_in_executor(self._thread, self._take_ready, flush)
        for reason, count in skipped.items():
            self._count(reason, count)
        self._waiting.extend(items)
        admitted = 0
        while self._waiting:
            outcome = await self._admit(self._waiting[0])
            waits = _WAIT.get(outcome)
            if waits is not None and not flush:
                self._waiting_for = waits
                break
            self._waiting.popleft()
            self._count(outcome)
            admitted += outcome == "admitted"
        return admitted

    def _take_ready(self, flush: bool) -> tuple[list[ScoreItem], Counter[str]]:
        """On the trace thread: the items of the runs now complete, and the spans skipped."""
        ready = self._buffer.pop_ready(flush=flush)
        extraction = Extraction()
        extract_ready(ready, extraction, self._keys)
        skipped = extraction.skipped
        sessions = self._sessions
        items = []
        for run in extraction.runs:
            size = None
            if self._scorers != ():
                size = run.encoded_size()
                items.append(_item(run, self._scorers, size))
            elif run.conversation_id is None:
                skipped["no_scorer"] += 1  # every scorer scores sessions; this run is none
            else:
                skipped["session_only"] += 1
            if sessions is not None and run.conversation_id is not None:
                sessions.add(run, size)  # the item's size: the run is encoded once
        if sessions is not None:
            closed = sessions.pop_closed(flush=flush)
            items.extend(_item(run, self._session_scorers) for run in closed)
        return items, skipped

    async def _admit(self, item: ScoreItem) -> str:
        # One item per admission: a full queue refuses only what does not fit.
        try:
            await self.inner.admit([item])
        except QueueFullError:
            return "queue_full"
        except InvalidTargetError:
            return "invalid_target"
        except (IntakeUnavailableError, OutcomeUnknownError):
            # Sent again later, the same item names the same runs: never stored twice.
            return "unavailable"
        except IntakeClosedError:
            return "shutdown"
        except Exception as error:  # nothing of a run's data in the log, only what failed
            logger.error("a trace run was not admitted (%s)", type(error).__name__)
            return "unavailable"
        return "admitted"

    def _count(self, outcome: str, amount: int = 1) -> None:
        self._runs[outcome] = self._runs.get(outcome, 0) + amount


def _item(run: ExtractedRun, scorers: tuple[str, ...] | None, size: int | None = None) -> ScoreItem:
    metadata = run.metadata()
    if run.tool_calls:  # a served row has no other place for them (score_traces reports them)
        metadata["toolCalls"] = list(run.tool_calls)
    # Plain JSON values (timestamps as ISO text), the call marked so (its rows write them as
    # they are): the Redis queue carries them unchanged, and in-process and queued scoring see
    # the same run. The queue counts their encoded size (`size`, when the caller has it).
    if size is None:
        size = run.encoded_size()
    call = run.to_call(plain=True, metadata=metadata)
    return ScoreItem(call, scorers, size)


def _every(trace_id: bytes) -> bool:
    return True


def build_traces_intake(
    config: ServeConfig, inner: Intake, entries: Mapping[str, LiveScorerEntry] | None = None
) -> Intake:
    """`inner` with the trace intake in front when `[traces]` is configured, else `inner`.
    With the scorers' `entries`, traces no scorer samples are decided on arrival."""
    settings = config.traces
    if settings is None:
        return inner
    scorer_ids = [spec.id for spec in config.scorers]
    sampling = None
    if entries is not None:
        chosen = settings.scorers if settings.scorers is not None else scorer_ids
        shared = config.budget is not None and config.budget.usd_per_day is not None
        own = {spec.id for spec in config.scorers if spec.budget_usd_per_day is not None}

        def governed(entry: LiveScorerEntry) -> bool:
            return budgeted(entry.scorer, has_budget=shared or entry.scorer.id in own)

        sampling = TraceSampling.of((entries[i] for i in chosen), governed=governed)
    # A non-loopback `[traces] listen` without a token was refused by `resolve_token`.
    return TracesIntake(inner, settings, scorer_ids=scorer_ids, sampling=sampling)

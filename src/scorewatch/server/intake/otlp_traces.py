"""`TracesIntake`: serve's intake with OTLP trace assembly in front of it.

`POST /v1/traces` hands decoded spans to `receive`, which only files them in the process's
`TraceBuffer` (cheap, on the serving loop). A background task on the same loop looks every
`[traces] assembly_interval` seconds for selected spans whose subtree is complete, extracts
their runs (in a thread when there are many) and admits them through the wrapped intake's
`admit`, exactly as `POST /v1/scores` does: the same filters, sampling by trace id, queue (in
process, or the Redis stream read by `scorewatch worker`), sinks and telemetry. Each item
carries the evaluated span's trace and span ids and `score_source = "trace"`, so its rows name
the span and its evaluation events are parented to it.

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
from collections.abc import Callable, Sequence

from pydantic_core import to_jsonable_python

from ...core.events import TraceCounts, current_observers
from ...telemetry.names import INSTRUMENTATION_SCOPE
from ...traces.assembly import ReadySpan, TraceBuffer
from ...traces.collect import Extraction, extract_ready
from ...traces.run import ExtractedRun
from ...traces.spans import SpanRecord
from ..config.file import ServeConfig
from ..config.traces_settings import TracesSettings
from .interface import Admission, Intake, IntakeClosedError, QueueFullError, ScoreItem

__all__ = ["TracesIntake", "build_traces_intake"]

logger = logging.getLogger("scorewatch.server")

# Extracting a run reads every message of its spans (about 0.5 ms for an agent with a tool and
# two model calls, measured): past this many ready spans at once the work goes to a thread, so
# the loop keeps answering requests.
_INLINE_RUNS = 4


class TracesIntake:
    """An `Intake` that also assembles exported spans into runs for the intake it wraps."""

    def __init__(
        self,
        inner: Intake,
        settings: TracesSettings,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.inner = inner
        self.settings = settings
        self._scorers = tuple(settings.scorers) if settings.scorers is not None else None
        self._buffer = TraceBuffer(settings.select or None, settings.buffer, clock=clock)
        self._own = 0  # spans of scorewatch's own telemetry, never scored (no feedback loop)
        self._runs: dict[str, int] = {}
        self._busy = 0  # export requests answered 429: the scoring queue was full
        self._task: asyncio.Task[None] | None = None
        self._round: asyncio.Future[int] | None = None
        self._closed = False
        self._unregister = current_observers().register_trace_counts(self.trace_counts)

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
        snapshot["traces_spans_received"] = counts.spans_received
        snapshot["traces_spans_held"] = self._buffer.spans_held
        snapshot["traces_held"] = len(self._buffer)
        snapshot["traces_requests_refused_busy"] = self._busy
        for prefix, counter in (
            ("traces_spans_dropped_", counts.spans_dropped),
            ("traces_evicted_", counts.traces_evicted),
            ("traces_runs_", counts.runs),
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
        await self.inner.aclose()

    # -- spans in ------------------------------------------------------------------------------

    def receive(self, spans: Sequence[SpanRecord]) -> int:
        """File the spans of one export request; returns how many were refused (the OTLP
        partial success's `rejected_spans`). Must run on the serving loop."""
        kept = [span for span in spans if span.scope != INSTRUMENTATION_SCOPE]
        self._own += len(spans) - len(kept)
        if self._closed:
            # Shutting down (the guard answers 503 before this, but a request may be past it).
            self._buffer.counts.spans_received += len(kept)
            self._buffer.counts.spans_dropped["shutdown"] += len(kept)
            return len(kept)
        dropped = self._buffer.add(kept)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._assemble())
        return dropped

    def refused_busy(self) -> None:
        """Count an export request refused before decoding: the scoring queue was full."""
        self._busy += 1

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
        counts.traces_evicted.update(dict(buffer.traces_evicted))
        counts.runs.update(runs)
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
        """Admit the runs of every complete selected span (every one held, with `flush`);
        returns how many were admitted."""
        ready = self._buffer.pop_ready(flush=flush)
        if not ready:
            return 0
        extraction = Extraction()
        if len(ready) > _INLINE_RUNS:
            await asyncio.to_thread(extract_ready, ready, extraction)
        else:
            extract_ready(ready, extraction)
        for reason, count in extraction.skipped.items():
            self._count(reason, count)
        sizes = _sizes(ready)
        admitted = 0
        for run in extraction.runs:
            outcome = await self._admit(_item(run, self._scorers, sizes.get(run.span_id, 0)))
            self._count(outcome)
            admitted += outcome == "admitted"
        return admitted

    async def _admit(self, item: ScoreItem) -> str:
        # One item per admission: a full queue refuses only what does not fit.
        try:
            await self.inner.admit([item])
        except QueueFullError:
            return "queue_full"
        except IntakeClosedError:
            return "shutdown"
        except Exception as error:  # the Redis queue unreachable, or its append unconfirmed
            logger.error("a trace run was not admitted (%s)", type(error).__name__)
            return "unavailable"
        return "admitted"

    def _count(self, outcome: str, amount: int = 1) -> None:
        self._runs[outcome] = self._runs.get(outcome, 0) + amount


def _sizes(ready: Sequence[ReadySpan]) -> dict[str, int]:
    return {item.span.span_id: item.span.size for item in ready}


def _item(run: ExtractedRun, scorers: tuple[str, ...] | None, size: int) -> ScoreItem:
    metadata = run.metadata()
    if run.tool_calls:
        metadata["toolCalls"] = list(run.tool_calls)
    return ScoreItem(
        # Plain JSON values (timestamps as ISO text): the Redis queue carries them unchanged,
        # and in-process and queued scoring see the same run.
        input=to_jsonable_python(run.input),
        output=to_jsonable_python(run.output),
        target=run.agent or run.service_name or run.span_name,
        scorers=scorers,
        trace_id=run.trace_id,
        span_id=run.span_id,
        run_id=run.span_id,  # the call's own id: the row's metadata.agentRunId
        size=size,
        metadata=metadata,
        score_source="trace",
    )


def build_traces_intake(config: ServeConfig, inner: Intake) -> Intake:
    """`inner` with the trace intake in front when `[traces]` is configured, else `inner`."""
    settings = config.traces
    if settings is None:
        return inner
    # A non-loopback `[traces] listen` without a token was refused by `resolve_token`.
    return TracesIntake(inner, settings)

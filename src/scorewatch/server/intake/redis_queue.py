"""`RedisIntake`: serve's intake when `[queue] url` (or `--queue`) names a Redis stream.

Decisions are made exactly as in `InProcessIntake` (filter, then deterministic sampling, then a
deterministic run id); the sampled evaluations of a request are appended to the stream in one
atomic script before the answer is sent, so a 202 means the work is in Redis. When the
unacknowledged backlog would pass `[queue] max_backlog` the whole request is refused
(`QueueFullError`, a 429 with Retry-After); nothing is ever trimmed. Scoring happens in
`scorewatch worker` processes; with `?wait=true` the service polls the result store (the
PostgreSQL sink) for the runs it queued.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, Unpack

from opentelemetry import propagate
from opentelemetry.trace import SpanKind

from ...core.call import AgentCall
from ...core.events import current_observers
from ...live.budgets import Budgets
from ...live.entry import LiveScorerEntry
from ...live.events import QueueGauges
from ...sinks.base import ScoreSink
from ...sinks.delivery import close_sinks
from ...sinks.postgres import RunQuery
from ...sinks.record import ScoreRecord
from ...telemetry import names as telemetry_names
from ...telemetry import tracer_for
from ..config.stores import AnswerProbe
from ..queue.stream import (
    EntryAppender,
    GaugePoller,
    QueueFull,
    StreamNames,
    encode_entry,
    ensure_group,
    never_sent,
)
from .admission import IntakeCounts, plan_digest, plan_items_off_loop, request_run_id
from .interface import Accepted, Admission, IntakeClosedError, QueueFullError, ScoreItem

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["IntakeUnavailableError", "OutcomeUnknownError", "RedisIntake", "RunLookup"]

logger = logging.getLogger("scorewatch.server")

_POLL_S = 0.2


class IntakeUnavailableError(IntakeClosedError):
    """The work queue cannot be reached; nothing of the request was accepted."""


class OutcomeUnknownError(IntakeClosedError):
    """The append may or may not have happened (Redis timed out or went away after the command
    was sent). `runs` holds (item index, scorer id, run id) of every evaluation it carried."""

    def __init__(self, runs: list[tuple[int, str, str]]) -> None:
        super().__init__("the work queue did not confirm the append")
        self.runs = runs


class RunLookup(Protocol):
    """A result store that can fetch rows by run id (the PostgreSQL sink)."""

    async def aquery(self, **query: Unpack[RunQuery]) -> list[dict[str, Any]]: ...


class RedisIntake:
    """Appends accepted evaluations to a Redis stream; `scorewatch worker` scores them."""

    def __init__(
        self,
        entries: Mapping[str, LiveScorerEntry],
        *,
        client: Redis,
        names: StreamNames,
        max_backlog: int,
        sinks: Sequence[ScoreSink] = (),
        lookup: RunLookup | None = None,
        stats_interval: float = 5.0,
        wait_limit: float = 30.0,
        budgets: Budgets | None = None,
    ) -> None:
        self._entries = dict(entries)
        self._budgets = budgets if budgets else None
        self._client = client
        self._names = names
        self._max_backlog = max_backlog
        self._sinks = tuple(sinks)
        self._lookup = lookup
        self._wait_limit = wait_limit
        # sink_errors stays 0: serve stores nothing itself with a queue, the workers count theirs
        self._counts = IntakeCounts(
            "sink_errors", "queue_errors", "outcome_unknown", budgets=self._budgets
        )
        self._closed = False
        self._group_ready = False
        self._poller = GaugePoller(client, names, stats_interval)
        self._appender = EntryAppender(client, names.stream, max_backlog)
        self._unregister = current_observers().register_source(
            QueueGauges, lambda: self._poller.latest
        )
        self._waiters: set[asyncio.Task[None]] = set()
        self._unregister_budgets = (
            None
            if self._budgets is None
            else self._budgets.report_to(
                current_observers(),
                {entry.scorer: entry.sampling.rate for entry in self._entries.values()},
            )
        )

    # -- introspection -----------------------------------------------------------------------

    @property
    def capacity(self) -> int:
        return self._max_backlog

    def stats(self) -> dict[str, int]:
        snapshot = self._counts.snapshot()
        latest = self._poller.latest
        snapshot["queued"] = latest.lag if latest else 0
        snapshot["in_flight"] = latest.pending if latest else 0
        snapshot["backlog"] = latest.backlog if latest else 0
        snapshot["dead_letters"] = latest.dead_letters if latest else 0
        return snapshot

    def saturated(self) -> bool:
        """Backlog at the limit, or Redis unreadable (then `/readyz` says not ready)."""
        if not self._closed:
            with contextlib.suppress(RuntimeError):  # no running loop: nothing to start
                asyncio.get_running_loop()
                self._poller.start()
        latest = self._poller.latest
        full = latest is not None and latest.backlog >= self._max_backlog
        return full or self._poller.failing

    def probe(self) -> AnswerProbe:
        """For `/readyz`: does Redis answer a PING now?"""
        return AnswerProbe("redis", self._client.ping, "the Redis work queue is not ready")

    def refuse_early(self) -> int | None:
        # The backlog is checked exactly by the append script; the gauges are seconds old.
        return None

    # -- admission ---------------------------------------------------------------------------

    async def _prepare(self) -> None:
        if not self._group_ready:
            # The group exists before the first entry, so workers started later still read
            # everything from the stream's beginning.
            await ensure_group(self._client, self._names)
            self._group_ready = True
            self._poller.start()

    async def admit(
        self, items: Sequence[ScoreItem], *, want_results: bool = False
    ) -> list[Admission]:
        plans = await plan_items_off_loop(self._entries, items, self._budgets)
        if self._closed:
            self._counts.refused(plans, "dropped_shutdown")
            raise IntakeClosedError("the service is shutting down")

        runs: list[tuple[int, str, str]] = []  # (plan index, scorer id, run id)
        encoded: list[list[str]] = []
        with tracer_for(current_observers()).start_as_current_span(
            telemetry_names.queue_send_span_name(self._names.stream),
            kind=SpanKind.PRODUCER,
            attributes={
                telemetry_names.ATTR_MESSAGING_SYSTEM: telemetry_names.MESSAGING_SYSTEM_REDIS,
                telemetry_names.ATTR_MESSAGING_OPERATION_TYPE: "send",
                telemetry_names.ATTR_MESSAGING_DESTINATION: self._names.stream,
            },
        ) as span:
            carrier: dict[str, str] = {}
            propagate.inject(carrier)
            for index, plan in enumerate(plans):
                digest = plan_digest(plan) if plan.sampled else ""
                for scorer_id in plan.sampled:
                    run_id = request_run_id(scorer_id, plan.item, digest)
                    runs.append((index, scorer_id, run_id))
                    hold = plan.holds.get(scorer_id)
                    held = () if hold is None else hold.reservations
                    encoded.append(encode_entry(scorer_id, run_id, plan.call, carrier, held))
            span.set_attribute(telemetry_names.ATTR_MESSAGING_BATCH_COUNT, len(encoded))
            try:
                if encoded:  # a request with nothing sampled never waits on Redis
                    await self._prepare()
                    await self._appender.append(encoded)
            except QueueFull as full:
                self._counts.refused(plans, "dropped_queue_full")
                free = max(0, self._max_backlog - full.backlog)
                raise QueueFullError(len(encoded), free, self._max_backlog) from None
            except Exception as error:
                self._counts.add("queue_errors")
                if not never_sent(error):
                    # Redis may have appended the entries before the answer was lost: neither
                    # "accepted" nor "refused" would be true. The run ids let the client retry
                    # the same request (same ids, stored once) or look the results up.
                    self._counts.add("outcome_unknown", len(runs))
                    logger.error(
                        "appending to the work queue: outcome unknown (%s)", type(error).__name__
                    )
                    raise OutcomeUnknownError(runs) from None
                self._counts.refused(plans, "dropped_queue_full")
                logger.error("appending to the work queue failed (%s)", type(error).__name__)
                raise IntakeUnavailableError(
                    f"the work queue is unavailable ({type(error).__name__})"
                ) from None

        admissions = [
            Admission(skipped=plan.skipped, results={} if want_results else None) for plan in plans
        ]
        self._counts.skipped(plans)
        loop = asyncio.get_running_loop()
        waiting: dict[str, asyncio.Future[ScoreRecord]] = {}
        for index, scorer_id, run_id in runs:
            admission = admissions[index]
            admission.accepted.append(Accepted(scorer_id, run_id))
            self._counts.decided(scorer_id, "sampled")
            if admission.results is not None:
                future: asyncio.Future[ScoreRecord] = loop.create_future()
                admission.results[run_id] = future
                waiting[run_id] = future
        if waiting:
            self._watch(waiting, {run_id: plans[i].call for i, _s, run_id in runs})
        return admissions

    # -- ?wait=true ----------------------------------------------------------------------------

    def _watch(
        self,
        waiting: dict[str, asyncio.Future[ScoreRecord]],
        calls: Mapping[str, AgentCall],
    ) -> None:
        if self._lookup is None:
            return  # nothing to read results from: the caller sees them as pending
        task = asyncio.get_running_loop().create_task(self._poll(waiting, calls))
        self._waiters.add(task)
        task.add_done_callback(self._waiters.discard)

    async def _poll(
        self,
        waiting: dict[str, asyncio.Future[ScoreRecord]],
        calls: Mapping[str, AgentCall],
    ) -> None:
        assert self._lookup is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._wait_limit + 1.0
        while waiting and loop.time() < deadline:
            await asyncio.sleep(_POLL_S)
            for run_id in [r for r, f in waiting.items() if f.done()]:
                del waiting[run_id]  # the waiter gave up
            if not waiting:
                return
            try:
                rows = await self._lookup.aquery(ids=list(waiting), limit=len(waiting))
            except Exception as error:
                logger.warning("reading results for a waiting request failed (%s)", error)
                continue
            for row in rows:
                run_id = str(row["id"])
                future = waiting.pop(run_id, None)
                if future is None or future.done():
                    continue
                future.set_result(ScoreRecord.from_row(row, calls[run_id]))

    # -- shutdown ------------------------------------------------------------------------------

    async def shutdown(self, timeout: float) -> int:  # noqa: ASYNC109 - a drain budget
        # Accepted work is in Redis already: nothing to drain, nothing given up.
        self._closed = True
        for task in list(self._waiters):
            task.cancel()
        return 0

    async def aclose(self) -> None:
        self._unregister()
        if self._unregister_budgets is not None:
            self._unregister_budgets()
        await self._poller.stop()
        await close_sinks(self._sinks)
        try:
            await self._client.aclose()
        except Exception as error:
            logger.debug("closing the Redis client failed (%s)", type(error).__name__)

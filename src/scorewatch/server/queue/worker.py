"""`StreamWorker`: scores the work `scorewatch serve` appended to the Redis stream.

One consumer of the workers' consumer group. At most `concurrency` evaluations run at once;
each is read (`XREADGROUP`), scored by the configured scorer, written to every sink, and only
then acknowledged and deleted (`XACK` + `XDEL` in one transaction). Delivery is at least once:

- an entry a consumer has held for longer than the visibility timeout without acknowledging
  (the consumer died, or the run failed) is claimed by a live consumer (`XAUTOCLAIM`) and
  counted as a redelivery; a consumer keeps its in-flight entries fresh meanwhile
  (`XCLAIM ... JUSTID`, which does not count as a delivery), so a slow judge is not mistaken
  for a dead worker; an entry a worker claims back from itself (its loop ran late past the
  heartbeats) is left to the run still going, never started twice;
- a failed run is not acknowledged, so it is retried on a later delivery; on its
  `max_deliveries`-th delivery the failure is stored (a failed row, never a score) and the entry
  moves to the dead-letter stream; a run the judge refused for good (a judge error that is not
  retryable: 401, 400, ...) is stored and dead-lettered on its first delivery; an entry
  delivered more often than that without ever finishing (it kills its worker) is
  dead-lettered without running again;
- a result is stored under the deterministic run id serve chose, and the sinks upsert on it, so
  a redelivered run leaves one row.

A result a sink refuses for a reason of its own row (a value or constraint it breaks, not an
outage) is stored as an `unstorable` failure and its entry dead-lettered at once; a sink that is
down is retried for as long as it takes (the entry stays claimed, no delivery is spent).

Dead-lettered entries keep their fields plus `dead.reason` (`failed`, `max_deliveries`,
`unknown_scorer`, `malformed`, `unstorable`), `dead.id`, `dead.deliveries` and `dead.consumer`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, SpanContext, SpanKind

from ..._throttled_log import ThrottledLog
from ...core.events import TraceLink, current_observers, linked_runs
from ...core.scorer import Scorer
from ...live.budgets import Budgets, Hold
from ...live.engine import log_failed_run, score_call
from ...live.events import DeadLettered, InFlight, QueueGauges, Redelivered
from ...privacy import PrivacyPolicy
from ...sinks.base import ScoreSink
from ...sinks.delivery import SinkRetry, Storage
from ...telemetry import names as telemetry_names
from ...telemetry import tracer_for
from .stream import GaugePoller, QueueEntry, StreamNames, decode_entry, ensure_group

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["StreamWorker", "default_consumer_name"]

logger = logging.getLogger("scorewatch.worker")

_CONSUMER_CLEANUP_S = 60.0
# KEYS[1]: the stream. ARGV: group, idle threshold (ms), this consumer's name.
_FORGET_SCRIPT = """
local removed = 0
for _, fields in ipairs(redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])) do
  local info = {}
  for index = 1, #fields, 2 do
    info[fields[index]] = fields[index + 1]
  end
  if info['name'] ~= ARGV[3] and info['pending'] == 0 and info['idle'] > tonumber(ARGV[2]) then
    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], info['name'])
    removed = removed + 1
  end
end
return removed
"""
_COUNTS = (
    "delivered",
    "redelivered",
    "scored",
    "not_scorable",
    "failed_attempts",
    "failed",
    "dead_lettered",
    "acknowledged",
)


def default_consumer_name() -> str:
    """Host name and process id: unique per live process, readable in `XINFO CONSUMERS`."""
    return f"{socket.gethostname()}-{os.getpid()}"


@dataclass(frozen=True, slots=True)
class _Delivery:
    entry_id: str
    fields: Mapping[bytes, bytes]
    deliveries: int


class StreamWorker:
    def __init__(
        self,
        scorers: Mapping[str, Scorer],
        *,
        client: Redis,
        names: StreamNames,
        sinks: Sequence[ScoreSink],
        concurrency: int = 32,
        visibility_timeout: float = 60.0,
        max_deliveries: int = 5,
        claim_interval: float = 5.0,
        stats_interval: float = 5.0,
        consumer: str | None = None,
        block_ms: int = 1000,
        privacy: PrivacyPolicy | None = None,
        review_rates: Mapping[str, float] | None = None,
        budgets: Budgets | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self._scorers = dict(scorers)
        # Each scorer's review rate: its successful runs in the sample are stored marked.
        self._review_rates = dict(review_rates or {})
        self._budgets = budgets if budgets else None
        self._privacy = privacy
        self._client = client
        self._names = names
        # A sink outage must not burn deliveries: the entry stays claimed (the heartbeat keeps
        # it) and the write is retried until it works or this worker stops.
        self._storage = Storage(sinks, retry=SinkRetry(first_pause=0.5))
        self._warn = ThrottledLog(logger)
        self._concurrency = concurrency
        self._visibility_ms = max(1, int(visibility_timeout * 1000))
        self._max_deliveries = max_deliveries
        self._claim_interval = claim_interval
        self._block_ms = block_ms
        self.consumer = consumer or default_consumer_name()
        self._tasks: dict[asyncio.Task[None], str] = {}
        self._counts = dict.fromkeys(_COUNTS, 0)
        self._lock = threading.Lock()
        self._stopping = asyncio.Event()
        self._drained = asyncio.Event()
        self._poller = GaugePoller(client, names, stats_interval)
        self._unregister = current_observers().register_source(
            QueueGauges, lambda: self._poller.latest
        )

    # -- accounting ----------------------------------------------------------------------------

    def stats(self) -> dict[str, int]:
        with self._lock:
            snapshot = dict(self._counts)
        sinks = self._storage.stats()
        snapshot["sink_errors"] = sinks["sink_errors"]
        snapshot["sink_refused"] = sinks["sink_refused"]
        snapshot["in_flight"] = len(self._tasks)
        return snapshot

    def _count(self, key: str, amount: int = 1) -> None:
        with self._lock:
            self._counts[key] += amount

    # -- the loop ------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop reading new work; entries in flight finish (see `run`)."""
        self._stopping.set()
        self._storage.stop_retrying()

    async def run(self, *, drain_timeout: float = 30.0) -> dict[str, int]:
        """Consume until `stop()`; then wait up to `drain_timeout` s for the runs in flight.
        Runs still going then are abandoned unacknowledged: another consumer reclaims them."""
        await ensure_group(self._client, self._names)
        self._poller.start()
        heartbeat = asyncio.get_running_loop().create_task(self._heartbeat())
        try:
            await self._consume()
        finally:
            self.stop()
            await self._drain(drain_timeout)
            # The heartbeat kept the runs in flight claimed until now.
            self._drained.set()
            await asyncio.wait({heartbeat}, timeout=5.0)
            heartbeat.cancel()
            await self._poller.stop()
            self._unregister()
        return self.stats()

    async def _consume(self) -> None:
        loop = asyncio.get_running_loop()
        next_claim = next_cleanup = 0.0
        while not self._stopping.is_set():
            if len(self._tasks) >= self._concurrency:
                await asyncio.wait(set(self._tasks), return_when=asyncio.FIRST_COMPLETED)
                continue
            try:
                if loop.time() >= next_claim:
                    next_claim = loop.time() + self._claim_interval
                    if loop.time() >= next_cleanup:
                        next_cleanup = loop.time() + _CONSUMER_CLEANUP_S
                        await self._forget_dead_consumers()
                    if await self._reclaim():
                        continue
                await self._read()
            except asyncio.CancelledError:
                raise
            except Exception as error:
                # Redis restarting or unreachable: back off, keep the runs in flight going.
                logger.warning("reading the work queue failed (%s); retrying", error)
                await _sleep_or_stop(self._stopping, 1.0)

    async def _read(self) -> None:
        free = self._concurrency - len(self._tasks)
        answer: Any = await self._client.xreadgroup(
            self._names.group,
            self.consumer,
            {self._names.stream: ">"},
            count=free,
            block=self._block_ms,
        )
        for _stream, entries in answer or ():
            for entry_id, fields in entries:
                self._count("delivered")
                self._start(_Delivery(_text(entry_id), fields or {}, 1))

    async def _reclaim(self) -> int:
        """Claim entries idle past the visibility timeout; returns how many."""
        free = self._concurrency - len(self._tasks)
        claimed: list[tuple[str, Mapping[bytes, bytes]]] = []
        start = "0-0"
        while free - len(claimed) > 0:
            answer = await self._client.xautoclaim(
                self._names.stream,
                self._names.group,
                self.consumer,
                min_idle_time=self._visibility_ms,
                start_id=start,
                count=free - len(claimed),
            )
            next_start, entries = _text(answer[0]), answer[1]
            # An entry this worker is still running looks idle when its loop ran late past
            # the heartbeats: claimed back by its own consumer, it is not started twice.
            running = set(self._tasks.values())
            for raw_id, fields in entries:
                entry_id = _text(raw_id)
                if fields and entry_id not in running:
                    claimed.append((entry_id, fields))
            if next_start == "0-0":
                break
            start = next_start
        if not claimed:
            return 0
        async with self._client.pipeline(transaction=False) as pipe:
            for entry_id, _fields in claimed:
                pipe.xpending_range(
                    self._names.stream, self._names.group, min=entry_id, max=entry_id, count=1
                )
            details = await pipe.execute()
        self._count("redelivered", len(claimed))
        current_observers().emit(Redelivered(self._names.stream, len(claimed)))
        for (entry_id, fields), detail in zip(claimed, details, strict=True):
            if not detail:
                continue  # acknowledged meanwhile by the consumer it was taken from
            deliveries = int(detail[0]["times_delivered"])
            self._start(_Delivery(entry_id, fields, deliveries))
        return len(claimed)

    async def _forget_dead_consumers(self, quiet_ms: int | None = None) -> int:
        """Remove consumers that hold nothing and have been silent for a long while (workers
        that restarted under a new name), so `XINFO CONSUMERS` stays readable. The check and the
        removal run in one script: a consumer that reads meanwhile is never removed with
        entries in its hands (they would become unclaimable). Returns how many went."""
        if quiet_ms is None:
            quiet_ms = max(3_600_000, 10 * self._visibility_ms)
        removed: Any = await self._client.eval(
            _FORGET_SCRIPT, 1, self._names.stream, self._names.group, quiet_ms, self.consumer
        )
        return int(removed)

    async def _heartbeat(self) -> None:
        interval = self._visibility_ms / 3000
        while not self._drained.is_set():
            await _sleep_or_stop(self._drained, interval)
            if self._drained.is_set():
                return
            ids: list[Any] = list(self._tasks.values())
            if not ids:
                continue
            try:
                await self._client.xclaim(
                    self._names.stream,
                    self._names.group,
                    self.consumer,
                    min_idle_time=0,
                    message_ids=ids,
                    justid=True,
                )
            except Exception as error:
                logger.warning("refreshing in-flight entries failed (%s)", type(error).__name__)

    def _start(self, delivery: _Delivery) -> None:
        task = asyncio.get_running_loop().create_task(self._process(delivery))
        self._tasks[task] = delivery.entry_id
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.pop(task, None)
        if not task.cancelled() and task.exception() is not None:
            logger.error(
                "processing a queue entry failed (%s); it will be redelivered",
                type(task.exception()).__name__,
            )

    async def _drain(self, timeout: float) -> None:  # noqa: ASYNC109
        tasks = set(self._tasks)
        if not tasks:
            return
        _done, pending = await asyncio.wait(tasks, timeout=timeout)
        for task in pending:
            task.cancel()
        if pending:
            logger.warning(
                "%d run(s) still going after %.1fs; left unacknowledged for another worker",
                len(pending),
                timeout,
            )
            await asyncio.wait(pending, timeout=5.0)

    # -- one entry -----------------------------------------------------------------------------

    async def _process(self, delivery: _Delivery) -> None:
        try:
            entry = decode_entry(delivery.fields)
        except ValueError as error:
            logger.error("queue entry %s is unreadable (%s)", delivery.entry_id, error)
            await self._dead_letter(delivery, "malformed")
            return
        enqueued = trace.get_current_span(propagate.extract(entry.trace_carrier))
        enqueued_context = enqueued.get_span_context()
        with tracer_for(current_observers()).start_as_current_span(
            telemetry_names.queue_process_span_name(self._names.stream),
            context=Context(),
            kind=SpanKind.CONSUMER,
            links=[Link(enqueued_context)] if enqueued_context.is_valid else [],
            attributes={
                telemetry_names.ATTR_MESSAGING_SYSTEM: telemetry_names.MESSAGING_SYSTEM_REDIS,
                telemetry_names.ATTR_MESSAGING_OPERATION_TYPE: "process",
                telemetry_names.ATTR_MESSAGING_DESTINATION: self._names.stream,
            },
        ) as span:
            reason = await self._handle(delivery, entry, enqueued_context)
            if reason is not None:
                span.set_attribute(telemetry_names.ATTR_QUEUE_REASON, reason)

    async def _handle(
        self, delivery: _Delivery, entry: QueueEntry, enqueued: SpanContext
    ) -> str | None:
        """Score, store, acknowledge; returns the dead-letter reason when it comes to that."""
        scorer = self._scorers.get(entry.scorer_id)
        if scorer is None:
            logger.error(
                "queue entry %s names scorer %r, which this worker does not run",
                delivery.entry_id,
                entry.scorer_id,
            )
            if self._budgets is not None:
                self._budgets.release(Hold(entry.reservations))
            await self._dead_letter(delivery, "unknown_scorer")
            return "unknown_scorer"
        if delivery.deliveries > self._max_deliveries:
            await self._dead_letter(delivery, "max_deliveries")
            return "max_deliveries"
        current_observers().emit(InFlight(1))
        try:
            link = TraceLink.of(enqueued.trace_id, enqueued.span_id) if enqueued.is_valid else None
            with linked_runs(link):
                result = await score_call(
                    scorer,
                    entry.call,
                    entry.run_id,
                    self._privacy,
                    review_rate=self._review_rates.get(entry.scorer_id, 0.0),
                )
        finally:
            current_observers().emit(InFlight(-1))
        if self._budgets is not None and entry.reservations:
            # Every attempt's cost is spent; the first one also gives back what serve reserved.
            held = entry.reservations
            if delivery.deliveries > 1:
                held = tuple(replace(reservation, amount=0.0) for reservation in held)
            await self._budgets.asettle(Hold(held), result)
        # A judge that refused the call for good (401, 400, ...) refuses it again: store the
        # failure and dead-letter the entry now instead of burning every delivery on it.
        last_chance = delivery.deliveries >= self._max_deliveries or not result.retryable
        if result.status == "failed":
            log_failed_run(self._warn, result, quote=False)
        if result.status == "failed" and not last_chance:
            # Not acknowledged: redelivered once the visibility timeout has passed.
            self._count("failed_attempts")
            logger.info(
                "run %s failed on delivery %d of %d (%s); will retry",
                entry.run_id,
                delivery.deliveries,
                self._max_deliveries,
                result.error_type,
            )
            return None
        stored = await self._storage.store(result)
        if stored.dropped:
            return None  # stopping while a sink was down; not acknowledged: stored later
        if stored.refused or stored.unstorable:
            # A row a sink will never take: stored as an `unstorable` failure where possible,
            # and the entry (with its content) kept in the dead letters, never retried forever.
            self._count("failed")
            await self._dead_letter(delivery, "unstorable")
            return "unstorable"
        if result.status == "failed":
            self._count("failed")
            await self._dead_letter(delivery, "failed")
            return "failed"
        self._count(result.outcome)
        await self._acknowledge(delivery.entry_id)
        return None

    async def _acknowledge(self, entry_id: str) -> None:
        async with self._client.pipeline(transaction=True) as pipe:
            pipe.xack(self._names.stream, self._names.group, entry_id)
            pipe.xdel(self._names.stream, entry_id)
            await pipe.execute()
        self._count("acknowledged")

    async def _dead_letter(self, delivery: _Delivery, reason: str) -> None:
        fields: dict[Any, Any] = dict(delivery.fields)
        fields.update(
            {
                "dead.reason": reason,
                "dead.id": delivery.entry_id,
                "dead.deliveries": str(delivery.deliveries),
                "dead.consumer": self.consumer,
            }
        )
        async with self._client.pipeline(transaction=True) as pipe:
            pipe.xadd(self._names.dead_letters, fields)
            pipe.xack(self._names.stream, self._names.group, delivery.entry_id)
            pipe.xdel(self._names.stream, delivery.entry_id)
            await pipe.execute()
        self._count("dead_lettered")
        current_observers().emit(DeadLettered(self._names.stream, reason))
        logger.warning(
            "queue entry %s dead-lettered after %d delivery(ies) (%s)",
            delivery.entry_id,
            delivery.deliveries,
            reason,
        )


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


async def _sleep_or_stop(stopping: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stopping.wait(), timeout=seconds)

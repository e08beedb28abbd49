"""The Redis stream that carries accepted work from `scorewatch serve` to `scorewatch worker`.

One entry per accepted (item, scorer) evaluation. Fields (all UTF-8): `v` (format version),
`scorer` (the configured scorer id), `run_id` (the deterministic run id decided by serve),
`call` (the `AgentCall`, every field by name, as JSON: `AgentCall.to_dict` and `from_dict`, so
a new field of the call travels without a change here) and `trace` (the W3C trace context of the
request that enqueued it, as an OpenTelemetry propagator carrier).

Invariant that keeps the numbers cheap and exact: a worker deletes an entry (`XDEL`) in the same
transaction that acknowledges it (`XACK`), so the stream only ever holds unacknowledged work.
Then `XLEN` is the backlog, `XPENDING`'s count is the work being scored (or waiting to be
reclaimed), and their difference is what no worker has read yet. Admission checks the backlog
and appends in one Lua script, so replicas of serve cannot jointly overshoot the limit; nothing
is ever trimmed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from ...core.call import AgentCall
from ...live.events import QueueGauges
from ...live.spend_budget import Reservation
from ...sinks.storable import redact_url_credentials
from ..config.queue_settings import QueueSettings

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = [
    "ENTRY_VERSION",
    "EntryAppender",
    "GaugePoller",
    "QueueEntry",
    "QueueFull",
    "StreamNames",
    "connect",
    "decode_entry",
    "encode_entry",
    "ensure_group",
    "never_sent",
    "read_gauges",
]

logger = logging.getLogger("scorewatch.queue")

ENTRY_VERSION: Final = "1"

# KEYS[1]: the stream. ARGV[1]: the backlog limit, ARGV[2]: the number of entries, then per
# entry the number of field/value arguments followed by them. Returns the new entry ids, or
# -(backlog + 1) when the entries do not fit (nothing appended).
_APPEND_SCRIPT: Final = """
local limit = tonumber(ARGV[1])
local count = tonumber(ARGV[2])
local backlog = redis.call('XLEN', KEYS[1])
if backlog + count > limit then
  return -(backlog + 1)
end
local ids = {}
local position = 3
for entry = 1, count do
  local width = tonumber(ARGV[position])
  position = position + 1
  local fields = {}
  for index = 1, width do
    fields[index] = ARGV[position + index - 1]
  end
  position = position + width
  ids[entry] = redis.call('XADD', KEYS[1], '*', unpack(fields))
end
return ids
"""


@dataclass(frozen=True, slots=True)
class StreamNames:
    stream: str
    group: str
    dead_letters: str

    @classmethod
    def of(cls, settings: QueueSettings) -> StreamNames:
        return cls(settings.stream, settings.group, settings.dead_letter_stream)


@dataclass(frozen=True, slots=True)
class QueueEntry:
    """One evaluation to run, as read back from the stream."""

    scorer_id: str
    run_id: str
    call: AgentCall
    trace_carrier: dict[str, str]
    reservations: tuple[Reservation, ...] = ()
    """What serve reserved of the spend budgets for this run; the worker settles it."""


class QueueFull(Exception):
    def __init__(self, backlog: int) -> None:
        super().__init__(f"the work stream holds {backlog} unacknowledged entries")
        self.backlog = backlog


def connect(url: str, *, max_connections: int = 64, timeout: float = 5.0) -> Redis:
    """An asyncio Redis client for `url` (needs the `scale` extra).

    At most `max_connections` connections; a command that finds them all busy waits up to
    `timeout` seconds for one (instead of failing at once), and a command or a connection
    attempt that takes longer than `timeout` fails with a timeout."""
    try:
        from redis.asyncio import BlockingConnectionPool, Redis
    except ImportError as error:  # pragma: no cover - depends on the installation
        raise ImportError(
            "the Redis work queue needs the redis package: install the scale extra "
            "(pip install -e '.[scale]' in a scorewatch checkout)"
        ) from error
    pool = BlockingConnectionPool.from_url(
        url,
        max_connections=max_connections,
        timeout=timeout,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        decode_responses=False,
        health_check_interval=30,
    )
    client: Redis = Redis(connection_pool=pool)
    logger.debug("work queue at %s", redact_url_credentials(url))
    return client


def never_sent(error: BaseException) -> bool:
    """Whether a failed Redis command certainly never reached Redis: no connection could be
    made or had. Any other failure (a timeout waiting for the answer, a connection lost while
    reading it) may come after Redis ran the command."""
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError

    if isinstance(error, RedisTimeoutError | TimeoutError):
        return False
    if not isinstance(error, RedisConnectionError | ConnectionRefusedError):
        return False
    text = str(error)
    return isinstance(error, ConnectionRefusedError) or (
        "connecting to" in text or "No connection available" in text
    )


def _json(value: Any) -> str:
    # ASCII escapes carry every string JSON can hold through Redis, lone surrogates included
    # (they have no UTF-8 encoding).
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"), default=repr)


def encode_entry(
    scorer_id: str,
    run_id: str,
    call: AgentCall,
    trace_carrier: Mapping[str, str],
    reservations: Sequence[Reservation] = (),
) -> list[str]:
    """The entry's field/value list, in XADD order (`budget` only when something was reserved:
    `[[budget name, period, USD], ...]`)."""
    held = [[r.budget, r.period, r.amount] for r in reservations]
    fields = [
        "v",
        ENTRY_VERSION,
        "scorer",
        scorer_id,
        "run_id",
        run_id,
        "call",
        _json(call.to_dict()),
        "trace",
        _json(dict(trace_carrier)),
    ]
    if held:
        fields += ["budget", _json(held)]
    return fields


def decode_entry(fields: Mapping[bytes, bytes]) -> QueueEntry:
    """Raises ValueError (with a message naming no content) for an entry it cannot read."""
    text = {key.decode("utf-8", "replace"): value for key, value in fields.items()}
    version = text.get("v", b"").decode("utf-8", "replace")
    if version != ENTRY_VERSION:
        raise ValueError(f"unknown entry format version {version!r}")
    try:
        scorer_id = text["scorer"].decode("utf-8")
        run_id = text["run_id"].decode("utf-8")
        document = json.loads(text["call"])
        carrier = json.loads(text.get("trace", b"{}"))
        reservations = _reservations(json.loads(text.get("budget", b"[]")))
    except (KeyError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"malformed entry ({type(error).__name__})") from None
    if not isinstance(document, dict) or not isinstance(carrier, dict):
        raise ValueError("malformed entry (call or trace is not an object)")
    if not document.get("run_id"):  # the agent's run id, made up by serve when none was sent
        document["run_id"] = run_id
    call = AgentCall.from_dict(document)  # a ValueError naming the field, never its value
    return QueueEntry(
        scorer_id=scorer_id,
        run_id=run_id,
        call=call,
        trace_carrier={str(k): str(v) for k, v in carrier.items()},
        reservations=reservations,
    )


def _reservations(document: Any) -> tuple[Reservation, ...]:
    """The `budget` field read back; ValueError (naming no content) when it is not one."""
    try:
        return tuple(
            Reservation(str(name), int(period), float(amount)) for name, period, amount in document
        )
    except (TypeError, ValueError):
        raise ValueError("malformed entry (budget)") from None


class EntryAppender:
    """Appends a request's entries all or none, checking the backlog in the same script.

    The script is sent once and then called by its SHA (`EVALSHA`, reloaded if Redis lost it).
    """

    def __init__(self, client: Redis, stream: str, max_backlog: int) -> None:
        self._script = client.register_script(_APPEND_SCRIPT)
        self._stream = stream
        self._max_backlog = max_backlog

    async def append(self, entries: Sequence[list[str]]) -> list[str]:
        """The new entry ids; raises `QueueFull` (nothing appended) past the backlog limit."""
        if not entries:
            return []
        arguments: list[str | int] = [self._max_backlog, len(entries)]
        for fields in entries:
            arguments.append(len(fields))
            arguments.extend(fields)
        answer = await self._script(keys=[self._stream], args=arguments)
        if isinstance(answer, int):
            raise QueueFull(-answer - 1)
        return [item.decode() if isinstance(item, bytes) else str(item) for item in answer]


async def ensure_group(client: Redis, names: StreamNames) -> None:
    """Create the stream and its consumer group if missing (from the stream's first entry)."""
    from redis.exceptions import ResponseError

    try:
        await client.xgroup_create(names.stream, names.group, id="0", mkstream=True)
    except ResponseError as error:
        if "BUSYGROUP" not in str(error):
            raise


async def read_gauges(client: Redis, names: StreamNames) -> QueueGauges:
    async with client.pipeline(transaction=False) as pipe:
        pipe.xlen(names.stream)
        pipe.xpending(names.stream, names.group)
        pipe.xlen(names.dead_letters)
        try:
            backlog, pending_summary, dead = await pipe.execute()
        except Exception as error:  # the group may not exist yet
            if "NOGROUP" not in str(error):
                raise
            backlog = await client.xlen(names.stream)
            pending_summary, dead = {"pending": 0}, await client.xlen(names.dead_letters)
    pending = int(pending_summary.get("pending", 0) if isinstance(pending_summary, dict) else 0)
    backlog = int(backlog)
    return QueueGauges(
        stream=names.stream,
        backlog=backlog,
        pending=pending,
        lag=max(0, backlog - pending),
        dead_letters=int(dead),
    )


class GaugePoller:
    """Reads the queue gauges every `interval` seconds on the running loop; the latest reading
    is what the event bus's queue gauges report."""

    def __init__(self, client: Redis, names: StreamNames, interval: float) -> None:
        self._client = client
        self._names = names
        self._interval = interval
        self.latest: QueueGauges | None = None
        # True while Redis cannot be read: serve reports itself not ready.
        self.failing = False
        self._task: asyncio.Task[None] | None = None
        self._stopping: asyncio.Event | None = None

    def start(self) -> None:
        if self._task is None:
            self._stopping = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._run(self._stopping))

    async def refresh(self) -> QueueGauges | None:
        try:
            self.latest = await read_gauges(self._client, self._names)
        except Exception as error:
            if not self.failing:
                logger.warning("reading the queue gauges failed (%s)", type(error).__name__)
            self.failing = True
        else:
            self.failing = False
        return self.latest

    async def _run(self, stopping: asyncio.Event) -> None:
        task = asyncio.current_task()
        # `cancelling()` stays set when the Redis client swallows the CancelledError inside a
        # command: without this check the loop would go on and a loop shutting down (which
        # cancels every task and waits for them) would wait for it forever.
        while not stopping.is_set() and not (task is not None and task.cancelling()):
            await self.refresh()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), self._interval)

    async def stop(self) -> None:
        # Not a cancellation first: the Redis client can swallow a cancellation that lands
        # inside a command, and the loop would then go on. Ask, wait a moment, then cancel.
        task, self._task = self._task, None
        if task is None or self._stopping is None:
            return
        self._stopping.set()
        _done, pending = await asyncio.wait({task}, timeout=5.0)
        for left in pending:
            left.cancel()

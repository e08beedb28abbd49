"""What the trace buffer may hold, and who holds it.

`BufferLimits` are the bounds. `Ledger` counts every byte the buffer holds against them, in
all and per client: a span's own protobuf bytes and its scope's name, and its resource's
attributes once for all the spans that share them, for as long as any of those spans is held.

A client (`Owner`) is where spans came from: the address that sent them and their resource's
`service.name`. Serve's intake offers each export request whole (`TraceBuffer.offer`): it is
kept when every client in it stays within its share (`client_share` of `max_bytes` and of
`max_traces`) and the buffer within its bounds, or else refused whole, so that the sender can
send it again later and nothing of it is half kept. The ledger tells what a request costs
(`costs`) apart from whether it fits (`refusal`), so that the buffer may first let go of the
client's complete traces (`TraceBuffer`) and ask again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .spans import SpanRecord, UnsampledSpans

__all__ = ["ANYONE", "BufferLimits", "Held", "Ledger", "Offer", "Owner", "Refusal"]

Owner = tuple[str, str]
"""Who sent a span: (the address it came from, its resource's `service.name` or "")."""

ANYONE: Owner = ("", "")
"""The one owner of every span read in batch (files and data the caller chose)."""

Refusal = Literal["client_share", "max_bytes", "max_traces", "too_large", "shutdown"]


class BufferLimits(BaseModel):
    """The bounds and timings of the buffer (the `[traces]` table's assembly settings)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_traces: int = Field(default=10_000, ge=1)
    max_spans_per_trace: int = Field(default=2_000, ge=1)
    max_bytes: int = Field(
        default=64 << 20,
        ge=1024,
        description="Bytes held in all: each span's protobuf size and its scope's name, and "
        "each resource's attributes once.",
    )
    client_share: float = Field(
        default=0.5,
        gt=0,
        le=1,
        description="The part of max_bytes and of max_traces one client (address and "
        "service.name) may hold; the rest stays open to the others.",
    )
    max_age_s: float = Field(default=600.0, gt=0)
    quiet_period_s: float = Field(default=5.0, ge=0)
    linger_s: float = Field(default=30.0, ge=0)
    parent_wait_s: float = Field(default=60.0, ge=0)

    @model_validator(mode="after")
    def _completes_before_expiry(self) -> BufferLimits:
        # A span waits up to quiet_period_s + parent_wait_s before it is handed out; a trace
        # expiring sooner would lose every span that waits that long.
        if self.max_age_s <= self.quiet_period_s + self.parent_wait_s:
            raise ValueError(
                f"max_age_s ({self.max_age_s:g}) must be greater than quiet_period_s + "
                f"parent_wait_s ({self.quiet_period_s + self.parent_wait_s:g})"
            )
        return self

    @property
    def client_bytes(self) -> int:
        """The most bytes one client may hold."""
        return max(1, int(self.max_bytes * self.client_share))

    @property
    def client_traces(self) -> int:
        """The most traces one client may hold."""
        return max(1, int(self.max_traces * self.client_share))


@dataclass(frozen=True, slots=True)
class Offer:
    """What became of one export request offered whole to the buffer.

    Kept (`refused` None): `dropped` of its spans were not kept all the same, for good (a span
    sent twice, or past `max_spans_per_trace`). Refused: nothing of it was kept, for the bound
    it would pass (`client_share`, `max_bytes`, `max_traces`: not now, it may fit later;
    `too_large`: it holds more than one client may ever hold; `shutdown`), said in `message`.
    """

    dropped: int = 0
    refused: Refusal | None = None
    message: str = ""

    @property
    def retry_later(self) -> bool:
        """Whether the same request may be kept when sent again later."""
        return self.refused is not None and self.refused != "too_large"


@dataclass(slots=True)
class Held:
    """Bytes and traces: held by a client, or a request's cost to keep."""

    bytes: int = 0
    traces: int = 0


@dataclass(slots=True)
class _Resource:
    refs: int
    size: int


class Ledger:
    """The bytes and traces held, in all and per owner, and whether more may be."""

    def __init__(self, limits: BufferLimits) -> None:
        self.limits = limits
        self.bytes = 0
        self.traces = 0
        self._owners: dict[Owner, Held] = {}
        # id() of a resource's attribute mapping, shared by the spans of one resource: the
        # mapping stays alive while one of them is held, and is counted as long.
        self._resources: dict[int, _Resource] = {}

    def held_by(self, owner: Owner) -> tuple[int, int]:
        """(bytes, traces) the owner holds."""
        held = self._owners.get(owner)
        return (held.bytes, held.traces) if held is not None else (0, 0)

    def span_cost(self, span: SpanRecord, counted: set[int] | None = None) -> int:
        """The bytes keeping `span` adds: its own, and its resource's unless already held (or
        in `counted`, which this adds it to)."""
        return span.size + self._resource_cost(span.resource, span.resource_size, counted)

    def _resource_cost(
        self, resource: Mapping[str, Any], size: int, counted: set[int] | None
    ) -> int:
        key = id(resource)
        if key in self._resources or (counted is not None and key in counted):
            return 0
        if counted is not None:
            counted.add(key)
        return size

    def costs(
        self,
        spans: Iterable[SpanRecord],
        owner_of: Callable[[SpanRecord | UnsampledSpans], Owner],
        opens_trace: Callable[[Owner, str], bool],
        unsampled: Iterable[UnsampledSpans] = (),
    ) -> dict[Owner, Held]:
        """What keeping the spans (and the `unsampled` ones, counted as held by their sizes)
        would add, per client: bytes, and traces opened.

        One loop without a call per span (this runs for every span received): the owner and
        the resource's cost are looked up when the resource changes (a request lists the spans
        of one resource together), and whether a span opens a trace when its trace changes
        (`opens_trace` answers the same for the same owner and trace within one request)."""
        costs: dict[Owner, Held] = {}
        counted: set[int] = set()
        opened: set[tuple[Owner, str]] = set()
        resource: Mapping[str, Any] | None = None
        owner: Owner = ANYONE
        cost = Held()
        trace_id: str | None = None
        for span in spans:
            if span.resource is not resource:
                resource = span.resource
                owner = owner_of(span)
                cost = costs.get(owner) or costs.setdefault(owner, Held())
                cost.bytes += self._resource_cost(resource, span.resource_size, counted)
                trace_id = None
            cost.bytes += span.size
            if span.trace_id != trace_id:
                trace_id = span.trace_id
                key = (owner, trace_id)
                if key not in opened and opens_trace(owner, trace_id):
                    opened.add(key)
                    cost.traces += 1
        for group in unsampled:
            owner = owner_of(group)
            cost = costs.get(owner) or costs.setdefault(owner, Held())
            cost.bytes += sum(group.sizes) + self._resource_cost(
                group.resource, group.resource_size, counted
            )
            key = (owner, group.trace_id)
            if key not in opened and opens_trace(owner, group.trace_id):
                opened.add(key)
                cost.traces += 1
        return costs

    def refusal(self, costs: Mapping[Owner, Held]) -> Offer | None:
        """Why a request of these `costs` cannot be kept now, or None when it can."""
        limits = self.limits
        for cost in costs.values():
            if cost.bytes > limits.client_bytes:
                return Offer(
                    refused="too_large",
                    message=f"the request holds {cost.bytes} bytes of spans of one client; a "
                    f"client may hold {limits.client_bytes} (traces.buffer.max_bytes × "
                    "client_share)",
                )
            if cost.traces > limits.client_traces:
                return Offer(
                    refused="too_large",
                    message=f"the request opens {cost.traces} traces of one client; a client "
                    f"may hold {limits.client_traces} (traces.buffer.max_traces × client_share)",
                )
        for owner, cost in costs.items():
            if self.over_share(owner, cost):
                held_bytes, held_traces = self.held_by(owner)
                return Offer(
                    refused="client_share",
                    message=f"this client (address and service.name) holds {held_bytes} bytes "
                    f"in {held_traces} traces not yet complete, near its part of the trace "
                    "buffer (traces.buffer.client_share); retry once they are scored",
                )
        over = self.over_total(costs)
        if over == "max_bytes":
            return Offer(
                refused="max_bytes",
                message=f"the trace buffer holds {self.bytes} bytes, near traces.buffer."
                "max_bytes; retry once they are scored",
            )
        if over == "max_traces":
            return Offer(
                refused="max_traces",
                message=f"the trace buffer holds {self.traces} traces (traces.buffer."
                "max_traces); retry once they are scored",
            )
        return None

    def over_share(self, owner: Owner, cost: Held) -> bool:
        """Whether `owner` would pass its share of the buffer by keeping `cost` more."""
        held_bytes, held_traces = self.held_by(owner)
        return (
            held_bytes + cost.bytes > self.limits.client_bytes
            or held_traces + cost.traces > self.limits.client_traces
        )

    def over_total(self, costs: Mapping[Owner, Held]) -> Literal["max_bytes", "max_traces"] | None:
        """The bound of the whole buffer that keeping `costs` more would pass, if any."""
        if self.bytes + sum(cost.bytes for cost in costs.values()) > self.limits.max_bytes:
            return "max_bytes"
        if self.traces + sum(cost.traces for cost in costs.values()) > self.limits.max_traces:
            return "max_traces"
        return None

    def open_trace(self, owner: Owner) -> None:
        self.traces += 1
        self._owners.setdefault(owner, Held()).traces += 1

    def close_trace(self, owner: Owner) -> None:
        self.traces -= 1
        self._release(owner, 0, 1)

    def hold(self, span: SpanRecord, owner: Owner) -> None:
        """Count a span kept (and its resource, with the first of its spans)."""
        self.hold_size(span.resource, span.resource_size, span.size, owner)

    def hold_size(
        self,
        resource: Mapping[str, Any],
        resource_size: int,
        size: int,
        owner: Owner,
        spans: int = 1,
    ) -> None:
        """Count `spans` spans of `size` bytes in all kept (spans kept as their ids only:
        `UnsampledSpans`), and their resource with the first of its spans."""
        added = size
        key = id(resource)
        held = self._resources.get(key)
        if held is None:
            self._resources[key] = _Resource(spans, resource_size)
            added += resource_size
        else:
            held.refs += spans
        self.bytes += added
        self._owners.setdefault(owner, Held()).bytes += added

    def release(self, span: SpanRecord, owner: Owner) -> None:
        """Count a span let go (and its resource, with the last of its spans)."""
        self.release_size(span.resource, span.size, owner)

    def release_size(
        self, resource: Mapping[str, Any], size: int, owner: Owner, spans: int = 1
    ) -> None:
        """`release` of spans counted by `hold_size`."""
        freed = size
        key = id(resource)
        held = self._resources[key]
        held.refs -= spans
        if held.refs == 0:
            del self._resources[key]
            freed += held.size
        self.bytes -= freed
        self._release(owner, freed, 0)

    def _release(self, owner: Owner, nbytes: int, traces: int) -> None:
        held = self._owners[owner]
        held.bytes -= nbytes
        held.traces -= traces
        if held.bytes == 0 and held.traces == 0:
            del self._owners[owner]

"""`ServiceState`: everything a request handler may touch, built once at start-up."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fastapi import Request

from ..config.file import ServeConfig
from ..config.label_stores import LabelStores
from ..config.scorer_entries import ConfiguredScorer
from ..config.stores import ResultReader, SinkProbe
from ..intake.admission import draws_run_id
from ..intake.interface import Intake
from ..intake.label_admission import AnnotatorBudget
from .agreement_watch import AgreementWatch

if TYPE_CHECKING:
    from .peers import PeerClient
from .score_pages import ReaderSlots

__all__ = ["ServiceState", "service_of"]


@dataclass(slots=True)
class ServiceState:
    config: ServeConfig
    scorers: dict[str, ConfiguredScorer]
    intake: Intake
    reader: ResultReader | None
    probes: Sequence[SinkProbe]
    token: str | None = None
    # Services the intake needs (the Redis work queue), checked by /readyz as `<name>`.
    dependencies: Sequence[SinkProbe] = ()
    draining: bool = False
    # `/v1/*` requests answered 503 by the guard while draining (they never reach the intake).
    rejected_draining: int = 0
    # Where `POST /v1/labels` stores labels and `GET /v1/agreement` reads them.
    labels: LabelStores | None = None
    # Label counts and agreement as metrics (None without a label store).
    agreement: AgreementWatch | None = None
    # Called once the HTTP server stops; flushes telemetry exporters.
    on_close: list[Callable[[], Any]] = field(default_factory=list)
    # The other worker processes of `serve --workers N` (None: this process is the service).
    peers: PeerClient | None = None
    # The `GET /v1/scores` pages being read (at most server.max_readers).
    page_readers: ReaderSlots = field(init=False)
    # Each annotator's budget of labels (`POST /v1/labels`).
    label_budget: AnnotatorBudget = field(init=False)
    # Whether an item naming no scorers, sent without a run id, has one made up (`item_of`).
    draws_run_id: bool = field(init=False)

    def __post_init__(self) -> None:
        self.page_readers = ReaderSlots(self.config.server.max_readers)
        self.draws_run_id = draws_run_id(c.entry for c in self.scorers.values())
        server = self.config.server
        self.label_budget = AnnotatorBudget(server.labels_per_second, server.label_burst)

    @property
    def known_scorers(self) -> list[str]:
        return sorted(self.scorers)

    def stats(self) -> dict[str, int]:
        """The intake's counts plus `rejected_draining`."""
        snapshot = self.intake.stats()
        snapshot["rejected_draining"] = self.rejected_draining
        return snapshot


def service_of(request: Request) -> ServiceState:
    state: ServiceState = request.app.state.service
    return state

"""A simulated summarizer agent and the stream of requests it serves.

The agent "summarizes" a document by picking one of the dataset's candidate summaries for it,
according to a quality mix: while healthy it mostly returns faithful summaries (some verbatim
copies and a few incomplete ones); once degraded — as if a prompt change or a model swap went
wrong — it mostly returns hallucinated or incomplete ones. The summaries are real texts with
annotated quality, so the scores a judge gives them are known in advance.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import Counter
from collections.abc import AsyncIterator, Mapping
from typing import Final

from .dataset import DemoDataset, DemoDocument, DemoSummary, SummaryQuality, load_demo_dataset

__all__ = [
    "DEGRADED_MIX",
    "HEALTHY_MIX",
    "SimulatedSummarizer",
    "request_stream",
]

HEALTHY_MIX: Final[Mapping[SummaryQuality, float]] = {
    SummaryQuality.FAITHFUL: 0.80,
    SummaryQuality.VERBATIM: 0.12,
    SummaryQuality.INCOMPLETE: 0.08,
    SummaryQuality.HALLUCINATED: 0.0,
}
DEGRADED_MIX: Final[Mapping[SummaryQuality, float]] = {
    SummaryQuality.FAITHFUL: 0.15,
    SummaryQuality.VERBATIM: 0.0,
    SummaryQuality.INCOMPLETE: 0.35,
    SummaryQuality.HALLUCINATED: 0.50,
}


class SimulatedSummarizer:
    """`await agent.summarize(document_text)` returns a summary of the document.

    Set `degraded = True` to switch to the degraded quality mix. `latency_s` bounds the agent's
    own (simulated) response time. `served` counts the summaries returned, by quality.
    """

    def __init__(
        self,
        dataset: DemoDataset | None = None,
        *,
        seed: int | None = None,
        latency_s: tuple[float, float] = (0.02, 0.08),
        healthy_mix: Mapping[SummaryQuality, float] = HEALTHY_MIX,
        degraded_mix: Mapping[SummaryQuality, float] = DEGRADED_MIX,
    ) -> None:
        self.dataset = dataset if dataset is not None else load_demo_dataset()
        self.degraded = False
        self.latency_s = latency_s
        self._random = random.Random(seed)
        self._mixes = {False: dict(healthy_mix), True: dict(degraded_mix)}
        self.served: Counter[SummaryQuality] = Counter()

    def choose(self, document: DemoDocument) -> DemoSummary:
        """The summary the agent gives for this document in its current state."""
        mix = self._mixes[self.degraded]
        qualities = [quality for quality, weight in mix.items() if weight > 0]
        weights = [mix[quality] for quality in qualities]
        quality = self._random.choices(qualities, weights)[0]
        return document.summary(quality)

    async def summarize(self, document: str) -> str:
        """The agent's entry point: a document's text in, its summary out."""
        found = self.dataset.find_document(document)
        if found is None:
            raise ValueError("the simulated summarizer only knows the demo dataset's documents")
        summary = self.choose(found)
        low, high = self.latency_s
        await asyncio.sleep(self._random.uniform(low, high))
        self.served[summary.quality] += 1
        return summary.text


async def request_stream(
    dataset: DemoDataset,
    *,
    rate: float,
    seed: int | None = None,
    stop: asyncio.Event | None = None,
) -> AsyncIterator[DemoDocument]:
    """Documents to summarize, `rate` per second on average (jittered, never bursting), until
    `stop` is set. Every document comes up once before any comes up again."""
    if rate <= 0:
        raise ValueError(f"rate must be > 0 requests per second, got {rate}")
    rng = random.Random(seed)
    interval = 1.0 / rate
    documents = list(dataset.documents)
    due = time.monotonic()
    while stop is None or not stop.is_set():
        rng.shuffle(documents)
        for document in documents:
            if stop is not None and stop.is_set():
                return
            yield document
            due += interval * rng.uniform(0.5, 1.5)
            wait = due - time.monotonic()
            if wait > 0:
                if stop is None:
                    await asyncio.sleep(wait)
                else:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), timeout=wait)
            else:
                due = time.monotonic()  # fell behind (a busy machine): do not burst to catch up

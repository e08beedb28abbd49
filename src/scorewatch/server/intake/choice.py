"""Choosing serve's intake: in this process (the default) or a Redis stream (`[queue] url`)."""

from __future__ import annotations

from collections.abc import Mapping

from ...live.entry import LiveScorerEntry
from ..config.budget_settings import build_budgets
from ..config.file import ServeConfig, queue_url
from ..config.stores import Stores
from .in_process import InProcessIntake
from .interface import Intake
from .scoring_loop import ScoringLoop

__all__ = ["build_intake"]


def build_intake(
    config: ServeConfig, entries: Mapping[str, LiveScorerEntry], stores: Stores
) -> Intake:
    url = queue_url(config)
    budgets = build_budgets(config)
    if url is None:
        return InProcessIntake(
            entries,
            sinks=stores.sinks,
            max_concurrency=config.live.max_concurrency,
            max_queue=config.live.max_queue,
            max_queue_bytes=config.live.max_queue_bytes,
            sink_retry_timeout=config.sinks.retry_timeout,
            max_queue_delay=config.live.max_queue_delay,
            # The HTTP loop only parses, admits and answers.
            scoring=ScoringLoop(),
            privacy=config.privacy,
            budgets=budgets,
        )
    from ...sinks.postgres import PostgresSink
    from ..queue.stream import StreamNames, connect
    from .redis_queue import RedisIntake

    reader = stores.reader
    return RedisIntake(
        entries,
        client=connect(
            url, max_connections=config.queue.max_connections, timeout=config.queue.timeout
        ),
        names=StreamNames.of(config.queue),
        max_backlog=config.queue.max_backlog,
        # Workers write the results; serve only closes its sinks and reads the shared one.
        sinks=stores.sinks,
        lookup=reader if isinstance(reader, PostgresSink) else None,
        stats_interval=config.queue.stats_interval,
        wait_limit=config.server.wait_timeout,
        budgets=budgets,
    )

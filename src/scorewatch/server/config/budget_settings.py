"""`[budget]` and `[[scorers]] budget_usd_per_day`: the judge spend budgets of `scorewatch serve`
and `scorewatch worker` (docs/live.md, "Spend budgets").

`[budget] usd_per_day` caps the judge spend of every judged scorer together per UTC day; a
scorer entry's `budget_usd_per_day` caps its own. Sampling slows so the expected spend fits and
stops when a budget is spent (`skipped_budget`). The spending is kept in Redis, shared by every
replica and worker, when `[budget] url` (or `url_env`) names one, else when `[queue]` uses Redis
(its URL); otherwise in each process.

```toml
[budget]
usd_per_day = 20.0

[[scorers]]
id = "faithfulness"
kind = "faithfulness"
budget_usd_per_day = 5.0
```
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pydantic import Field

from ...live.budgets import Budgets
from .redis_url import RedisUrlTable

if TYPE_CHECKING:
    from .file import ServeConfig

__all__ = ["BudgetSettings", "build_budgets"]

logger = logging.getLogger("scorewatch.server")


class BudgetSettings(RedisUrlTable):
    TABLE = "[budget]"

    usd_per_day: float | None = Field(
        None,
        gt=0,
        allow_inf_nan=False,
        description="USD of judge spend per UTC day, every judged scorer together; none: only "
        "the scorers' own budget_usd_per_day.",
    )
    prefix: str = Field("scorewatch:budget:", min_length=1, description="Redis key prefix.")


def build_budgets(config: ServeConfig) -> Budgets | None:
    """The configuration's spend budgets, or None when it sets none."""
    from .file import queue_url

    settings = config.budget or BudgetSettings()
    per_scorer = {
        spec.id: spec.budget_usd_per_day
        for spec in config.scorers
        if spec.budget_usd_per_day is not None
    }
    if settings.usd_per_day is None and not per_scorer:
        return None
    url = settings.resolved_url() or queue_url(config)
    if url is None and config.server.workers != 1:
        logger.warning(
            "spend budgets are kept per process: with [server] workers other than 1, each "
            "process spends the whole budget; set [budget] url to share them through Redis"
        )
    return Budgets.build(settings.usd_per_day, per_scorer, redis_url=url, prefix=settings.prefix)

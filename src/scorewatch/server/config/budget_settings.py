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
import os
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ...live.budgets import Budgets

if TYPE_CHECKING:
    from .file import ServeConfig

__all__ = ["BudgetSettings", "build_budgets"]

logger = logging.getLogger("scorewatch.server")


class BudgetSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    usd_per_day: float | None = Field(
        None,
        gt=0,
        allow_inf_nan=False,
        description="USD of judge spend per UTC day, every judged scorer together; none: only "
        "the scorers' own budget_usd_per_day.",
    )
    url: str | None = Field(
        None, description="redis:// URL keeping the spending; none: [queue]'s Redis, if any."
    )
    url_env: str | None = Field(
        None, description="Environment variable holding that URL (keeps a password out)."
    )
    prefix: str = Field("scorewatch:budget:", min_length=1, description="Redis key prefix.")

    @field_validator("url")
    @classmethod
    def _no_password(cls, value: str | None) -> str | None:
        from .file import no_password

        return None if value is None else no_password(value, "[budget] url", "url_env")

    @model_validator(mode="after")
    def _one_url(self) -> BudgetSettings:
        if self.url is not None and self.url_env is not None:
            raise ValueError("set [budget] url or url_env, not both")
        return self

    def resolved_url(self) -> str | None:
        if self.url_env is not None:
            value = os.environ.get(self.url_env)
            if not value:
                from .file import ConfigError

                raise ConfigError(f"[budget] url_env names {self.url_env!r}, which is not set")
            return value
        return self.url


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

"""Logging for a `scorewatch serve` or `scorewatch worker` process."""

from __future__ import annotations

import logging
import sys

from .config import ServeConfig

__all__ = ["configure_process_logging"]


def configure_process_logging(config: ServeConfig) -> None:
    """Records to stderr; scorewatch's own at `server.log_level`, libraries' (litellm logs every
    completion at INFO) at WARNING."""
    logging.basicConfig(
        level=logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("scorewatch").setLevel(config.server.log_level.upper())

"""`[queue]`: the durable work queue between `scorewatch serve` and `scorewatch worker`.

Without a URL (the default) serve scores in its own process, as it always did. With one, serve
appends accepted work to a Redis stream and `scorewatch worker` processes score it.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from ...sinks.storable import redact_url_credentials
from .redis_url import RedisUrlTable

__all__ = ["QueueSettings", "check_queue_url"]

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_KEY = re.compile(r"^[A-Za-z0-9_.:{}\-]{1,128}$")


def check_queue_url(url: str) -> str:
    """A `redis://` or `rediss://` URL (`redis://HOST:PORT/DB`); raises ValueError otherwise."""
    parts = urlsplit(url)
    if parts.scheme not in ("redis", "rediss", "unix") or not (parts.hostname or parts.path):
        raise ValueError(f"expected redis://HOST:PORT/DB, got {redact_url_credentials(url)!r}")
    return url


class QueueSettings(RedisUrlTable):
    """The work stream's Redis (`url` or `url_env`; neither: the in-process queue) and its keys
    and bounds. Stricter than the other Redis tables: the URL must be a Redis one, and an unset
    or empty `url_env` variable means the in-process queue, not an error."""

    TABLE = "[queue]"

    stream: str = Field("scorewatch:work", description="Key of the work stream.")
    group: str = Field("scorewatch-workers", description="Consumer group of the workers.")
    max_backlog: int = Field(
        100_000, ge=1, le=100_000_000, description="Unacknowledged entries before 429s."
    )
    visibility_timeout: float = Field(
        60.0, gt=0, le=86_400, description="Seconds before a silent worker's entries are claimed."
    )
    max_deliveries: int = Field(
        5, ge=1, le=1000, description="Deliveries of an entry before it is dead-lettered."
    )
    claim_interval: float = Field(
        5.0, gt=0, le=3600, description="Seconds between two looks for entries to reclaim."
    )
    stats_interval: float = Field(
        5.0, gt=0, le=3600, description="Seconds between two readings of the queue gauges."
    )
    max_connections: int = Field(
        64,
        ge=1,
        le=10_000,
        description="Redis connections per process; a request waits for a free one.",
    )
    timeout: float = Field(
        5.0,
        gt=0,
        le=300,
        description="Seconds for a Redis command, a connection, and waiting for a free one.",
    )

    @field_validator("url")
    @classmethod
    def _no_password(cls, value: str | None) -> str | None:
        if value is not None and urlsplit(value).password is not None:
            raise ValueError(
                f"{redact_url_credentials(value)!r} holds a password; secrets never go in the "
                "file: put the URL in an environment variable and name it in url_env"
            )
        return None if value is None else check_queue_url(value)

    @field_validator("url_env")
    @classmethod
    def _check_env(cls, value: str | None) -> str | None:
        if value is not None and not _ENV_NAME.match(value):
            raise ValueError(f"expected the NAME of an environment variable, got {value!r}")
        return value

    @field_validator("stream", "group")
    @classmethod
    def _check_key(cls, value: str) -> str:
        if not _KEY.match(value):
            raise ValueError(
                f"1-128 characters: letters, digits, '_', '.', ':', '-', braces; got {value!r}"
            )
        return value

    @property
    def dead_letter_stream(self) -> str:
        return f"{self.stream}:dead"

    def resolved_url(self) -> str | None:
        """`url`, else the value of `url_env` (None when neither is set or the variable is
        empty); raises ValueError for a malformed URL from the environment."""
        if self.url is not None:
            return self.url
        if self.url_env is None:
            return None
        value = os.environ.get(self.url_env, "").strip()
        return check_queue_url(value) if value else None

"""The `url` / `url_env` pair of a table that may name a Redis (`[cache]`, `[budget]`): a URL
without a password in the file, or the name of the environment variable holding one."""

from __future__ import annotations

import os
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["RedisUrlTable"]


class RedisUrlTable(BaseModel):
    """A table with an optional Redis URL; `TABLE` names it in errors (`[cache]`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    TABLE: ClassVar[str] = "[table]"

    url: str | None = Field(None, description="redis:// URL, without a password.")
    url_env: str | None = Field(
        None, description="Environment variable holding that URL (keeps a password out)."
    )

    @field_validator("url")
    @classmethod
    def _no_password(cls, value: str | None) -> str | None:
        from .file import no_password

        return None if value is None else no_password(value, f"{cls.TABLE} url", "url_env")

    @model_validator(mode="after")
    def _one_url(self) -> RedisUrlTable:
        if self.url is not None and self.url_env is not None:
            raise ValueError(f"set {self.TABLE} url or url_env, not both")
        return self

    def resolved_url(self) -> str | None:
        """`url`, else the value of `url_env` (a `ConfigError` when that is not set)."""
        if self.url_env is not None:
            value = os.environ.get(self.url_env)
            if not value:
                from .file import ConfigError

                raise ConfigError(f"{self.TABLE} url_env names {self.url_env!r}, which is not set")
            return value
        return self.url

"""`scorewatch.toml`: the service's configuration file, validated by pydantic.

Every table forbids unknown keys, so a typo is reported by name instead of silently ignored.
`load_config(path)` reads the file and raises `ConfigError` whose message lists every problem as
`<key path>: <what is wrong>`, e.g. `scorers[1].sampling: Input should be less than or equal to 1`.

Secrets never come from the file: the service's bearer token is read from the environment
variable named by `server.auth_token_env`, and a judge API key from the one named by
`judge.api_key_env`.
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ...errors import ScorewatchError
from ...privacy import PrivacyPolicy
from ...sinks.storable import is_secret_key
from .budget_settings import BudgetSettings
from .cache_settings import CacheSettings
from .queue_settings import QueueSettings
from .traces_settings import TracesSettings

__all__ = [
    "DEFAULT_LISTEN",
    "DEFAULT_MAX_BODY_BYTES",
    "ConfigError",
    "JudgeDefaults",
    "LiveSettings",
    "QueueSettings",
    "ScorerSettings",
    "ServeConfig",
    "ServerSettings",
    "SinkSettings",
    "TelemetrySettings",
    "TracesSettings",
    "format_validation_error",
    "is_loopback_host",
    "key_path",
    "load_config",
    "parse_listen",
    "queue_url",
    "with_queue_url",
]

DEFAULT_LISTEN = "127.0.0.1:8787"
DEFAULT_MAX_BODY_BYTES = 1 << 20
_SCORER_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
_IMPORT_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ConfigError(ScorewatchError):
    """The configuration file is missing, unreadable, not TOML, or invalid."""

    def __init__(self, message: str, *, problems: Sequence[str] = ()) -> None:
        super().__init__(
            message,
            code="SERVE_CONFIG_INVALID",
            domain="SERVER",
            category="USER",
            details={"problems": list(problems)},
        )
        self.problems = list(problems)


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def parse_listen(listen: str) -> tuple[str, int]:
    """`"host:port"` (IPv6 as `"[::1]:8787"`) to `(host, port)`."""
    host, sep, port = listen.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"expected HOST:PORT (e.g. {DEFAULT_LISTEN!r}), got {listen!r}")
    if host.startswith("["):
        if not host.endswith("]"):
            raise ValueError(f"unbalanced brackets around an IPv6 address in {listen!r}")
        host = host[1:-1]
    return host, int(port)


def is_loopback_host(host: str) -> bool:
    """True for `localhost` and loopback addresses (127.0.0.0/8, ::1); any other name is not."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _env_name(value: str | None) -> str | None:
    if value is not None and not _ENV_NAME.match(value):
        raise ValueError(
            f"expected the NAME of an environment variable (letters, digits, _), got {value!r}; "
            "secrets never go in the file itself"
        )
    return value


def _no_inline_secrets(options: dict[str, Any]) -> dict[str, Any]:
    """Model options hold no secret (`api_key`, `*_token`, `password`, ...): secrets come from
    the environment, never from the file (a judge key: `[judge] api_key_env`)."""
    found = sorted(key for key in options if is_secret_key(key))
    if found:
        raise ValueError(
            f"{', '.join(found)}: secrets never go in the file; name the environment variable "
            "that holds the judge key in [judge] api_key_env"
        )
    return options


def no_password(value: str, what: str, env_key: str) -> str:
    """A DSN or URL without a password in it (`user:PASSWORD@`, `password=`)."""
    has_password = re.search(r"(^|\s)password\s*=", value) is not None
    if not has_password and "://" in value:
        has_password = urlsplit(value).password is not None
    if has_password:
        raise ValueError(
            f"{what} holds a password; secrets never go in the file: put the whole {what} in "
            f"an environment variable and name it in {env_key}"
        )
    return value


class ServerSettings(_Table):
    """`[server]`: where the service listens, how it authenticates and protects itself."""

    listen: str = Field(
        DEFAULT_LISTEN, description="HOST:PORT to listen on (port 0: any free port)."
    )
    auth_token_env: str | None = Field(
        None, description="Name of the environment variable holding the bearer token."
    )
    max_body_bytes: int = Field(DEFAULT_MAX_BODY_BYTES, ge=1024, le=64 << 20)
    max_batch_items: int = Field(1000, ge=1, le=1000)
    body_timeout: float = Field(
        30.0, gt=0, le=3600, description="Longest time to receive a request body, s (then 408)."
    )
    header_timeout: float = Field(
        10.0,
        gt=0,
        le=600,
        description="Longest time for a request's head (request line and headers) to arrive, "
        "from the connection's opening or the request's first byte, s (then 408, closed).",
    )
    max_connections: int = Field(
        1000,
        ge=8,
        le=1_000_000,
        description="Open connections at most, both listeners together; past it the oldest "
        "connection waiting for a request is closed (none: the new one gets 503).",
    )
    max_readers: int = Field(
        4,
        ge=1,
        le=1000,
        description="GET /v1/scores pages read at once; one more is answered 429 at once.",
    )
    labels_per_second: float = Field(
        10.0,
        gt=0,
        le=1_000_000,
        allow_inf_nan=False,
        description="POST /v1/labels: labels one annotator may send a second, on average "
        "(each worker process counts its own); past their budget, 429 with Retry-After.",
    )
    label_burst: int = Field(
        1000,
        # A whole request (at most 500 labels, MAX_LABELS) must fit in a full budget.
        ge=500,
        le=10_000_000,
        description="POST /v1/labels: labels one annotator may send at once.",
    )
    wait_timeout: float = Field(30.0, gt=0, le=600, description="Longest `?wait=true` wait, s.")
    shutdown_timeout: float = Field(30.0, ge=0, le=3600, description="Drain budget on SIGTERM, s.")
    retry_after: int = Field(1, ge=1, le=3600, description="Retry-After (s) sent with 429 / 503.")
    access_log: bool = False
    log_level: Literal["critical", "error", "warning", "info", "debug"] = "info"
    docs: bool = Field(True, description="Serve the OpenAPI document and /docs.")
    workers: int | None = Field(
        None,
        ge=1,
        le=256,
        description="Processes serving the port (none: one per core); each has its own "
        "in-process queue.",
    )
    http: Literal["auto", "httptools", "h11"] = Field(
        "auto", description="HTTP/1.1 parser: httptools + uvloop when installed (auto), or h11."
    )

    @field_validator("listen")
    @classmethod
    def _check_listen(cls, value: str) -> str:
        parse_listen(value)
        return value

    @field_validator("auth_token_env")
    @classmethod
    def _check_env(cls, value: str | None) -> str | None:
        return _env_name(value)

    @property
    def host(self) -> str:
        return parse_listen(self.listen)[0]

    @property
    def port(self) -> int:
        return parse_listen(self.listen)[1]


class JudgeDefaults(_Table):
    """`[judge]`: the default judge of LLM-judged scorers (a litellm model id and its options)."""

    model: str | None = Field(None, min_length=1)
    model_options: dict[str, Any] = Field(default_factory=dict)
    api_key_env: str | None = Field(
        None, description="Environment variable holding the judge API key (passed as api_key)."
    )

    @field_validator("api_key_env")
    @classmethod
    def _check_env(cls, value: str | None) -> str | None:
        return _env_name(value)

    @field_validator("model_options")
    @classmethod
    def _no_inline_secret_names(cls, value: dict[str, Any]) -> dict[str, Any]:
        if "api_key_env" in value:
            raise ValueError("api_key_env belongs in [judge] itself, not in model_options")
        return _no_inline_secrets(value)


class ScorerSettings(_Table):
    """`[[scorers]]`: one scorer, prebuilt (`kind`) or custom (`factory`), with its sampling."""

    id: str = Field(description="The id clients name in requests and results are stored under.")
    kind: str | None = Field(None, description="A prebuilt scorer's name, e.g. `summarization`.")
    factory: str | None = Field(
        None, description="`module:attribute` of a zero-argument function returning a Scorer."
    )
    sampling: float = Field(
        1.0, ge=0.0, le=1.0, description="Share of traffic scored, keyed on the trace id."
    )
    options: dict[str, Any] = Field(default_factory=dict)
    model: str | None = Field(None, min_length=1, description="Overrides [judge] model.")
    model_options: dict[str, Any] | None = Field(
        None, description="Merged over [judge] model_options for this scorer."
    )
    targets: list[str] | None = Field(
        None, description="Score only traffic of these targets (a filter before sampling)."
    )
    filter: str | None = Field(
        None, description="`module:attribute` of a predicate over the call; falsy skips it."
    )
    cache: bool = Field(True, description="Reuse verdicts when [cache] is set.")
    budget_usd_per_day: float | None = Field(
        None,
        gt=0,
        allow_inf_nan=False,
        description="This scorer's own judge spend budget, USD per UTC day (with [budget]).",
    )
    review_rate: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        allow_inf_nan=False,
        description="Share of this scorer's scored runs marked for human review "
        "(`GET /v1/review`), chosen deterministically from the run id.",
    )

    @field_validator("id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        if not _SCORER_ID.match(value):
            raise ValueError(
                "a scorer id is 1-64 characters: letters, digits, '_', '.', '-', "
                f"starting with a letter or digit; got {value!r}"
            )
        return value

    @field_validator("model_options")
    @classmethod
    def _no_inline_secrets(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if value is None else _no_inline_secrets(value)

    @field_validator("factory", "filter")
    @classmethod
    def _check_import_path(cls, value: str | None) -> str | None:
        if value is not None and not _IMPORT_PATH.match(value):
            raise ValueError(f"expected 'package.module:attribute', got {value!r}")
        return value

    @field_validator("sampling")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("sampling must be a finite number between 0 and 1")
        return value

    @model_validator(mode="after")
    def _kind_or_factory(self) -> ScorerSettings:
        if (self.kind is None) == (self.factory is None):
            raise ValueError("set exactly one of 'kind' (a prebuilt scorer) or 'factory'")
        if self.factory is not None and self.options:
            raise ValueError("'options' apply to prebuilt scorers ('kind'); a factory takes none")
        return self


class LiveSettings(_Table):
    """`[live]`: how much scoring runs at once and how much may wait."""

    max_concurrency: int = Field(32, ge=1, le=10_000)
    max_queue: int = Field(10_000, ge=1, le=10_000_000)
    max_queue_bytes: int = Field(
        256 << 20,
        ge=1 << 20,
        le=1 << 40,
        description="Request-body bytes that accepted, unfinished items may hold in memory.",
    )
    max_queue_delay: float = Field(
        10.0,
        gt=0,
        le=86_400,
        description="Seconds of work (at the measured scoring rate) that may wait; beyond: 429.",
    )


class SinkSettings(_Table):
    """`[sinks]`: where results go. Relative paths are relative to the config file."""

    sqlite: str | Literal[False] = Field(
        "scorewatch.db", description="SQLite file (GET /v1/scores reads it); false: none."
    )
    sqlite_synchronous: Literal["OFF", "NORMAL", "FULL", "EXTRA"] = "NORMAL"
    jsonl: str | None = Field(None, description="Also append every result to this JSONL file.")
    postgres: str | None = Field(
        None, description="PostgreSQL DSN (GET /v1/scores reads it then); no password in it."
    )
    postgres_env: str | None = Field(
        None, description="Environment variable holding the PostgreSQL DSN (with a password)."
    )
    postgres_schema: str = Field("public", description="Schema of the PostgreSQL score table.")
    retry_timeout: float = Field(
        120.0,
        ge=0,
        le=86_400,
        description="Without a queue: how long a result waits for a sink that is down before "
        "it is dropped (counted in sink_dropped), s.",
    )

    @field_validator("postgres_env")
    @classmethod
    def _check_env(cls, value: str | None) -> str | None:
        return _env_name(value)

    @field_validator("postgres")
    @classmethod
    def _no_inline_password(cls, value: str | None) -> str | None:
        return None if value is None else no_password(value, "the DSN", "postgres_env")

    @field_validator("postgres_schema")
    @classmethod
    def _check_schema(cls, value: str) -> str:
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$", value):
            raise ValueError(f"expected a plain schema name (letters, digits, _), got {value!r}")
        return value

    @model_validator(mode="after")
    def _one_dsn(self) -> SinkSettings:
        if self.postgres is not None and self.postgres_env is not None:
            raise ValueError("set 'postgres' or 'postgres_env', not both")
        return self

    def postgres_dsn(self) -> str | None:
        """`postgres`, else the value of `postgres_env`, else None."""
        if self.postgres is not None:
            return self.postgres
        if self.postgres_env is None:
            return None
        return os.environ.get(self.postgres_env, "").strip() or None

    @field_validator("sqlite")
    @classmethod
    def _non_empty(cls, value: str | Literal[False]) -> str | Literal[False]:
        if value is True:  # type: ignore[comparison-overlap]
            raise ValueError("expected a file path or false")
        if isinstance(value, str) and not value.strip():
            raise ValueError("expected a file path or false")
        return value


class TelemetrySettings(_Table):
    """`[telemetry]`: Prometheus at `/metrics` on the service's port, OTLP from the environment."""

    service_name: str = Field("scorewatch", min_length=1)
    prometheus: bool = Field(True, description="Serve GET /metrics.")
    metrics_require_token: bool = Field(False, description="Require the bearer token on /metrics.")
    metrics_max_age: float = Field(
        1.0,
        ge=0,
        le=60,
        description="Seconds a /metrics rendering is reused by later scrapes (concurrent "
        "scrapes share one regardless), so scrapers cannot take the CPU the service scores with.",
    )
    otlp: bool | None = Field(
        None, description="None: export when OTEL_EXPORTER_OTLP_*ENDPOINT is set; true/false."
    )
    capture_content: bool = Field(False, description="Put prompts/content on spans and events.")


class ServeConfig(_Table):
    """The whole `scorewatch.toml`."""

    server: ServerSettings = Field(default_factory=ServerSettings)
    judge: JudgeDefaults = Field(default_factory=JudgeDefaults)
    scorers: list[ScorerSettings] = Field(min_length=1)
    live: LiveSettings = Field(default_factory=LiveSettings)
    sinks: SinkSettings = Field(default_factory=SinkSettings)
    telemetry: TelemetrySettings = Field(default_factory=TelemetrySettings)
    queue: QueueSettings = Field(default_factory=QueueSettings)
    cache: CacheSettings | None = Field(None, description="The verdict cache; none: off.")
    budget: BudgetSettings | None = Field(
        None, description="The judge spend budget shared by every scorer, and where it is kept."
    )
    traces: TracesSettings | None = Field(
        None, description="OTLP/HTTP trace intake (POST /v1/traces); absent: off."
    )
    privacy: PrivacyPolicy = Field(
        default_factory=PrivacyPolicy,
        description="Personal data redacted from stored rows, spans, events, logs and answers.",
    )
    base_dir: Path = Field(
        default_factory=Path.cwd, exclude=True, description="Relative paths resolve against it."
    )

    @model_validator(mode="after")
    def _unique_ids(self) -> ServeConfig:
        seen: set[str] = set()
        for spec in self.scorers:
            if spec.id in seen:
                raise ValueError(f"two scorers have the id {spec.id!r}; ids must be unique")
            seen.add(spec.id)
        traces = self.traces
        named = {"traces.scorers": (traces.scorers or []) if traces else []}
        if traces is not None and traces.sessions is not None:
            named["traces.sessions.scorers"] = traces.sessions.scorers
        for where, ids in named.items():
            unknown = [s for s in ids if s not in seen]
            if unknown:
                raise ValueError(
                    f"{where} names unknown scorer ids {', '.join(map(repr, unknown))}; "
                    f"known: {', '.join(sorted(seen))}"
                )
        return self

    def resolve_path(self, path: str) -> Path:
        candidate = Path(path).expanduser()
        return candidate if candidate.is_absolute() else self.base_dir / candidate

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, base_dir: Path | None = None) -> ServeConfig:
        """Validate an already-parsed document; raises `ConfigError`."""
        document = dict(data)
        if "base_dir" in document:
            raise ConfigError("base_dir: unknown key", problems=["base_dir: unknown key"])
        document["base_dir"] = base_dir or Path.cwd()
        try:
            return cls.model_validate(document)
        except ValidationError as error:
            problems = format_validation_error(error)
            raise ConfigError(
                "invalid configuration:\n  " + "\n  ".join(problems), problems=problems
            ) from None


def queue_url(config: ServeConfig) -> str | None:
    """The work queue's URL from `[queue]`, or None for the in-process queue."""
    try:
        return config.queue.resolved_url()
    except ValueError as error:
        problem = f"queue.url_env: {error}"
        raise ConfigError(f"invalid configuration:\n  {problem}", problems=[problem]) from None


def with_queue_url(config: ServeConfig, url: str, flag: str = "--queue") -> ServeConfig:
    """`config` with its queue URL replaced (a command-line override), checked first."""
    from .queue_settings import check_queue_url

    try:
        check_queue_url(url)
    except ValueError as error:
        raise ConfigError(f"{flag}: {error}") from None
    queue = config.queue.model_copy(update={"url": url, "url_env": None})
    return config.model_copy(update={"queue": queue})


def key_path(location: Sequence[int | str], *, empty: str = "(top level)") -> str:
    """`("scorers", 0, "kind")` -> `scorers[0].kind`."""
    text = ""
    for part in location:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or empty


def format_validation_error(error: ValidationError) -> list[str]:
    """One `key.path: message` line per problem; never echoes the offending value's content."""
    problems: list[str] = []
    for item in error.errors(include_url=False, include_input=False):
        location = list(item.get("loc", ()))
        message = str(item.get("msg", "invalid"))
        if item.get("type") == "extra_forbidden":
            message = "unknown key"
        elif item.get("type") == "missing":
            message = "required key is missing"
        message = message.removeprefix("Value error, ")
        problems.append(f"{key_path(location)}: {message}")
    return problems


def load_config(path: str | os.PathLike[str]) -> ServeConfig:
    """Read and validate `path`; relative paths inside it resolve against its directory."""
    file = Path(path)
    try:
        raw = file.read_bytes()
    except OSError as error:
        raise ConfigError(
            f"cannot read the configuration file {str(file)!r}: {error.strerror}"
        ) from None
    try:
        document = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"{file}: not valid TOML: {error}") from None
    try:
        return ServeConfig.from_mapping(document, base_dir=file.resolve().parent)
    except ConfigError as error:
        raise ConfigError(f"{file}: {error.message}", problems=error.problems) from None

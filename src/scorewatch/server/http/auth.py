"""Bearer-token authentication for `/v1/*` (and `/metrics` when configured).

The token comes from the environment variable named in the config, never from the file. It is
compared in constant time (`hmac.compare_digest`), and neither the expected nor the presented
token is ever logged or echoed.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Mapping

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ..config.file import ConfigError, ServeConfig, is_loopback_host
from .errors import ApiError
from .state import service_of

__all__ = [
    "authorization_problem",
    "bearer_scheme",
    "check_authorization",
    "require_token",
    "resolve_token",
    "token_matches",
]

bearer_scheme = HTTPBearer(
    auto_error=False,
    description="`Authorization: Bearer <token>`; required when the service has a token "
    "(server.auth_token_env).",
)

_CHALLENGE = {"WWW-Authenticate": "Bearer"}
MISSING_TOKEN = "missing bearer token (Authorization: Bearer <token>)"
INVALID_TOKEN = "invalid bearer token"


def resolve_token(config: ServeConfig, environ: Mapping[str, str] | None = None) -> str | None:
    """The bearer token, or None when none is configured; refuses unsafe set-ups.

    A config naming a token variable that is unset or empty is refused (a typo there would
    otherwise silently open the service), and so is a non-loopback address, of `[server]
    listen` or of `[traces] listen`, without a token. `serve` and `serve --check` both ask
    here, so the check refuses exactly what serving would."""
    env = os.environ if environ is None else environ
    name = config.server.auth_token_env
    token: str | None = None
    if name is not None:
        token = env.get(name, "")
        if not token.strip():
            raise ConfigError(
                f"server.auth_token_env names {name!r}, but that environment variable is not set "
                "(or empty); set it, or remove auth_token_env",
                problems=[f"server.auth_token_env: environment variable {name} is not set"],
            )
    if token is None and not is_loopback_host(config.server.host):
        raise ConfigError(
            f"refusing to listen on {config.server.listen!r} (not a loopback address) without "
            "an auth token: set server.auth_token_env to the name of an environment variable "
            "holding one",
            problems=["server.auth_token_env: required for a non-loopback listen address"],
        )
    public_traces = _public_traces_listen(config)
    if token is None and public_traces is not None:
        raise ConfigError(
            f"refusing to listen for traces on {public_traces!r} (not a loopback address) "
            "without an auth token: set server.auth_token_env",
            problems=["traces.listen: a non-loopback address requires server.auth_token_env"],
        )
    return token


def _public_traces_listen(config: ServeConfig) -> str | None:
    """`[traces] listen` when it is set to a non-loopback address, else None."""
    traces = config.traces
    if traces is None or traces.host is None or is_loopback_host(traces.host):
        return None
    return traces.listen


def token_matches(expected: str, presented: str) -> bool:
    return hmac.compare_digest(expected.encode("utf-8"), presented.encode("utf-8"))


def authorization_problem(expected: str | None, header: str | None) -> str | None:
    """What is wrong with an `Authorization` header (the 401 message), or None when it is fine.

    For code outside FastAPI's dependency system: the ASGI guard, which checks the token before
    reading a body, and the /metrics endpoint."""
    if expected is None:
        return None
    if not header:
        return MISSING_TOKEN
    scheme, _, credentials = header.partition(" ")
    if scheme.lower() == "bearer" and token_matches(expected, credentials.strip()):
        return None
    return INVALID_TOKEN


def check_authorization(expected: str | None, header: str | None) -> bool:
    return authorization_problem(expected, header) is None


async def require_token(
    request: Request,
    credentials: HTTPAuthorizationCredentials | None = Depends(bearer_scheme),  # noqa: B008
) -> None:
    expected = service_of(request).token
    if expected is None:
        return
    if credentials is None:
        raise ApiError(
            401,
            "unauthorized",
            MISSING_TOKEN,
            headers=_CHALLENGE,
        )
    if credentials.scheme.lower() != "bearer" or not token_matches(
        expected, credentials.credentials
    ):
        raise ApiError(401, "unauthorized", INVALID_TOKEN, headers=_CHALLENGE)

"""A judge whose API key is certainly missing stops a command before its first run.

A missing key is known before any call (`LiteLLMJudge.missing_api_key`): `scorewatch eval`,
`score-traces`, `demo --model` and `serve --check` say so in one line per judge model, naming
the variable to set, and exit 2, instead of failing every item with a call of its own.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Iterator

from ..core.scorer import Scorer
from ..errors import ScorewatchError

__all__ = ["MISSING_JUDGE_KEY", "missing_key_lines", "quiet_key_warnings", "require_judge_keys"]

MISSING_JUDGE_KEY = "SCOREWATCH_CLI_MISSING_JUDGE_KEY"


def _missing(model: object) -> str | None:
    check = getattr(model, "missing_api_key", None)
    line = check() if callable(check) else None
    return line if isinstance(line, str) else None


def missing_key_lines(scorers: Iterable[tuple[str, Scorer]]) -> list[str]:
    """One line per judge model whose key is missing, naming the scorers (by the id given)
    that use it."""
    users: dict[str, list[str]] = {}
    for name, scorer in scorers:
        models = {id(step.judge.model): step.judge.model for step in scorer.steps if step.judge}
        for line in dict.fromkeys(filter(None, map(_missing, models.values()))):
            users.setdefault(line, []).append(name)
    return [
        f"scorer{'s' if len(names) > 1 else ''} {', '.join(map(repr, names))}: {line}"
        for line, names in users.items()
    ]


def require_judge_keys(scorers: Iterable[tuple[str, Scorer]]) -> None:
    """Raise `MISSING_JUDGE_KEY` (a usage error: exit 2) naming every missing key."""
    lines = missing_key_lines(scorers)
    if lines:
        raise ScorewatchError("\n".join(lines), code=MISSING_JUDGE_KEY)


def _not_a_missing_key(record: logging.LogRecord) -> bool:
    return "has no API key" not in record.getMessage()


@contextlib.contextmanager
def quiet_key_warnings() -> Iterator[None]:
    """Building a judge warns of a missing key (for library users); a command reports it in a
    line of its own instead, once. Other warnings of the judge pass."""
    judge_logger = logging.getLogger("scorewatch.judge")
    judge_logger.addFilter(_not_a_missing_key)
    try:
        yield
    finally:
        judge_logger.removeFilter(_not_a_missing_key)

"""`scorewatch score-traces --sessions`: the options that score whole conversations instead of
single runs, and the `SessionLimits` they make (docs/traces.md, "Conversations"); and
`add_limit`, the form of every bound score-traces takes from a limits model."""

from __future__ import annotations

import argparse

from pydantic import ValidationError

from ..errors import ScorewatchError
from ..traces import SessionLimits
from ._eval_scorers import CLI_USAGE

__all__ = ["add_limit", "add_session_arguments", "session_limits"]


def add_limit(
    group: argparse._ArgumentGroup, flag: str, default: float, help: str, metavar: str = "N"
) -> None:
    """`flag`, a bound whose default (and so its type, int or float) is the limits model's own
    value, `SessionLimits().max_turns`: the model stays the one place that holds it."""
    group.add_argument(
        flag,
        type=type(default),
        default=default,
        metavar=metavar,
        help=f"{help} (default %(default)s)",
    )


def add_session_arguments(parser: argparse.ArgumentParser) -> None:
    sessions = parser.add_argument_group(
        "conversations",
        "with --sessions, the turns of each conversation (one run each, usually one trace per\n"
        "user message) are scored together, once, as the multi-turn judge and the trajectory\n"
        "scorers read a conversation; runs naming no conversation are skipped (counted).",
    )
    sessions.add_argument(
        "--sessions", action="store_true", help="score whole conversations, not single runs"
    )
    sessions.add_argument(
        "--conversation-attribute",
        action="append",
        default=[],
        metavar="KEY",
        help="a span attribute naming the conversation (default: gen_ai.conversation.id, "
        "session.id); repeat for several, the first found wins",
    )
    add_limit(
        sessions,
        "--session-idle",
        SessionLimits().idle_s,
        "a gap this long between two turns' starts begins a new session",
        metavar="SECONDS",
    )
    add_limit(
        sessions,
        "--session-max-turns",
        SessionLimits().max_turns,
        "turns that close a session; the next turn begins another",
    )


def session_limits(args: argparse.Namespace) -> SessionLimits | None:
    """The sessions asked for, or None to score single runs."""
    if not args.sessions:
        if args.conversation_attribute:
            raise ScorewatchError("--conversation-attribute applies to --sessions", code=CLI_USAGE)
        return None
    try:
        return SessionLimits(
            attributes=args.conversation_attribute or SessionLimits().attributes,
            idle_s=args.session_idle,
            max_turns=args.session_max_turns,
        )
    except ValidationError:
        raise ScorewatchError(
            "--session-idle must be above 0 and --session-max-turns at least 1", code=CLI_USAGE
        ) from None

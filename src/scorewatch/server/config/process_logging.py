"""Logging for a `scorewatch serve` or `scorewatch worker` process.

Log lines cannot be forged: whatever a record's message holds (a run id built from a client's
trace id, a target, an error's text), control characters in it are written escaped (`\\n`,
`\\x1b`), so one record is always one line. A traceback attached to a record keeps its lines.
"""

from __future__ import annotations

import logging
import sys

from .file import ServeConfig

__all__ = ["EscapingFormatter", "configure_process_logging", "escape_controls"]

_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# C0 and C1 controls, DEL, and the Unicode line and paragraph separators; a tab stays a tab.
_CONTROLS = {
    code: f"\\x{code:02x}"
    for code in (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0))
    if code != 0x09
}
_CONTROLS.update({0x0A: "\\n", 0x0D: "\\r", 0x2028: "\\u2028", 0x2029: "\\u2029"})


def escape_controls(text: str) -> str:
    """`text` with line breaks and other control characters written as escapes."""
    return text.translate(_CONTROLS)


class EscapingFormatter(logging.Formatter):
    """A formatter whose message part is always a single line (see the module docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        saved = record.msg, record.args
        record.msg, record.args = escape_controls(record.getMessage()), None
        try:
            return super().format(record)
        finally:
            record.msg, record.args = saved


def configure_process_logging(config: ServeConfig) -> None:
    """Records to stderr; scorewatch's own at `server.log_level`, libraries' (litellm logs every
    completion at INFO) at WARNING."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(EscapingFormatter(_FORMAT))
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    logging.getLogger("scorewatch").setLevel(config.server.log_level.upper())

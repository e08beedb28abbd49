"""Privacy: the judge reads a run's content as it is; what scorewatch keeps or exports has
personal data replaced by typed markers (docs/privacy.md).

`PrivacyPolicy` says what to redact; `PrivacyPolicy.start()` gives one run its `Redaction`, which
the run's row (`sinks`), spans and evaluation event (`telemetry`) share through `redacting`.
"""

from .policy import (
    CURRENT_REDACTION,
    PrivacyPolicy,
    Redaction,
    current_redaction,
    holds_markers,
    redacting,
)
from .recognisers import KINDS, Kind

__all__ = [
    "CURRENT_REDACTION",
    "KINDS",
    "Kind",
    "PrivacyPolicy",
    "Redaction",
    "current_redaction",
    "holds_markers",
    "redacting",
]

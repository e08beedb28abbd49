"""scorewatch: score AI agents' outputs with LLM judges and watch the scores in production.

```python
import scorewatch as sw

scorer = (
    sw.create_scorer(id="quality", description="Evaluates response quality")
    .preprocess(lambda ctx: {"word_count": len(ctx.run.output.split(" "))})
    .generate_score(lambda ctx: float(ctx.results.preprocess_step_result["word_count"] > 10))
)
result = scorer.run_sync(input="What is machine learning?", output="...")
```
What you reach for first is here: `create_scorer` and its steps, `LiveScoring`, the prebuilt
`scorers`, `run_evals` / `run_experiment`, judges, `telemetry` and `testing`. Records (judge
executions, usage and cost, run snapshots) live in their sub-packages: `sw.core`, `sw.judge`.
Heavy parts (litellm, live scoring, the prebuilt scorers, the OpenTelemetry SDK, the server) load
only when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import core, judge
from ._lazy import lazy_attribute
from ._version import __version__
from .core import (
    JudgeConfig,
    NotScorable,
    PromptStep,
    Scorer,
    ScorerRun,
    ScorerRunError,
    ScorerRunResult,
    StepContext,
    create_scorer,
    is_not_scorable,
    not_scorable,
)
from .errors import ScorewatchError
from .judge import JudgeError, JudgeModel, RetryPolicy

if TYPE_CHECKING:
    from . import scorers, telemetry, testing
    from .evals import ScorerEntry, run_evals, run_evals_sync, run_experiment, run_experiment_sync
    from .judge.litellm_judge import LiteLLMJudge
    from .live import LiveScoring


__all__ = [
    "JudgeConfig",
    "JudgeError",
    "JudgeModel",
    "LiteLLMJudge",
    "LiveScoring",
    "NotScorable",
    "PromptStep",
    "RetryPolicy",
    "Scorer",
    "ScorerEntry",
    "ScorerRun",
    "ScorerRunError",
    "ScorerRunResult",
    "ScorewatchError",
    "StepContext",
    "__version__",
    "core",
    "create_scorer",
    "is_not_scorable",
    "judge",
    "not_scorable",
    "run_evals",
    "run_evals_sync",
    "run_experiment",
    "run_experiment_sync",
    "scorers",
    "telemetry",
    "testing",
]

# name -> (module, attribute or None for the module itself); imported on first access.
_LAZY: dict[str, tuple[str, str | None]] = {
    "LiteLLMJudge": (".judge.litellm_judge", "LiteLLMJudge"),
    "LiveScoring": (".live", "LiveScoring"),
    "scorers": (".scorers", None),
    "testing": (".testing", None),
    "telemetry": (".telemetry", None),
    "ScorerEntry": (".evals", "ScorerEntry"),
    "run_evals": (".evals", "run_evals"),
    "run_evals_sync": (".evals", "run_evals_sync"),
    "run_experiment": (".evals", "run_experiment"),
    "run_experiment_sync": (".evals", "run_experiment_sync"),
}


def __getattr__(name: str) -> Any:
    return lazy_attribute(globals(), _LAZY, name)

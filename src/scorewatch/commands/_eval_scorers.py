"""The scorers of `scorewatch eval` and `score-traces`: `--scorer` names and a `--scorers` file,
by the ids they print.

A `--scorers` file has serve's `[[scorers]]` format (and its `[judge]` table), parsed and built by
the same code as serve's configuration, so a scorer that needs options (context, reference text,
tools, criteria) is configured once for both. `--model` and `--model-option` override the file's
`[judge]`. Thresholds and gates may name a scorer by the value given to `--scorer` or by the id
the summary table prints.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from ..core.scorer import Scorer
from ..errors import ScorewatchError
from ._judge_keys import quiet_key_warnings, require_judge_keys
from ._scorer_args import resolve_scorer

__all__ = ["CLI_USAGE", "EvalScorers", "load_scorers"]

CLI_USAGE = "SCOREWATCH_CLI_USAGE"


@dataclass(slots=True)
class EvalScorers:
    """Scorers by the id they print, and every name that refers to one of them."""

    by_id: dict[str, Scorer] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)

    def add(self, scorer: Scorer, *names: str) -> None:
        if scorer.id in self.by_id and self.by_id[scorer.id] is not scorer:
            raise ScorewatchError(
                f"two scorers have the id {scorer.id!r}; results would be mixed up",
                code=CLI_USAGE,
            )
        self.by_id[scorer.id] = scorer
        for name in (scorer.id, *names):
            self.aliases[name] = scorer.id

    def resolve(self, name: str, flag: str) -> str:
        """The id `name` refers to; a usage error listing the accepted ids otherwise."""
        if name in self.aliases:
            return self.aliases[name]
        known = ", ".join(sorted(self.by_id)) or "none"
        raise ScorewatchError(
            f"{flag} names {name!r}, which is not a scorer of this run (scorer ids: {known})",
            code=CLI_USAGE,
        )


def _from_file(path: str, model: str | None, options: dict[str, Any]) -> list[tuple[str, Scorer]]:
    from ..server.config.file import load_config
    from ..server.config.scorer_entries import build_scorers

    config = load_config(path)
    if model is not None or options:
        judge = config.judge.model_copy(
            update={
                "model": model or config.judge.model,
                "model_options": {**config.judge.model_options, **options},
            }
        )
        config = config.model_copy(update={"judge": judge})
    for index, spec in enumerate(config.scorers):
        live_only = [
            key
            for key, value in (("sampling", spec.sampling < 1.0), ("targets", spec.targets))
            if value
        ] + (["filter"] if spec.filter else [])
        if live_only:
            print(
                f"scorewatch: {path}: scorers[{index}] ({spec.id}): "
                f"{', '.join(live_only)} apply to live traffic; batch scoring scores every run",
                file=sys.stderr,
            )
    return [(built.id, built.scorer) for built in build_scorers(config)]


def load_scorers(
    names: list[str],
    scorers_file: str | None,
    gates: list[str],
    model: str | None,
    options: dict[str, Any],
) -> tuple[EvalScorers, list[str]]:
    """Every scorer of the run and the ids of the gates (a gate not among them is added).
    A judge whose API key is certainly missing stops the run here (`require_judge_keys`)."""
    if not names and scorers_file is None and not gates:
        raise ScorewatchError(
            "name at least one scorer: --scorer NAME or --scorers FILE (see --help)",
            code=CLI_USAGE,
        )
    found = EvalScorers()
    gate_ids = []
    with quiet_key_warnings():
        for name in dict.fromkeys(names):
            found.add(resolve_scorer(name, model, options), name)
        if scorers_file is not None:
            for config_id, scorer in _from_file(scorers_file, model, options):
                found.add(scorer, config_id)
        for name in dict.fromkeys(gates):
            if name not in found.aliases:
                found.add(resolve_scorer(name, model, options), name)
            gate_ids.append(found.aliases[name])
    require_judge_keys(found.by_id.items())
    return found, gate_ids

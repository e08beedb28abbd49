"""Turning `[[scorers]]` entries into live scorer entries.

A prebuilt scorer (`kind`) is built by the scorer registry with the judge of `[judge]`
(overridable per scorer); a custom one (`factory`) is a zero-argument callable found by its
`module:attribute` import path. The config id becomes the scorer's id, so results, decisions and
run telemetry are all labelled with the name clients use in requests.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...core.call import AgentCall
from ...core.scorer import Scorer
from ...errors import ScorewatchError
from ...judge.protocol import JudgeModel
from ...live.entry import LiveFilter, LiveScorerEntry, Sampling
from .file import ConfigError, JudgeDefaults, ScorerSettings, ServeConfig

__all__ = ["ConfiguredScorer", "build_scorers", "import_object"]


@dataclass(frozen=True, slots=True)
class ConfiguredScorer:
    """A scorer as the service runs it: its entry (scorer, sampling, filter) and where it came
    from (`kind` or `factory`), for `GET /v1/scorers`."""

    id: str
    entry: LiveScorerEntry
    source: str
    judge_model: str | None

    @property
    def scorer(self) -> Scorer:
        return self.entry.scorer


def import_object(path: str, *, search: Path | None = None) -> Any:
    """The object at `package.module:attribute`; `search` is put first on `sys.path` once."""
    if search is not None:
        folder = str(search)
        if folder not in sys.path:
            sys.path.insert(0, folder)
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(1 if search is not None else 0, os.getcwd())
    module_name, _, attribute = path.partition(":")
    module = importlib.import_module(module_name)
    value: Any = module
    for part in attribute.split("."):
        value = getattr(value, part)
    return value


def _problem(index: int, key: str, message: str) -> ConfigError:
    line = f"scorers[{index}].{key}: {message}"
    return ConfigError(f"invalid configuration:\n  {line}", problems=[line])


def _judge_for(spec: ScorerSettings, defaults: JudgeDefaults) -> tuple[str | None, dict[str, Any]]:
    model = spec.model or defaults.model
    options = dict(defaults.model_options)
    if spec.model_options:
        options.update(spec.model_options)
    if defaults.api_key_env and "api_key" not in options:
        # The judge reads it, and names it when the key is missing or rejected.
        options["api_key_env"] = defaults.api_key_env
    return model, options


def _judge_model(model: str, options: dict[str, Any]) -> JudgeModel:
    from ...judge.litellm_judge import LiteLLMJudge

    return LiteLLMJudge(model, **options)


def _build_prebuilt(
    index: int, spec: ScorerSettings, defaults: JudgeDefaults
) -> tuple[Scorer, str | None]:
    from ...scorers import registry

    prebuilt = registry.find(spec.kind or "")
    if prebuilt is None:
        known = ", ".join(registry.known_names())
        raise _problem(index, "kind", f"unknown prebuilt scorer {spec.kind!r}; known: {known}")
    kind = prebuilt.name
    model, options = _judge_for(spec, defaults)
    judge: JudgeModel | None = None
    if prebuilt.needs_model:
        if model is None:
            raise _problem(
                index,
                "model",
                f"the {kind!r} scorer is judged by an LLM: set [judge] model "
                f"or scorers[{index}].model",
            )
        try:
            judge = _judge_model(model, options)
        except (TypeError, ValueError) as error:
            raise _problem(index, "model_options", str(error)) from None
    try:
        scorer = registry.build_scorer(kind, model=judge, **spec.options)
    except (ScorewatchError, TypeError, ValueError) as error:
        raise _problem(index, "options", str(error)) from None
    return scorer, (model if judge is not None else None)


def _build_custom(index: int, spec: ScorerSettings, base_dir: Path) -> Scorer:
    path = spec.factory or ""
    try:
        factory = import_object(path, search=base_dir)
    except (ImportError, AttributeError) as error:
        raise _problem(index, "factory", f"cannot import {path!r}: {error}") from None
    except Exception as error:  # the module itself failed while being imported
        raise _problem(
            index, "factory", f"importing {path!r} raised {type(error).__name__}: {error}"
        ) from error
    if isinstance(factory, Scorer):
        return factory
    if not callable(factory):
        raise _problem(index, "factory", f"{path!r} is neither a Scorer nor callable")
    try:
        produced = factory()
    except TypeError as error:
        raise _problem(index, "factory", f"{path!r} must take no arguments: {error}") from None
    except Exception as error:
        raise _problem(
            index, "factory", f"{path!r} raised {type(error).__name__}: {error}"
        ) from error
    if inspect.isawaitable(produced):
        if inspect.iscoroutine(produced):
            produced.close()
        raise _problem(index, "factory", f"{path!r} must return a Scorer, not an awaitable")
    if not isinstance(produced, Scorer):
        raise _problem(
            index, "factory", f"{path!r} returned {type(produced).__name__}, expected a Scorer"
        )
    return produced


def _filter_for(index: int, spec: ScorerSettings, base_dir: Path) -> LiveFilter | None:
    predicate: Callable[[AgentCall], Any] | None = None
    if spec.filter is not None:
        try:
            found = import_object(spec.filter, search=base_dir)
        except (ImportError, AttributeError) as error:
            raise _problem(index, "filter", f"cannot import {spec.filter!r}: {error}") from None
        except Exception as error:
            raise _problem(
                index, "filter", f"importing {spec.filter!r} raised {type(error).__name__}: {error}"
            ) from error
        if not callable(found):
            raise _problem(index, "filter", f"{spec.filter!r} is not callable")
        predicate = found
    targets = frozenset(spec.targets) if spec.targets is not None else None
    if targets is None:
        return predicate
    if predicate is None:
        return lambda call: call.target in targets
    custom = predicate
    return lambda call: call.target in targets and bool(custom(call))


def build_scorers(config: ServeConfig) -> list[ConfiguredScorer]:
    """Every configured scorer, built; raises `ConfigError` naming the entry that failed."""
    built: list[ConfiguredScorer] = []
    for index, spec in enumerate(config.scorers):
        judge_model: str | None = None
        if spec.kind is not None:
            scorer, judge_model = _build_prebuilt(index, spec, config.judge)
            source = f"kind:{spec.kind}"
        else:
            scorer = _build_custom(index, spec, config.base_dir)
            source = f"factory:{spec.factory}"
            judge = scorer.judge
            if judge is not None and isinstance(judge.model, str):
                judge_model = judge.model
        entry = LiveScorerEntry(
            scorer if scorer.id == spec.id else scorer.copy(id=spec.id),
            sampling=Sampling.none() if spec.sampling >= 1.0 else Sampling.ratio(spec.sampling),
            filter=_filter_for(index, spec, config.base_dir),
            review_rate=spec.review_rate,
        )
        built.append(ConfiguredScorer(spec.id, entry, source, judge_model))
    return built

"""`LiveScoring.litellm_callback`: score every successful completion made through litellm.

litellm is imported only when a callback is asked for. The callback submits (input = the
request's messages, output = the response text, run id = litellm's call id) and returns at once.
Completions made by scorewatch's own judges, inside a live scoring job, are never submitted.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from .work_queue import in_live_job

__all__ = ["completion_text", "make_litellm_callback"]

logger = logging.getLogger("scorewatch.live")

Submit = Callable[..., object]
_callback_class: type | None = None
_class_lock = threading.Lock()


def _get(value: Any, key: str) -> Any:
    if isinstance(value, Mapping):
        return value.get(key)
    return getattr(value, key, None)


def completion_text(response: Any) -> str | None:
    """The first choice's message text of a chat completion (object or dict), else None."""
    choices = _get(response, "choices")
    if not choices:
        return None
    message = _get(choices[0], "message")
    content = _get(message, "content") if message is not None else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        parts = [_get(part, "text") for part in content]
        return "".join(part for part in parts if isinstance(part, str))
    return None


def _is_async_call(kwargs: Mapping[str, Any]) -> bool:
    if kwargs.get("acompletion") is True:
        return True
    params = kwargs.get("litellm_params")
    return isinstance(params, Mapping) and params.get("acompletion") is True


class _RecentIds:
    """Call ids already submitted: litellm may report one async completion to both hooks."""

    def __init__(self, memory: int = 4096) -> None:
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._memory = memory
        self._lock = threading.Lock()

    def first_time(self, call_id: str) -> bool:
        with self._lock:
            if call_id in self._seen:
                return False
            self._seen[call_id] = None
            if len(self._seen) > self._memory:
                self._seen.popitem(last=False)
            return True


def _started_before(start_time: Any, moment: datetime) -> bool:
    if not isinstance(start_time, datetime):
        return False
    if start_time.tzinfo is not None:
        start_time = start_time.astimezone().replace(tzinfo=None)
    return bool(start_time < moment)


def _build_class() -> type:
    from litellm.integrations.custom_logger import CustomLogger

    class ScorewatchLiveCallback(CustomLogger):
        """A litellm `CustomLogger` that submits successful completions for live scoring."""

        def __init__(self, submit: Submit, target: str) -> None:
            super().__init__()
            # litellm reports completions from a background worker, possibly after a delay:
            # a completion that started before this callback existed is not ours to score.
            self.created = datetime.now()
            self.target = target
            self._submit = submit
            self._recent = _RecentIds()

        def log_success_event(
            self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
        ) -> None:
            if isinstance(kwargs, Mapping) and _is_async_call(kwargs):
                return  # async_log_success_event reports it, on the caller's loop
            self._observe(kwargs, response_obj, start_time)

        async def async_log_success_event(
            self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
        ) -> None:
            self._observe(kwargs, response_obj, start_time)

        def _observe(self, kwargs: Any, response_obj: Any, start_time: Any) -> None:
            try:
                if in_live_job() or not isinstance(kwargs, Mapping):
                    return
                if _started_before(start_time, self.created):
                    return
                if kwargs.get("stream") and kwargs.get("complete_streaming_response") is not None:
                    response_obj = kwargs["complete_streaming_response"]
                text = completion_text(response_obj)
                if text is None:
                    return
                call_id = kwargs.get("litellm_call_id")
                if isinstance(call_id, str) and not self._recent.first_time(call_id):
                    return
                metadata: dict[str, Any] = {}
                model = kwargs.get("model")
                if isinstance(model, str):
                    metadata["model"] = model
                # The completion's own id: telemetry puts it on the evaluation event
                # (`gen_ai.response.id`) to tie the score to the agent's call.
                response_id = _get(response_obj, "id")
                if isinstance(response_id, str) and response_id:
                    metadata["response_id"] = response_id
                self._submit(
                    input=kwargs.get("messages"),
                    output=text,
                    target=self.target,
                    run_id=call_id if isinstance(call_id, str) else None,
                    metadata=metadata or None,
                )
            except Exception:
                logger.exception("litellm callback: submitting a completion failed; ignored")

    return ScorewatchLiveCallback


def make_litellm_callback(submit: Submit, target: str) -> Any:
    global _callback_class
    with _class_lock:
        if _callback_class is None:
            _callback_class = _build_class()
        base = _callback_class
    # litellm registers one logger per class (and callback name): a second callback of the same
    # class, say for another target, would be silently skipped. Each callback gets its own class.
    own_class = type(base.__name__, (base,), {"__module__": __name__})
    callback = own_class(submit, target)
    callback.callback_name = f"scorewatch-live-{id(callback):x}"
    return callback

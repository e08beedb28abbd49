"""What the prebuilt scorers read from a run: the request text, the response text, the context.

Every scorer accepts the same three run shapes (plain strings, OpenAI-style chat messages, the
reference system's agent messages); these helpers sit on top of `scorers.utils` so each scorer
reads them the same way.

The model-free scorers that must return the reference system's numbers exactly also measure text
the way JavaScript does: in UTF-16 code units (`str.length`, `str[i]`), with JavaScript's idea of
white space in `\\s`, `trim()` and `toLowerCase()`, which differs from Python's `str.isspace()`
and `strip()`. The `js_*` and `utf16_*` helpers reproduce that, so an emoji or a non-breaking
space gives the same number in both systems.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from .utils import (
    ToolCalls,
    ToolName,
    extract_agent_response_messages,
    extract_input_messages,
    extract_tool_calls,
    extract_tool_results,
    get_assistant_message_from_run_output,
    get_text_content_from_message,
    get_user_message_from_run_input,
    is_scorer_run_output_for_agent,
    js_json,
)

__all__ = [
    "JS_SPACE",
    "JS_SPACES",
    "JS_SPACE_CHARS",
    "ContextExtractor",
    "all_response_text",
    "as_text",
    "extracted",
    "found_tool_calls",
    "joined_input_text",
    "joined_output_text",
    "js_collapse_spaces",
    "js_drop_spaces",
    "js_lower",
    "js_number",
    "js_trim",
    "pieces",
    "request_text",
    "resolve_context",
    "response_text",
    "tool_calls_of",
    "tool_result_context",
    "utf16_len",
    "utf16_units",
]

ContextExtractor = Callable[[Any, Any], "Sequence[str] | Awaitable[Sequence[str]] | str | None"]


def request_text(run_input: Any) -> str:
    """The user's message (the first user message of a conversation), or `''`."""
    return get_user_message_from_run_input(run_input) or ""


def response_text(run_output: Any) -> str:
    """The answer: for a message list, the LAST assistant message with non-blank text (a
    tool-call turn without text before the final answer is skipped); otherwise the assistant
    text of the output. `''` when there is none."""
    if isinstance(run_output, list | tuple):
        texts = [text for text in extract_agent_response_messages(run_output) if js_trim(text)]
        return texts[-1] if texts else ""
    return get_assistant_message_from_run_output(run_output) or ""


def all_response_text(run_output: Any, separator: str = " ") -> str:
    """Every assistant message's text joined by `separator` (checks look at the whole reply)."""
    if isinstance(run_output, list | tuple):
        texts = [text for text in extract_agent_response_messages(run_output) if text]
        return separator.join(texts)
    return get_assistant_message_from_run_output(run_output) or ""


def joined_input_text(run_input: Any) -> str:
    """The input as the reference's model-free scorers read it: the text of every input
    message joined by `", "` (a message without text adds an empty piece)."""
    if isinstance(run_input, str):  # one message: its text, as `joined_output_text` reads one
        return run_input
    return ", ".join(extract_input_messages(run_input))


def joined_output_text(run_output: Any) -> str:
    """The output as the reference's model-free scorers read it: the text of every output
    message joined by `", "`. Agent messages count whatever their role, as in the reference;
    OpenAI-style lists count their assistant messages (their tool messages hold tool results)."""
    if isinstance(run_output, str):
        return run_output
    if isinstance(run_output, list | tuple):
        if is_scorer_run_output_for_agent(run_output):
            return ", ".join(get_text_content_from_message(message) for message in run_output)
        return ", ".join(extract_agent_response_messages(run_output))
    return get_assistant_message_from_run_output(run_output) or ""


def as_text(value: Any) -> str:
    """A reference value (ground truth, reference tone) as text: strings as they are, message
    shapes through the assistant/user lookups, anything else as compact JSON, as JavaScript's
    `JSON.stringify` writes it (`{"n":2}`)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    found = get_assistant_message_from_run_output(value) or get_user_message_from_run_input(value)
    if found is not None:
        return found
    return js_json(value)


def tool_result_context(run_output: Any) -> list[str]:
    """The results of the tools the agent called, as text: the context an agent answered from
    when no other context is given."""
    pieces: list[str] = []
    for result in extract_tool_results(run_output):
        body = result.result if isinstance(result.result, str) else as_text(result.result)
        if body.strip():
            pieces.append(f"{result.tool_name}: {body}" if result.tool_name else body)
    return pieces


def _as_pieces(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, Mapping):
        return [as_text(value)]
    return [piece if isinstance(piece, str) else as_text(piece) for piece in value]


async def extracted(extractor: Callable[[Any, Any], Any], run_input: Any, run_output: Any) -> Any:
    """What a user's extractor returns for the run; sync and async extractors alike."""
    found = extractor(run_input, run_output)
    return await found if inspect.isawaitable(found) else found


async def resolve_context(
    run_input: Any,
    run_output: Any,
    context: Sequence[str] | None,
    context_extractor: ContextExtractor | None,
    *,
    from_tools: bool = False,
) -> list[str]:
    """The context pieces to judge against: the extractor's answer (sync or async) when given,
    else `context`, else (when `from_tools`) the output's tool results (those with a body).

    A blank piece of a given context is kept, at its place: the judge numbers the pieces and
    answers by number, as the reference's judge does.

    Unlike the reference system, the extractor is called for every run shape, not only for
    agent-shaped runs: with OpenAI-style messages a silent skip would judge against nothing.
    """
    if context_extractor is not None:
        pieces = _as_pieces(await extracted(context_extractor, run_input, run_output))
    elif context is not None:
        pieces = _as_pieces(context)
    elif from_tools:
        pieces = tool_result_context(run_output)
    else:
        pieces = []
    return pieces


def found_tool_calls(run_output: Any) -> ToolCalls:
    """The tool calls of the output with where each was found; an OpenAI chat-completion
    response (`{"choices": [{"message": ...}]}`) is read through its choices' messages."""
    if isinstance(run_output, Mapping) and "role" not in run_output:
        choices = run_output.get("choices")
        if isinstance(choices, list):
            run_output = [
                choice["message"]
                for choice in choices
                if isinstance(choice, Mapping) and isinstance(choice.get("message"), Mapping)
            ]
    return extract_tool_calls(run_output)


def tool_calls_of(run_output: Any) -> list[ToolName]:
    """Names of the tools the output called, in order (see `found_tool_calls`)."""
    return found_tool_calls(run_output).tools


# A C-level string operation (a regex substitution, a split) keeps the GIL until it returns:
# on a megabyte it would hold up every other thread, the event loop included when scoring runs
# in a worker thread, for a third of a second; on 16 KiB for well under a millisecond.
_PIECE = 16384


def pieces(text: str, size: int = _PIECE) -> list[str]:
    """`text` cut into pieces of about `size` characters, each but the last ending just after a
    space, so no word is split: a per-word operation gives the same words piece by piece."""
    if len(text) <= size:
        return [text]
    cut: list[str] = []
    start = 0
    while len(text) - start > size:
        end = start + size
        space = text.rfind(" ", start + size // 2, end)
        if space < 0:  # no space near: the next one, wherever it is
            space = text.find(" ", end)
            if space < 0:
                break
        end = space + 1
        cut.append(text[start:end])
        start = end
    cut.append(text[start:])
    return cut


# ECMAScript WhiteSpace + LineTerminator: what `\s` and `trim()` match. Python's `\s` adds
# U+001C..U+001F and U+0085 and lacks U+FEFF.
JS_SPACE_CHARS = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_SPACE_SET = "".join(
    ["\t\n\v\f\r \u00a0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff"]
    + [chr(code) for code in range(0x2000, 0x200B)]
)
JS_SPACE = re.compile(f"[{JS_SPACE_CHARS}]")
JS_SPACES = re.compile(f"[{JS_SPACE_CHARS}]+")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


# In ASCII text, Python's white space (`str.split()`) is JavaScript's plus the four separator
# controls \x1c-\x1f: a text without them splits on JavaScript's white space exactly.


def _splits_as_js(text: str) -> bool:
    # Four substring tests (memchr each) rather than a search of the class `[\x1c-\x1f]`:
    # the same answer, without the regex engine's per-character charset test.
    return (
        text.isascii()
        and "\x1c" not in text
        and "\x1d" not in text
        and "\x1e" not in text
        and "\x1f" not in text
    )


# Printable ASCII (U+0020..U+007E, `isascii() and isprintable()`, one scan each) holds no white
# space but the space itself, in either language: no control character, no separator.


def js_collapse_spaces(text: str) -> str:
    """Runs of JavaScript white space become one space, the ends trimmed:
    `js_trim(JS_SPACES.sub(" ", text))`, by `str.split` where that is the same (a regex
    substitution costs several times more on short texts)."""
    if text.isascii() and text.isprintable():
        # Single spaces only, none at an end (most texts): already collapsed, kept as it is
        # rather than split into words and joined again.
        if "  " in text or text.startswith(" ") or text.endswith(" "):
            return " ".join(text.split())
        return text
    if _splits_as_js(text):
        return " ".join(text.split())
    return js_trim(JS_SPACES.sub(" ", text))


def js_drop_spaces(text: str) -> str:
    """`text` without its JavaScript white space (`JS_SPACES.sub("", text)`)."""
    if text.isascii() and text.isprintable():
        return text.replace(" ", "")
    if _splits_as_js(text):
        return "".join(text.split())
    return JS_SPACES.sub("", text)


def js_trim(text: str) -> str:
    """`String.prototype.trim` (`str.strip` with the JS set; a regex anchored at the end
    would rescan every inner run of white space)."""
    return text.strip(_SPACE_SET)


def js_lower(text: str) -> str:
    """`String.prototype.toLowerCase`: both apply Unicode's full lower-case mapping (final
    sigma included), so `str.lower` is the same function; `casefold` is not (`ß` -> `ss`)."""
    return text.lower()


def utf16_len(text: str) -> int:
    """`str.length`: characters outside the BMP count twice (a surrogate pair)."""
    return len(text) + len(_ASTRAL.findall(text)) if not text.isascii() else len(text)


def _has_astral(text: str) -> bool:
    return not text.isascii() and _ASTRAL.search(text) is not None


def _units(text: str) -> list[int]:
    return memoryview(text.encode("utf-16-le", "surrogatepass")).cast("H").tolist()


def utf16_units(first: str, second: str) -> tuple[Sequence[Any], Sequence[Any]]:
    """Two texts as the reference indexes them, in one representation so that they compare:
    the strings themselves when every character is one UTF-16 unit, else both as lists of
    code units (an emoji becomes two surrogates)."""
    if _has_astral(first) or _has_astral(second):
        return _units(first), _units(second)
    return first, second


def js_number(value: float) -> float | int:
    """A number as the reference's JSON writes it: whole values without a fraction (`1`, not
    `1.0`), others unchanged."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value

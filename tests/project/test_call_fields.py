"""The agent call is one type (`scorewatch.core.call.AgentCall`), and its fields are spelled out
only where that is the point: the call module, the one mapping of a call to a scorer run
(`ScorerRun.of_call`), the trace intake's reading of a span (`ExtractedRun.to_call`), and the
two layouts a scored call is written in (the score row, `ScoreRecord`; a line of an eval's
results file). Anywhere else, an expression that hands on four or more of the call's fields one
by one is a second copy of the call, and this test names it.

docs/architecture.md ("The call") lists what a new field of the call touches.
"""

from __future__ import annotations

import ast
import dataclasses
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest

from scorewatch.core.call import CALL_FIELDS, AgentCall, CallFields

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "scorewatch"

# The call's fields, and the names a scorer run gives the ones it renames.
NAMES = frozenset(CALL_FIELDS) | {
    "target_trace_id",
    "target_span_id",
    "target_metadata",
    "target_entity_type",
}
# Where the fields are spelled out on purpose: (module, function); "*" for the whole module.
ALLOWED = {
    ("core/call.py", "*"),
    ("core/result.py", "ScorerRun.of_call"),
    ("traces/run.py", "ExtractedRun.to_call"),
    ("sinks/record.py", "ScoreRecord.to_row"),
    ("sinks/record.py", "ScoreRecord._row"),
    ("sinks/record.py", "_entity"),
    ("commands/_results_file.py", "outcome_record"),
    # A label names the stored run it judges by its coordinates (a `RunRef`), not a call.
    ("server/http/label_intake.py", "check_labels"),
}
AT_MOST = 3


def _read_field(node: ast.AST) -> str | None:
    """The call field an expression reads: `x.name`, `x.get("name", ...)` or `x["name"]`."""
    if isinstance(node, ast.Attribute) and node.attr in NAMES:
        return node.attr
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value in NAMES
    ):
        return str(node.args[0].value)
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Constant)
        and node.slice.value in NAMES
    ):
        return str(node.slice.value)
    return None


def _fields_handed_on(node: ast.Call | ast.Dict) -> set[str]:
    """The call fields read in the arguments of a call or the values of a dict display."""
    if isinstance(node, ast.Call):
        parts: list[ast.AST] = [*node.args, *(keyword.value for keyword in node.keywords)]
    else:
        parts = list(node.values)
    read: set[str] = set()
    for part in parts:
        for inner in ast.walk(part):
            name = _read_field(inner)
            if name is not None:
                read.add(name)
    return read


def _scopes(tree: ast.Module) -> Iterator[tuple[str, ast.AST]]:
    """Every function with its qualified name (`Class.method`), and the module itself ("")."""
    yield "", tree

    def visit(node: ast.AST, prefix: str) -> Iterator[tuple[str, ast.AST]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                yield f"{prefix}{child.name}", child
                yield from visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                yield from visit(child, f"{prefix}{child.name}.")

    yield from visit(tree, "")


def hand_copies(root: Path) -> list[str]:
    """`module:line function (fields)` of every expression outside `ALLOWED` that hands on more
    than `AT_MOST` of the call's fields."""
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        module = path.relative_to(root).as_posix()
        if (module, "*") in ALLOWED:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        owner: dict[int, str] = {}  # node id -> the innermost function holding it
        for name, scope in _scopes(tree):
            for node in ast.walk(scope):
                owner[id(node)] = name
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call | ast.Dict):
                continue
            function = owner.get(id(node), "")
            if (module, function) in ALLOWED:
                continue
            read = _fields_handed_on(node)
            if len(read) > AT_MOST:
                found.append(f"{module}:{node.lineno} {function or '<module>'} {sorted(read)}")
    return found


def test_the_call_fields_are_handed_on_one_by_one_only_where_allowed() -> None:
    assert hand_copies(PACKAGE) == []


def test_the_check_finds_a_second_copy_of_the_call(tmp_path: Path) -> None:
    (tmp_path / "copy.py").write_text(
        "def repack(call):\n"
        "    return Other(input=call.input, output=call.output, target=call.target,\n"
        "                 trace_id=call.trace_id)\n"
        "def encode(call):\n"
        "    return {'a': call.input, 'b': call.output, 'c': call.run_id, 'd': call.metadata}\n"
        "def decode(document):\n"
        "    return make(document.get('input'), document['output'], document.get('span_id'),\n"
        "                document.get('target_metadata'))\n"
        "def fine(call):\n"
        "    return Other(call.input, call.output, call.target)\n",
        encoding="utf-8",
    )
    assert [line.split(" ", 2)[:2] for line in hand_copies(tmp_path)] == [
        ["copy.py:2", "repack"],
        ["copy.py:5", "encode"],
        ["copy.py:7", "decode"],
    ]


def test_the_keyword_form_of_the_call_has_the_calls_fields() -> None:
    hints = typing.get_type_hints(CallFields)
    assert tuple(hints) == CALL_FIELDS
    # (`plain_json` is no keyword: a fact about the content, set by `of_plain_json` alone.)
    declared = {field.name: field.type for field in dataclasses.fields(AgentCall) if field.init}
    assert {name: str(hint) for name, hint in hints.items()} == {
        name: str(typing.get_type_hints(AgentCall)[name]) for name in declared
    }

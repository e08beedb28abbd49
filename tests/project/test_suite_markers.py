"""The suite's own rule: every test module carries exactly one of unit, integration, e2e."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

pytest_plugins = ["pytester"]

CONFTEST = (Path(__file__).resolve().parents[1] / "conftest.py").read_text(encoding="utf-8")
TEST = "def test_x() -> None:\n    assert True\n"
INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"


def test_collection_fails_naming_unmarked_or_doubly_marked_modules(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini(INI)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        test_marked=f"import pytest\npytestmark = pytest.mark.unit\n{TEST}",
        test_unmarked=TEST,
        test_both=f"import pytest\npytestmark = [pytest.mark.unit, pytest.mark.e2e]\n{TEST}",
    )
    result = pytester.runpytest_inprocess("--collect-only", "-q")
    assert result.ret != 0
    errors = result.stderr.str()
    assert "test_unmarked.py: no marker" in errors
    assert "test_both.py: e2e, unit" in errors
    assert "test_marked.py" not in errors


def test_a_marked_module_collects_and_runs(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_marked=f"import pytest\npytestmark = pytest.mark.integration\n{TEST}")
    pytester.runpytest_inprocess("-q").assert_outcomes(passed=1)

"""tests/shared_fixtures.py, in a pytest run of its own: a shared fixture that fails shows its
traceback once, at the first test that used it; every later test says one line naming the
fixture and that test. A function-scoped fixture's failure is its test's own, shown each time."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SUITE = '''
import pytest


@pytest.fixture(scope="session")
def built():
    raise RuntimeError("Temporary failure resolving 'mirror.test'\\nsecond line")


@pytest.fixture(scope="session")
def big_run(built):
    return built


@pytest.fixture
def each():
    raise ValueError("function-scoped, raised in " + "each")


def test_one(built):
    pass


def test_two(built):
    pass


def test_three(big_run):
    pass


def test_four(each):
    pass


def test_five(each):
    pass
'''


def test_a_failed_shared_fixture_is_shown_once_then_named(tmp_path: Path) -> None:
    (tmp_path / "test_suite.py").write_text(SUITE)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.shared_fixtures", "-p", "no:cacheprovider",
         "-q", "-rE", "--no-header", str(tmp_path / "test_suite.py")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        # Without CI or BUILD_NUMBER: under them pytest prints each summary line whole,
        # and the counts below are of the sections, not of the summary.
        env={**{k: v for k, v in os.environ.items() if k not in ("CI", "BUILD_NUMBER")},
             "PYTHONPATH": str(REPO)})
    out = proc.stdout
    assert proc.returncode == 1, out
    assert "5 errors" in out
    # One traceback for the shared fixture, at test_one: pytest's own source line shows once.
    assert out.count("raise RuntimeError(") == 1, out
    first = "test_suite.py::test_one"
    said = (f"shared fixture 'built' failed (RuntimeError: Temporary failure resolving "
            f"'mirror.test'); its traceback is shown once, at {first}")
    # test_three's fixture is built on the one that failed: the cause is named.
    assert out.count(said) == 2, out
    assert out.count("ERROR test_suite.py::test_t") == 2  # one summary line each
    assert "second line" in out.split("test_two")[0]  # the first test's traceback, whole
    # A function-scoped fixture fails anew for each test: both keep their traceback.
    assert out.count('raise ValueError("function-scoped, raised in " + "each")') == 2, out

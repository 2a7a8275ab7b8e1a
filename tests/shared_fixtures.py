"""A shared fixture that fails reports once (a pytest plugin, registered by tests/conftest.py).

A fixture wider than one test (session, package, module or class scope: built images, one
big run) that raises is not set up again: pytest hands every later test that uses it the same
exception, and would print the same traceback for each (49 times for one mirror failure in
the image build). Here the first test that met the failure keeps the traceback; every later
one errors with one line naming the fixture, the error's first line, and that first test.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

# id(exception) -> [the exception (kept alive, so its id is not reused), the fixture, the
# first test that showed it (None until its report)]
_failed: dict[int, list[Any]] = {}


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any]) -> Generator[None, Any, Any]:
    try:
        return (yield)
    except BaseException as exc:
        # The innermost shared fixture that raised is named: one built on it re-raises the
        # same exception, and is not the cause.
        if fixturedef.scope != "function" and id(exc) not in _failed:
            _failed[id(exc)] = [exc, fixturedef.argname, None]
        raise


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    if call.when != "setup" or call.excinfo is None or not report.failed:
        return report
    seen = _failed.get(id(call.excinfo.value))
    if seen is None or seen[0] is not call.excinfo.value:
        return report
    if seen[2] is None:
        seen[2] = item.nodeid
    elif seen[2] != item.nodeid:
        report.longrepr = one_line(seen[1], call.excinfo.value, seen[2])
    return report


def one_line(fixture: str, exc: BaseException, first_test: str) -> str:
    """What a later test using the failed fixture says instead of its traceback."""
    text = str(exc).strip().splitlines()
    said = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
    return (f"shared fixture {fixture!r} failed ({said}); its traceback is shown once, "
            f"at {first_test}")

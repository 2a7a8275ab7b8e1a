"""Shared fixtures. Integration tests need a real engine: in CI (CI=true) its absence is a
failure, never a skip. The `engine` fixture lives here, once, for tests/integration and
tests/security alike. A shared fixture that fails reports once (tests/shared_fixtures.py)."""

from __future__ import annotations

import os

import pytest
import tenacity

from orchestrator import engine as eng
from orchestrator.engine import calls
from tests import shared_fixtures


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.is_registered(shared_fixtures):
        config.pluginmanager.register(shared_fixtures, "shared-fixtures")


@pytest.fixture(autouse=True)
def _no_retry_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(calls, "RETRY_WAIT", tenacity.wait_none())


@pytest.fixture(scope="session")
def engine() -> eng.Engine:
    """The real engine, one per session. Tests that use it (directly or through `built`,
    `bench`, `world`) must be marked integration: without an engine the hook below has
    already stopped the session in CI, or skipped them, visibly, elsewhere; a test that gets
    here connects or fails, never skips."""
    return eng.Engine.connect()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unmarked = [item.nodeid for item in items if "engine" in getattr(item, "fixturenames", ())
                and not item.get_closest_marker("integration")]
    if unmarked:
        raise pytest.UsageError("tests that need the engine must be marked integration: "
                                + ", ".join(unmarked))
    if not any(item.get_closest_marker("integration") for item in items):
        return
    try:
        eng.Engine.connect(timeout_s=10)
    except Exception as exc:  # noqa: BLE001 - any failure means: no engine
        if os.environ.get("CI"):
            raise pytest.UsageError(
                f"CI needs a Docker engine for integration tests: {exc}") from exc
        skip = pytest.mark.skip(reason=f"no Docker engine: {exc}")
        for item in items:
            if item.get_closest_marker("integration"):
                item.add_marker(skip)

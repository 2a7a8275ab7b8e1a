"""7. The resident executor's channel: PID 1's stdin (requests) and stdout (answers), and
each runner's stdout (its frames). A tool of the sandbox's uid tries to forge a request, read
the orchestrator's requests, forge the end of an answer and a result frame, and take the
descriptors over with pidfd_getfd, in two cells of the same container."""

from __future__ import annotations

import pytest

from tests.security.conftest import MainRun

pytestmark = pytest.mark.integration

REFUSED = ("EACCES", "EPERM")
ATTEMPTS = ("forge a request into PID 1's stdin", "read the requests on PID 1's stdin",
            "forge an answer's end into PID 1's stdout",
            "forge a result frame into the runner's stdout", "list PID 1's descriptors",
            "pidfd_getfd PID 1 fd 0", "pidfd_getfd PID 1 fd 1",
            "pidfd_getfd the runner fd 0", "pidfd_getfd the runner fd 1")


@pytest.mark.parametrize("phase", [0, 1])
def test_nothing_in_the_sandbox_reaches_the_channel(main_run: MainRun, phase: int) -> None:
    tried = main_run.attempts("h-channel", phase)
    assert {k: tried.get(k, ("not tried",))[0] for k in ATTEMPTS} == {
        k: tried[k][0] if k in tried and tried[k][0] in REFUSED else "refused"
        for k in ATTEMPTS}, tried
    assert tried["forged request ran"][0] == "NO"


@pytest.mark.parametrize("phase", [0, 1])
def test_the_cells_are_recorded_as_they_ran_through_the_channel(main_run: MainRun,
                                                                phase: int) -> None:
    """Both cells came through the resident channel, ended normally, and carry the
    helper's own result, not a forged one (the forgery claimed 1 ns)."""
    record = main_run.record("h-channel", phase)
    assert record.exec_path == "resident"
    assert record.outcome == "ok" and record.exit["exit_code"] == 0
    assert record.timing["wall_ns"] > 1_000_000
    assert record.helper["protocol_error"] is None and record.helper["errors"] == []
    assert main_run.meta["exec_path"] == "resident"

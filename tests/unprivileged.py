"""Running a piece of a test as a user who is not root and not in the docker group: a forked
child that drops to nobody (uid and gid 65534, no supplementary groups) before it runs. A
child of the test process, because the project's interpreter may live where nobody may not
read (a root-only pyenv), so a fresh process as nobody could not start."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

NOBODY = 65534


def as_nobody(says: Callable[[], str]) -> str:
    """What `says` returns when run as nobody (a failure to start it, as text)."""
    if os.geteuid() != 0:
        pytest.fail("needs root: the test runs a part of itself as another user")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        said = ""
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            said = says()
        except BaseException as exc:  # noqa: BLE001 (reported to the parent, whatever it is)
            said = f"unexpected: {exc!r}"
        finally:
            os.write(write_end, said.encode())
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        said = pipe.read().decode()
    os.waitpid(pid, 0)
    return said

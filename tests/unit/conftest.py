"""The timing helper, compiled once per session with the host's C compiler and the image's
flags, for the tests that run it as a plain process (test_exec_helper, test_exec_serve)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[2] / "images" / "base" / "sandbench-exec.c"
CFLAGS = ["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-D_GNU_SOURCE", "-static"]


@pytest.fixture(scope="session")
def helper(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler found to build sandbench-exec")
    binary = tmp_path_factory.mktemp("helper") / "sandbench-exec"
    build = subprocess.run([cc, *CFLAGS, "-o", str(binary), str(SOURCE)],
                           capture_output=True, text=True, timeout=120)
    assert build.returncode == 0, build.stderr
    assert build.stderr == "", build.stderr  # warning-free, not just error-free
    return binary

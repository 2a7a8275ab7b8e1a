"""Debian's docker-compose accepts the committed compose file with this host's values."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from orchestrator.settings import Settings
from orchestrator.exports import compose

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def test_docker_compose_accepts_the_demo_file(built: Settings, tmp_path: Path) -> None:
    binary = shutil.which("docker-compose")
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("CI needs docker-compose (scripts/ensure-docker installs it)")
        pytest.skip("docker-compose is not installed")
    env_file = tmp_path / "demo.env"
    env_file.write_text(compose.env_file(built, "demo", tmp_path / "work"))
    result = subprocess.run([binary, "--env-file", str(env_file), "-f",
                             str(REPO / "compose" / "demo.yml"), "config"],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "network_mode: none" in result.stdout
    for arm in ("rg", "ast-grep", "code-review-graph"):
        assert f"  {arm}:" in result.stdout

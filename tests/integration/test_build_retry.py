"""A real image build that a fault from outside stops once is built by its retry.

A throwaway recipe of this test's own (FROM the locked base image, in a private project and
bench root) asks a server this test starts on the engine's bridge whether to fail: the first
time its RUN step prints apt's "Temporary failure resolving" and exits 100, as a build does
when the package mirror's name is not resolved; the second time it passes. The image this
test built is removed by its id.
"""

from __future__ import annotations

import io
import json
import secrets
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator import images, log
from orchestrator.engine import Engine
from orchestrator.settings import Settings

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def _bridge_address() -> str:
    """The host's address on the engine's default bridge, where a build's RUN step reaches."""
    out = subprocess.run(["ip", "-4", "-o", "addr", "show", "docker0"], capture_output=True,
                         text=True, check=False).stdout.split()
    if "inet" not in out:
        pytest.fail("no docker0 bridge: the engine's builds reach the host through it")
    return out[out.index("inet") + 1].split("/")[0]


class Oracle:
    """Answers each connection with `fail` the first time and `ok` after; counts them."""

    def __init__(self, address: str) -> None:
        self.listener = socket.create_server((address, 0))
        self.port = self.listener.getsockname()[1]
        self.asked = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:  # closed
                return
            with conn:
                self.asked += 1
                conn.sendall(b"fail\n" if self.asked == 1 else b"ok\n")

    def close(self) -> None:
        self.listener.close()
        self.thread.join(timeout=5)


@pytest.fixture
def oracle() -> Iterator[Oracle]:
    served = Oracle(_bridge_address())
    yield served
    served.close()


def test_a_build_the_mirror_failed_once_is_built_by_its_retry(
        engine: Engine, built: Settings, oracle: Oracle, tmp_path: Path) -> None:
    project, bench = tmp_path / "project", tmp_path / "bench"
    shutil.copytree(REPO / "images" / "base", project / "images" / "base", symlinks=True)
    name = f"flaky-{secrets.token_hex(4)}"
    recipe = project / "images" / name
    recipe.mkdir()
    (recipe / "recipe.toml").write_text(
        'description = "fails once, as a mirror out of reach"\nparent = "base"\n'
        'tool_version = ["cat", "/etc/debian_version"]\n')
    (recipe / "probe.sh").write_text(
        f"exec 3<>/dev/tcp/{_bridge_address()}/{oracle.port}\nread -r said <&3\n"
        "[ \"$said\" = ok ] && exit 0\n"
        "echo \"W: Failed to fetch http://mirror.invalid/debian/dists/bookworm/InRelease  "
        "Temporary failure resolving 'mirror.invalid'\"\nexit 100\n")
    (recipe / "Dockerfile").write_text(
        "ARG BASE\nFROM ${BASE}\nCOPY probe.sh /probe.sh\nRUN bash /probe.sh\n")
    images.share_lock(built, bench)
    settings = Settings(project_root=project, bench_root=bench)
    console = io.StringIO()
    log.configure(stream=console)
    outcomes: list[images.BuildOutcome] = []
    try:
        outcomes = images.build(engine, settings, [name])
    finally:
        log.configure()
        for outcome in outcomes:
            if outcome.name == name and outcome.image_id:
                engine.remove_image(outcome.image_id, force=True)
    by_name = {o.name: o for o in outcomes}
    assert by_name["base"].action == "up-to-date"
    assert by_name[name].action == "built" and oracle.asked == 2
    events = [json.loads(line) for line in console.getvalue().splitlines()]
    (retry,) = [e for e in events if e["event"] == "retry"]
    assert retry["what"] == f"build image {name}" and retry["attempt"] == 2
    assert "Temporary failure resolving 'mirror.invalid'" in retry["failed"]
    steps = [(e["step"], e["instruction"]) for e in events
             if e["event"] == "build step" and e["image"] == name]
    # The first attempt said its steps up to the probe that failed; the retry, from its first.
    again = [i for i, (step, _) in enumerate(steps) if step.startswith("1/")]
    assert again[0] == 0 and len(again) == 2
    first, second = steps[:again[1]], steps[again[1]:]
    assert first[-1][1] == "RUN bash /probe.sh" and second[:len(first)] == first

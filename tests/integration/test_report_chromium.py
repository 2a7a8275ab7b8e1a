"""The results page of the golden run, opened in Debian's headless Chromium: each plot is
drawn (plotly's svg.main-svg with the marks the scores call for), the page logs no error and
attempts no fetch (its Content-Security-Policy would log one), and a screenshot is a real
picture. Chromium runs with a new empty profile, no background networking, and a host
resolver that resolves nothing, so not even the browser's own chatter leaves the machine."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import struct
import subprocess
import zlib
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from orchestrator.report import html as page

pytestmark = pytest.mark.integration
GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "demo-run"
TIMEOUT_S = 120
WINDOW = (1280, 2400)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--host-resolver-rules=MAP * ~NOTFOUND", "--hide-scrollbars",
         "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000"]


@pytest.fixture(scope="module")
def chromium() -> str:
    binary = shutil.which("chromium")
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("CI needs Debian's chromium for the results page (scripts/ensure-chromium "
                        "installs it)")
        pytest.skip("chromium is not installed (Debian: apt-get install chromium)")
    return binary


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The golden run's documents, written by `sandbench report` from its committed scores."""
    from orchestrator.cli import app

    run = tmp_path_factory.mktemp("chromium") / "demo-run"
    run.mkdir()
    shutil.copy2(GOLDEN / "scores.json", run / "scores.json")
    result = CliRunner().invoke(app, ["report", str(run)])
    assert result.exit_code == 0, result.output
    assert f"html: {run / 'results.html'}" in result.output
    return run / "results.html"


def run_chromium(binary: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """One headless Chromium, in its own process group, killed by that group's id should it
    outlive the timeout (or leave a helper behind)."""
    profile.mkdir()
    proc = subprocess.Popen([binary, *FLAGS, f"--user-data-dir={profile}", *args],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"chromium did not finish within {TIMEOUT_S} s:\n{err[-2000:]}")
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.fixture(scope="module")
def dom(chromium: str, results: Path,
        tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    done = run_chromium(chromium, tmp_path_factory.mktemp("profile") / "p", "--dump-dom",
                        results.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, done.stderr


def _plot(dom: str, plot_id: str) -> str:
    match = re.search(rf'<div id="{plot_id}"[^>]*>(.*?)</figure>', dom, re.DOTALL)
    assert match, f"{plot_id} is not in the page"
    return match.group(1)


def _scores() -> dict[str, Any]:
    return json.loads((GOLDEN / "scores.json").read_text(encoding="utf-8"))


def test_every_plot_is_drawn(dom: tuple[str, str]) -> None:
    text, _ = dom
    scores = _scores()
    drawn = {pid: _plot(text, pid) for pid in page.PLOT_IDS}
    for pid, svg in drawn.items():
        assert 'class="main-svg"' in svg, f"{pid} has no plotly svg"
        assert "js-plotly-plot" in re.search(rf'<div id="{pid}"[^>]*>', text).group(0)
        assert re.search(r'class="gtitle"[^>]*>[^<]+<', svg), f"{pid} has no title"
        assert re.search(r'class="xtitle"[^>]*>[^<]+<', svg), f"{pid} has no x axis title"
        assert re.search(r'class="ytitle"[^>]*>[^<]+<|class="y2?tick', svg)
    arms, kinds = len(scores["suite"]["arms"]), 4
    correctness = drawn["plot-correctness"]
    assert correctness.count('class="trace bars"') == 5
    assert correctness.count('class="point"') == 5 * arms * kinds
    assert correctness.count('class="legendtext"') == 5
    cost = drawn["plot-cost"]
    placed = [a for a in scores["suite"]["arms"]
              if scores["summary"][a]["all"]["correct_share"] is not None]
    assert cost.count('class="point plotly-customdata"') == len(placed)
    assert all(f">{arm}<" in cost for arm in placed)
    timing = drawn["plot-timing"]
    samples = sum(len(c["timing"]["samples"]) for c in scores["cells"] if c["timing"])
    timed = {c["arm"] for c in scores["cells"] if c["timing"]}
    assert timing.count('class="trace boxes"') == 2
    assert timing.count('class="box"') == 2 * len(timed)
    assert timing.count('class="point"') == samples


def test_the_page_logs_no_error_and_attempts_no_fetch(dom: tuple[str, str]) -> None:
    _, log = dom
    console = [line for line in log.splitlines() if ":CONSOLE" in line]
    assert not [c for c in console if re.search(
        r"Content Security Policy|Refused to|Uncaught|Failed to load|ERR_", c)], console


def test_the_tables_are_in_the_page(dom: tuple[str, str]) -> None:
    text, _ = dom
    assert text.count("<table>") == 12 + len(_scores()["tasks"])


def test_a_screenshot_is_a_picture(chromium: str, results: Path,
                                   tmp_path_factory: pytest.TempPathFactory) -> None:
    out = results.parent / "results.png"
    done = run_chromium(chromium, tmp_path_factory.mktemp("profile") / "p",
                        f"--window-size={WINDOW[0]},{WINDOW[1]}", f"--screenshot={out}",
                        results.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == WINDOW
    assert len(data) > 50_000, len(data)  # a blank or text-only page packs far smaller
    pixels = zlib.decompress(b"".join(_chunks(data, b"IDAT")))
    assert len(set(pixels)) > 128  # many shades: plots in colour, not a blank page


def _chunks(data: bytes, kind: bytes) -> list[bytes]:
    found, at = [], 8
    while at < len(data):
        (length,), name = struct.unpack(">I", data[at:at + 4]), data[at + 4:at + 8]
        if name == kind:
            found.append(data[at + 8:at + 8 + length])
        at += 12 + length
    return found

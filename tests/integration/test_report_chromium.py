"""The results page of the golden run, opened in Debian's headless Chromium: each plot is
drawn (plotly's svg.main-svg with the marks the scores call for), the page logs no error and
attempts no fetch (its Content-Security-Policy would log one), and a screenshot is a real
picture. Chromium runs with a new empty profile, no background networking, and a host
resolver that resolves nothing, so not even the browser's own chatter leaves the machine."""

from __future__ import annotations

import base64
import json
import os
import re
import select
import shutil
import signal
import struct
import subprocess
import time
import zlib
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from orchestrator.report import html as page
import contextlib

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
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
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
        # the title is the page's heading above the plot: it wraps on a narrow screen
        assert re.search(rf'<h3>[^<]+</h3>\s*<div id="{pid}"', text), f"{pid} has no title"
        # a title of two lines is two tspans
        assert re.search(r'class="xtitle"[^>]*>(<tspan[^>]*>)?[^<]+<', svg), \
            f"{pid} has no x axis title"
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
    assert all(f">{_legend_name(scores, arm)}<" in cost for arm in placed)
    timing = drawn["plot-timing"]
    samples = sum(len(c["timing"]["samples"]) for c in scores["cells"] if c["timing"])
    timed = {c["arm"] for c in scores["cells"] if c["timing"]}
    assert timing.count('class="trace boxes"') == 2
    assert timing.count('class="box"') == 2 * len(timed)
    assert timing.count('class="point"') == samples


def _legend_name(scores: dict[str, Any], arm: str) -> str:
    """An arm's entry in the cost plot's legend: its name and the tasks its point is over."""
    return f"{arm} ({scores['summary'][arm]['all']['graded']} of {len(scores['tasks'])} tasks)"


def test_the_page_logs_no_error_and_attempts_no_fetch(dom: tuple[str, str]) -> None:
    _, log = dom
    console = [line for line in log.splitlines() if ":CONSOLE" in line]
    assert not [c for c in console if re.search(
        r"Content Security Policy|Refused to|Uncaught|Failed to load|ERR_", c)], console


def test_the_tables_are_in_the_page(dom: tuple[str, str]) -> None:
    text, _ = dom
    from orchestrator.report import grading
    scores = _scores()
    from orchestrator.report import predictions
    # 12 tables of the detail, the verdict's and the failures', one per task, the grading's,
    # and the predictions' (the demo suite seals some)
    assert text.count("<table>") == (12 + 2 + len(scores["tasks"])
                                     + len(grading.section_tables(scores))
                                     + (1 if predictions.present(scores) else 0))


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


# ---- the page at a desktop's and a phone's width, through the DevTools protocol ----------------

# (width, height, mobile): a wide desktop window, and a phone's screen in CSS pixels. A window
# narrower than 500 px cannot be asked of headless Chromium by --window-size; the protocol's
# device metrics emulate the phone's viewport exactly.
VIEWPORTS = {"desktop": (1400, 900, False), "phone": (390, 844, True)}
LEGEND_ENTRIES = {"plot-correctness": 5, "plot-timing": 2}
# Every visible text of every plot, the legend's entries, the page's overflow, and where the
# plots section is: measured in the page once the plots are drawn.
PROBE = """
new Promise(done => setTimeout(done, 500)).then(() => {
  const box = el => { const b = el.getBoundingClientRect();
                      return [b.left, b.top + scrollY, b.right, b.bottom + scrollY]; };
  const plots = {};
  for (const plot of document.querySelectorAll(".plot")) {
    const texts = [];
    for (const t of plot.querySelectorAll("svg text")) {
      const b = t.getBoundingClientRect();
      if (b.width > 0 && b.height > 0 && t.textContent.trim())
        texts.push({text: t.textContent, box: box(t)});
    }
    plots[plot.id] = {box: box(plot), svgs: [...plot.querySelectorAll("svg.main-svg")].map(box),
                      legend: [...plot.querySelectorAll("g.legend g.traces")].map(
                        t => ({text: t.textContent, box: box(t)})),
                      points: plot.querySelectorAll("g.textpoint").length, texts,
                      modebar: [...plot.querySelectorAll(".modebar-btn")].map(box)};
  }
  const pres = [...document.querySelectorAll("pre")].map(p => [p.scrollWidth, p.clientWidth]);
  return JSON.stringify({scrollWidth: document.documentElement.scrollWidth,
                         innerWidth: innerWidth, plots, pres,
                         section: box(document.getElementById("plots"))});
})
"""


class DevTools:
    """One headless Chromium driven over --remote-debugging-pipe (it reads commands on fd 3
    and writes answers on fd 4, each a JSON message ended by a NUL byte)."""

    def __init__(self, binary: str, profile: Path) -> None:
        profile.mkdir()
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def wire() -> None:  # in the child: its fd 3 and 4 are the two pipes
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        # Its log goes to a file: a pipe nobody reads would stall it once full.
        self.log = profile.parent / "chromium.log"
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [binary, *[f for f in FLAGS if not f.startswith("--virtual-time")],
                 f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                preexec_fn=wire, pass_fds=(3, 4))  # noqa: PLW1509 - before any thread starts
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer, self._next, self.events = b"", 0, []

    def close(self) -> None:
        for fd in (self._to_chrome, self._from_chrome):
            os.close(fd)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=TIMEOUT_S)

    def _message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_chrome], [], [], left)[0]:
                pytest.fail("chromium did not answer over the DevTools pipe in time")
            chunk = os.read(self._from_chrome, 1 << 20)
            if not chunk:
                pytest.fail("chromium closed the DevTools pipe")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def send(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self._next += 1
        message = {"id": self._next, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            answer = self._message(deadline)
            if answer.get("id") == self._next:
                assert "error" not in answer, (method, answer["error"])
                return answer["result"]
            self.events.append(answer)

    def wait_for(self, method: str) -> None:
        deadline = time.monotonic() + TIMEOUT_S
        while not any(e.get("method") == method for e in self.events):
            self.events.append(self._message(deadline))


def measure(binary: str, profile: Path, url: str, viewport: tuple[int, int, bool],
            screenshot: Path) -> dict[str, Any]:
    """Open `url` at the viewport, measure it (PROBE), and save a screenshot of its plots."""
    width, height, mobile = viewport
    chrome = DevTools(binary, profile)
    try:
        target = chrome.send("Target.createTarget", url="about:blank")["targetId"]
        session = chrome.send("Target.attachToTarget", targetId=target,
                              flatten=True)["sessionId"]
        chrome.send("Emulation.setDeviceMetricsOverride", session, width=width, height=height,
                    deviceScaleFactor=1, mobile=mobile)
        chrome.send("Page.enable", session)
        chrome.send("Page.navigate", session, url=url)
        chrome.wait_for("Page.loadEventFired")
        found = chrome.send("Runtime.evaluate", session, expression=PROBE, awaitPromise=True,
                            returnByValue=True)
        assert "exceptionDetails" not in found, found
        probe = json.loads(found["result"]["value"])
        left, top, right, bottom = probe["section"]
        shot = chrome.send("Page.captureScreenshot", session, format="png",
                           captureBeyondViewport=True,
                           clip={"x": 0, "y": top, "width": width, "height": bottom - top,
                                 "scale": 1})
        screenshot.write_bytes(base64.b64decode(shot["data"]))
        return probe
    finally:
        chrome.close()


@pytest.fixture(scope="module", params=sorted(VIEWPORTS))
def viewed(request: pytest.FixtureRequest, chromium: str, results: Path,
           tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any], Path]:
    """The golden page at one viewport: its measurements and the screenshot of its plots
    (kept as the test's artifact beside the page, results-WIDTH.png)."""
    name = request.param
    shot = results.parent / f"results-{name}.png"
    probe = measure(chromium, tmp_path_factory.mktemp("profile") / "p", results.as_uri(),
                    VIEWPORTS[name], shot)
    return name, probe, shot


def _overlap(a: list[float], b: list[float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def test_nothing_runs_off_the_right_edge(viewed: tuple[str, dict[str, Any], Path]) -> None:
    name, probe, _ = viewed
    width = VIEWPORTS[name][0]
    assert probe["innerWidth"] == width
    assert probe["scrollWidth"] <= width, f"{name}: the page scrolls sideways"
    assert all(scroll <= client for scroll, client in probe["pres"]), probe["pres"]
    for pid, plot in probe["plots"].items():
        assert all(svg[2] <= width for svg in plot["svgs"]), (name, pid, plot["svgs"])
        left, _, right, _ = plot["box"]
        cut = [t["text"] for t in plot["texts"] if t["box"][0] < left or t["box"][2] > right]
        assert not cut, f"{name}: {pid} draws text past the edge: {cut}"


def test_no_two_labels_overlap(viewed: tuple[str, dict[str, Any], Path]) -> None:
    name, probe, _ = viewed
    for pid, plot in probe["plots"].items():
        texts = plot["texts"]
        hits = [(a["text"], b["text"]) for i, a in enumerate(texts) for b in texts[i + 1:]
                if _overlap(a["box"], b["box"])]
        assert not hits, f"{name}: in {pid} these labels overlap: {hits}"


def test_every_colour_has_a_legend(viewed: tuple[str, dict[str, Any], Path]) -> None:
    name, probe, _ = viewed
    scores = _scores()
    placed = [a for a in scores["suite"]["arms"]
              if scores["summary"][a]["all"]["correct_share"] is not None]
    expected = {**LEGEND_ENTRIES, "plot-cost": len(placed)}
    for pid, plot in probe["plots"].items():
        entries = plot["legend"]
        assert len(entries) == expected[pid], (name, pid, entries)
        assert not [(a["text"], b["text"]) for i, a in enumerate(entries)
                    for b in entries[i + 1:] if _overlap(a["box"], b["box"])]
        assert not [e["text"] for e in entries
                    if any(_overlap(e["box"], b) for b in plot["modebar"])], (name, pid)
    assert [e["text"] for e in probe["plots"]["plot-cost"]["legend"]] == [
        _legend_name(scores, arm) for arm in placed]
    assert probe["plots"]["plot-cost"]["points"] == 0  # arms named by the legend alone


def test_the_screenshots_are_pictures(viewed: tuple[str, dict[str, Any], Path]) -> None:
    name, probe, shot = viewed
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    left, top, right, bottom = probe["section"]
    assert (width, height) == (VIEWPORTS[name][0], round(bottom - top)), (width, height)
    pixels = zlib.decompress(b"".join(_chunks(data, b"IDAT")))
    assert len(set(pixels)) > 128  # many shades: plots in colour, not a blank page

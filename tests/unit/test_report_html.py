"""The results page: the same bytes every time, nothing loaded from the network, plotly.js
inline once, the Markdown's tables as plain HTML tables, every string escaped, and
`sandbench report` writing and checking it beside results.md."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from test_score_fixtures import Arm, Cell, RunBuilder, rg_rows
from typer.testing import CliRunner

from orchestrator.report import html as page, leaders, plots, tables, tasks, verdict
from orchestrator.score import score_run

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "demo-run"
TABLES = ("scorecard", "setup", "not_attempted", "correctness", "cost", "ratios", "timing",
          "reach", "state", "guards", "manifest", "leaders")
TRIMMED = ("scorecard", "correctness", "cost", "ratios", "timing", "reach")
EVIL = "<img src=x onerror=alert(1)>&\"'"
EVIL_SCRIPT = "</script><script>alert(2)</script>"
runner = CliRunner()


class Parsed(HTMLParser):
    """Every start tag with its attributes, and the text of each <script>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._in_script = True
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data


def parse(text: str) -> Parsed:
    parsed = Parsed()
    parsed.feed(text)
    parsed.close()
    return parsed


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    return json.loads((GOLDEN / "scores.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def rendered(golden: dict[str, Any]) -> str:
    return page.render_html(golden)


def test_two_renderings_are_the_same_bytes(golden: dict[str, Any], rendered: str) -> None:
    assert page.render_html(copy.deepcopy(golden)) == rendered


def test_another_process_renders_the_same_bytes(rendered: str, tmp_path: Path) -> None:
    """No uuid, clock or hash order leaks in: a fresh interpreter with another hash seed
    writes the same page."""
    out = tmp_path / "page.html"
    code = ("import json, sys; from orchestrator.report.html import render_html; "
            "open(sys.argv[2], 'w', encoding='utf-8').write("
            "render_html(json.load(open(sys.argv[1], encoding='utf-8'))))")
    subprocess.run([sys.executable, "-c", code, str(GOLDEN / "scores.json"), str(out)],
                   check=True, env={**os.environ, "PYTHONHASHSEED": "12345"}, timeout=120)
    assert out.read_text(encoding="utf-8") == rendered


def test_nothing_is_loaded_from_anywhere(rendered: str) -> None:
    parsed = parse(rendered)
    for tag, attrs in parsed.tags:
        assert "src" not in attrs, (tag, attrs)
        assert "srcset" not in attrs and "poster" not in attrs and "data" not in attrs
        if "href" in attrs:
            assert tag == "a" and (attrs["href"] or "").startswith("#"), (tag, attrs)
    assert not any(tag in ("link", "iframe", "object", "embed", "base", "img")
                   for tag, _ in parsed.tags)
    assert not re.search(r"<script[^>]*\ssrc=|<link[^>]*\shref=", rendered, re.IGNORECASE)
    assert not re.search(r"@import|url\(\s*['\"]?(https?:)?//", parse_style(rendered),
                         re.IGNORECASE)
    assert "cdn.plot.ly" not in "".join(parsed.scripts[1:])


def parse_style(text: str) -> str:
    return "".join(re.findall(r"<style>(.*?)</style>", text, re.DOTALL))


def test_a_content_security_policy_forbids_every_fetch(rendered: str) -> None:
    metas = [a for t, a in parse(rendered).tags
             if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert len(metas) == 1
    policy = {d.split()[0]: d.split()[1:] for d in metas[0]["content"].split("; ")}
    assert policy["default-src"] == ["'none'"]
    assert policy["script-src"] == ["'unsafe-inline'"]
    assert "connect-src" not in policy  # falls back to default-src 'none'
    assert all("http" not in s for sources in policy.values() for s in sources)


def test_plotly_js_is_inlined_exactly_once(rendered: str) -> None:
    from plotly.offline import get_plotlyjs

    js = get_plotlyjs()
    scripts = parse(rendered).scripts
    assert len(scripts) == 2
    assert scripts[0].strip() == js
    assert rendered.count(js[:2000]) == 1
    assert rendered.count("Plotly.newPlot(") == len(page.PLOT_IDS)


def test_one_div_per_plot_with_a_fixed_id(rendered: str) -> None:
    divs = [a for t, a in parse(rendered).tags if t == "div" and "plot" in
            (a.get("class") or "").split()]
    assert [d["id"] for d in divs] == list(page.PLOT_IDS)
    calls = re.findall(r'Plotly\.newPlot\("([^"]+)", (\{.*\})\);', parse(rendered).scripts[1])
    assert [pid for pid, _ in calls] == list(page.PLOT_IDS)
    headings = re.findall(r'<h3>([^<]+)</h3>\n<div id="(plot-[a-z]+)"', rendered)
    assert [pid for _, pid in headings] == list(page.PLOT_IDS)
    for _, figure in calls:
        fig = json.loads(figure)
        assert fig["config"]["displaylogo"] is False
        assert fig["data"] and "title" not in fig["layout"]  # the page's heading is the title
        assert fig["layout"]["xaxis"]["title"]["text"] or fig["layout"]["yaxis"]["title"]


def test_the_plots_show_the_scores(golden: dict[str, Any], rendered: str) -> None:
    figures = [json.loads(f) for f in re.findall(r'Plotly\.newPlot\("[^"]+", (\{.*\})\);',
                                                 parse(rendered).scripts[1])]
    correctness, cost, timing = figures
    assert [t["name"] for t in correctness["data"]] == [lab for _, lab in tables.COUNT_LABELS]
    total = sum(sum(t["x"]) for t in correctness["data"])
    assert total == len(golden["cells"])
    by_arm = {t["name"].split(" (")[0]: (t["x"][0], t["y"][0]) for t in cost["data"]}
    # each legend entry says how many of the suite's tasks its point is over
    assert [t["name"] for t in cost["data"]][:2] == ["rg (21 of 21 tasks)",
                                                      "ast-grep (6 of 21 tasks)"]
    assert by_arm["rg"] == (golden["summary"]["rg"]["all"]["cost"]["tokens_median"],
                            golden["summary"]["rg"]["all"]["correct_share"])
    assert "devscout" not in by_arm
    assert "proxy" in cost["layout"]["xaxis"]["title"]["text"]
    samples = sum(len(c["timing"]["samples"]) for c in golden["cells"] if c["timing"])
    assert sum(len(t["x"]) for t in timing["data"]) == samples
    cold = sum(1 for c in golden["cells"] if c["timing"])
    assert len(timing["data"][0]["x"]) == cold
    assert timing["layout"]["xaxis"]["type"] == "log"
    assert {t["orientation"] for t in timing["data"]} == {"h"}  # names read across


def test_the_markdowns_tables_are_plain_html_tables(golden: dict[str, Any],
                                                    rendered: str) -> None:
    for name in TABLES:
        if name == "leaders":
            table = leaders.leaders_trimmed(golden).table
            assert page.html_table(table) in rendered, name
            continue
        table = getattr(tables, name)(golden)
        if name in TRIMMED:  # the rows and columns with a figure, as in the Markdown
            table = tables.trimmed(table, 2).table
        assert page.html_table(table) in rendered, name
    for task, cells in tasks.cells_by_task(golden).items():
        assert page.html_table(tasks.task_cells(cells)) in rendered, task
    from orchestrator.report import grading
    extra = grading.section_tables(golden)
    assert extra and all(page.html_table(table) in rendered for table in extra)
    # the verdict and the failures, as in the Markdown
    assert page.html_table(verdict.table(golden)) in rendered
    assert page.html_table(tables.trimmed(tables.failures(golden), 1).table) in rendered
    # and the predictions beside the outcomes, when the suite sealed any (the demo's does)
    from orchestrator.report import predictions
    assert predictions.present(golden)
    assert page.html_table(predictions.table(golden)) in rendered
    assert rendered.count("<table>") == len(TABLES) + len(golden["tasks"]) + len(extra) + 3
    assert '<td class="num">0.29</td>' in rendered  # code-review-graph's correct share
    assert "<noscript>" in rendered


def test_a_table_escapes_and_aligns_its_figures() -> None:
    text = page.html_table((["name", "n"], [["<b>&", "1,234.5"], ["x", tables.NA]]))
    assert "<td>&lt;b&gt;&amp;</td>" in text
    assert '<td class="num">1,234.5</td>' in text and '<td class="num">n/a</td>' in text
    assert '<th scope="col" class="num">n</th>' in text


def _rename(value: Any, old: str, new: str) -> Any:
    if isinstance(value, dict):
        return {(new if k == old else k): _rename(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_rename(v, old, new) for v in value]
    return new if value == old else value


def test_every_string_is_escaped(golden: dict[str, Any]) -> None:
    scores = _rename(copy.deepcopy(golden), "rg", EVIL)
    scores["suite"]["name"] = EVIL_SCRIPT
    scores["definitions"]["cost.unit"] = EVIL_SCRIPT
    scores["arms"]["ast-grep"]["tool_version"] = EVIL_SCRIPT
    scores["cells"][0]["task"] = EVIL_SCRIPT  # drawn in the timing plot's hover text
    text = page.render_html(scores)
    assert EVIL not in text and "<img" not in text and "alert(2)</script>" not in text
    assert "&lt;img src=x onerror=alert(1)&gt;&amp;&quot;&#x27;" in text
    assert "&lt;/script&gt;&lt;script&gt;alert(2)&lt;/script&gt;" in text
    parsed = parse(text)
    assert [t for t, _ in parsed.tags].count("script") == 2
    assert not any(t == "img" for t, _ in parsed.tags)
    figures = re.findall(r'Plotly\.newPlot\("[^"]+", (\{.*\})\);', parsed.scripts[1])
    assert len(figures) == 3
    drawn = json.dumps([json.loads(f) for f in figures])
    # plotly reads its strings as a little HTML: the names reach it escaped once
    assert "&lt;img src=x onerror=alert(1)&gt;&amp;\\\"'" in drawn
    assert "<img" not in drawn and "&lt;/script&gt;" in drawn


def test_a_run_built_by_the_fixtures_renders(tmp_path: Path) -> None:
    b = RunBuilder(tmp_path, arms=[Arm("rg", tool_version="ripgrep 13.0.0"),
                                   Arm("peer", kinds=("references",)),
                                   Arm("devscout", unavailable="no binary")])
    b.cells[("rg", "ref-money")] = Cell(rg_rows("src/a.cs:2:Money", "src/b.cs:2:Money",
                                                "src/d.cs:1:Money"))
    b.cells[("peer", "ref-money")] = Cell(rg_rows("src/a.cs:2:Money"),
                                          walls=(900_000_000, 2_000_000, 90_000_000))
    b.build()
    scores = score_run(b.run_dir, b.suite_dir)
    text = page.render_html(scores)
    assert text == page.render_html(scores)
    assert all(f'id="{pid}"' in text for pid in page.PLOT_IDS)
    assert "No samples: devscout." in text


def test_log_ticks_span_the_samples_and_never_crowd() -> None:
    assert plots.log_ticks([12.0, 85.0]) == [10.0, 20.0, 50.0, 100.0]  # within a decade: 1-2-5
    assert plots.log_ticks([9.2, 858.0]) == [10.0, 100.0, 1000.0]  # wider: powers of 10
    assert plots.log_ticks([1.5, 2e6]) == [1.0, 1000.0, 1e6]  # every third power: 3 at most
    assert plots.log_ticks([]) == []


def test_the_page_goes_beside_the_markdown(tmp_path: Path) -> None:
    assert page.path_beside(tmp_path / "results.md") == tmp_path / "results.html"
    assert page.path_beside(tmp_path / "2026-01-01-mini.md") == tmp_path / "2026-01-01-mini.html"
    with pytest.raises(ValueError):
        page.path_beside(tmp_path / "results.html")


# ---- sandbench report ---------------------------------------------------------------------------

@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run-golden"
    run.mkdir()
    shutil.copy2(GOLDEN / "scores.json", run / "scores.json")
    return run


def _app():
    import typer

    from orchestrator.cli import SandbenchGroup, score as score_cli

    app = typer.Typer(cls=SandbenchGroup, add_completion=False, pretty_exceptions_enable=False)
    app.command("score")(score_cli.score)
    app.command("report")(score_cli.report)
    return app


def test_report_writes_the_page_and_prints_both_paths(run_dir: Path, rendered: str) -> None:
    result = runner.invoke(_app(), ["report", str(run_dir)])
    assert result.exit_code == 0, result.output
    html = run_dir / "results.html"
    assert html.read_text(encoding="utf-8") == rendered
    lines = result.output.splitlines()
    assert lines[-2:] == [f"markdown: {run_dir / 'results.md'}", f"html: {html}"]
    card = [re.split(r"\s{2,}", line.strip()) for line in result.stdout.splitlines()]
    assert card[0] == ["ARM", "KIND", "CORRECT", "PARTIAL", "WRONG", "NOT ATTEMPTED",
                       "UNSCORED"]  # the scorecard comes first, its columns named in words
    assert ["rg (baseline)", "all", "21", "0", "0", "0", "0"] in card
    mtime = html.stat().st_mtime_ns
    assert runner.invoke(_app(), ["report", str(run_dir)]).exit_code == 0
    assert html.stat().st_mtime_ns == mtime  # unchanged bytes are not rewritten


def test_report_check_compares_the_page_too(run_dir: Path) -> None:
    app = _app()
    assert runner.invoke(app, ["report", str(run_dir)]).exit_code == 0
    check = runner.invoke(app, ["report", str(run_dir), "--check"])
    assert check.exit_code == 0, check.output
    assert f"{run_dir / 'results.html'}: identical to a fresh rendering" in check.output
    html = run_dir / "results.html"
    text = html.read_text(encoding="utf-8")
    html.write_text(text.replace("<h2>Scorecard</h2>", "<h2>Edited by hand</h2>"),
                    encoding="utf-8")
    check = runner.invoke(app, ["report", str(run_dir), "--check"])
    assert check.exit_code == 1
    assert f"{html} differs from a fresh rendering" in check.output
    assert "-<h2>Edited by hand</h2>" in check.output
    assert "results.md differs" not in check.output
    # a different plotly.js: the diff names the line, cut short, not 4 MB of it
    longest = max(text.splitlines(), key=len)
    html.write_text(text.replace(longest, longest[:-1] + ("x" if longest[-1] != "x" else "y")),
                    encoding="utf-8")
    check = runner.invoke(app, ["report", str(run_dir), "--check"])
    assert check.exit_code == 1 and "characters)" in check.output
    assert max(len(line) for line in check.output.splitlines()) < 300
    html.unlink()
    check = runner.invoke(app, ["report", str(run_dir), "--check"])
    assert check.exit_code == 1 and f"{html} does not exist" in check.output


def test_report_to_another_path_puts_the_page_beside_it(run_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "docs" / "2026-12-02-demo.md"
    app = _app()
    result = runner.invoke(app, ["report", str(run_dir), "-o", str(target)])
    assert result.exit_code == 0, result.output
    assert target.with_suffix(".html").is_file() and not (run_dir / "results.html").exists()
    assert f"html: {target.with_suffix('.html')}" in result.output
    check = runner.invoke(app, ["report", str(run_dir), "-o", str(target), "--check"])
    assert check.exit_code == 0, check.output
    bad = runner.invoke(app, ["report", str(run_dir), "-o", str(tmp_path / "x.html")])
    assert bad.exit_code == 2 and "name the Markdown document" in bad.output
    assert "Traceback" not in bad.output

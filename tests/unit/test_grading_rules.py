"""Declared grading rules (suite.toml and task [grading]), every rep graded (cell_grade cold
and worst, unstable cells), flag definitions and published figures: their validation, their
effect on grades, and what scores.json and the documents say of them."""

from __future__ import annotations

import ast
import json
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from orchestrator.run import transcripts
from orchestrator.errors import InputError
from orchestrator.report.html import render_html
from orchestrator.report.markdown import render_markdown
from orchestrator.report.scores import problems
from orchestrator.score import cell, correctness, published, score_run, scorer
from orchestrator.suite import GradingRules, Published, Suite, Task, load_suite
from test_score_fixtures import BANDS, Cell, R, RunBuilder, rg_rows



def rows(*paths: str) -> list[R]:
    return [R(p) for p in paths]


def a_suite(grading: GradingRules = GradingRules(), *, cap: int = 20, top_k: int = 2) -> Suite:
    return Suite(name="s", path=Path("s"), corpus="c", arms=("rg",), baseline="rg", reps=1,
                 timeout_s=1.0, precision_cap=cap, top_k=top_k, bands=BANDS, grading=grading)


def a_task(kind: str, truth: dict[str, Any], own: dict[str, Any] | None = None) -> Task:
    inputs = {"locate": {"ticket": "t"}, "e2e-retrieval": {"ticket": "t"},
              "references": {"symbol": "S"}, "impact": {"seed": "seed.cs"}}[kind]
    return Task(id="t", kind=kind, language="csharp", explanation="", input=inputs,
                truth=truth, path=Path("t.toml"), grading=own or {})


IMPACT8 = {"graded": [f"g{i}" for i in range(8)]}


# -- the rules, on hand-made rows ---------------------------------------------------------------

def test_by_default_ranked_answers_are_cut_at_top_k() -> None:
    locate = a_task("locate", {"primary": "p"})
    e2e = a_task("e2e-retrieval", {"touched": ["p"]})
    assert correctness.grade(rows("x", "y", "p"), locate, a_suite()).verdict == "wrong"
    assert correctness.grade(rows("x", "y", "p"), e2e, a_suite()).verdict == "wrong"


def test_cut_none_grades_the_whole_answer() -> None:
    suite = a_suite(GradingRules(cut="none"))
    locate = correctness.grade(rows("x", "y", "p"), a_task("locate", {"primary": "p"}), suite)
    e2e = correctness.grade(rows("x", "y", "p"), a_task("e2e-retrieval", {"touched": ["p"]}),
                            suite)
    assert (locate.verdict, locate.answer, locate.notes) == ("correct", ("x", "y", "p"), ())
    assert e2e.verdict == "correct" and e2e.precision == correctness.Fraction(1, 3)


def test_a_graded_multiple_cap_is_that_multiple_of_the_graded_set() -> None:
    """8 graded files x 5: 40 named files are under the cap, 41 over, whatever the suite's
    absolute cap (20) says."""
    suite = a_suite(GradingRules(precision_cap="graded-multiple", precision_cap_multiple=5))
    task = a_task("impact", IMPACT8)
    under = [*IMPACT8["graded"], *(f"x{i}" for i in range(32))]
    assert correctness.grade(rows(*under), task, suite).verdict == "correct"
    over = correctness.grade(rows(*under, "x99"), task, suite)
    assert over.verdict == "wrong" and "the cap is 40" in over.notes[0]
    assert correctness.grade(rows(*under), task, a_suite()).verdict == "wrong"  # absolute 20


def test_banded_over_cap_is_partial_at_half_the_graded_set_and_never_correct() -> None:
    """The publication's rule: an over-cap impact answer naming at least half the graded set
    is partial (impact_partial_fraction 0.5), below half wrong; naming all is still partial."""
    suite = a_suite(GradingRules(over_cap="banded"), cap=5)
    task = a_task("impact", IMPACT8)
    noise = [f"x{i}" for i in range(10)]
    every = correctness.grade(rows(*IMPACT8["graded"], *noise), task, suite)
    assert every.verdict == "partial" and "at most partial" in every.notes[0]
    assert correctness.grade(rows(*IMPACT8["graded"][:4], *noise), task, suite).verdict \
        == "partial"
    assert correctness.grade(rows(*IMPACT8["graded"][:3], *noise), task, suite).verdict \
        == "wrong"
    wrong_rule = a_suite(cap=5)
    assert correctness.grade(rows(*IMPACT8["graded"], *noise), task, wrong_rule).verdict \
        == "wrong"


def test_a_task_override_wins_over_the_suite() -> None:
    suite = a_suite(GradingRules(over_cap="banded"), cap=5)
    noise = [f"x{i}" for i in range(10)]
    own = a_task("impact", IMPACT8, {"over_cap": "wrong"})
    assert correctness.grade(rows(*IMPACT8["graded"], *noise), own, suite).verdict == "wrong"
    locate = a_task("locate", {"primary": "p"}, {"cut": "none"})
    assert correctness.grade(rows("x", "y", "p"), locate, a_suite()).verdict == "correct"
    assert suite.rules(own) == GradingRules(over_cap="wrong")


def test_worst_orders_wrong_below_partial_below_correct() -> None:
    assert correctness.worst(["correct", "partial", "correct"]) == "partial"
    assert correctness.worst(["partial", "wrong"]) == "wrong"
    assert correctness.worst(["correct"]) == "correct"


# -- loading and validation ---------------------------------------------------------------------

def _suite_files(tmp_path: Path, suite_tail: str = "", task_tail: str = "") -> Path:
    folder = tmp_path / "suites" / "s"
    (folder / "tasks").mkdir(parents=True)
    (folder / "suite.toml").write_text(
        'version = 1\nname = "s"\ncorpus = "c"\narms = ["rg", "peer"]\nbaseline = "rg"\n'
        "reps = 1\ntimeout_s = 10\nprecision_cap = 20\ntop_k = 5\n\n[bands]\n"
        "references_correct_recall = 0.75\nreferences_correct_max_outside = 2\n"
        "references_partial_recall = 0.4\nimpact_partial_fraction = 0.5\n" + suite_tail)
    (folder / "tasks" / "imp.toml").write_text(
        'id = "imp"\nkind = "impact"\nlanguage = "csharp"\nexplanation = "x"\n\n[input]\n'
        'seed = "src/a.cs"\n\n[truth]\ngraded = ["src/b.cs", "src/c.cs"]\n' + task_tail)
    return folder


def test_a_suite_declaring_nothing_has_the_defaults(tmp_path: Path) -> None:
    _suite_files(tmp_path)
    loaded = load_suite(tmp_path / "suites", "s")
    assert loaded.grading == GradingRules() and loaded.grading_declared == ()
    assert loaded.tasks[0].grading == {} and loaded.tasks[0].published == {}


def test_declared_rules_and_task_overrides_load(tmp_path: Path) -> None:
    _suite_files(tmp_path, '\n[grading]\ncut = "none"\nprecision_cap = "graded-multiple"\n'
                 'precision_cap_multiple = 5\nover_cap = "banded"\ncell_grade = "worst"\n',
                 '\n[grading]\nover_cap = "wrong"\n')
    loaded = load_suite(tmp_path / "suites", "s")
    assert loaded.grading == GradingRules("none", "graded-multiple", 5, "banded", "worst")
    assert loaded.grading_declared == ("cut", "precision_cap", "over_cap", "cell_grade",
                                       "precision_cap_multiple")
    assert loaded.rules(loaded.tasks[0]).over_cap == "wrong"


SUITE_FILE, TASK_FILE = "suite.toml", "tasks/imp.toml"


@pytest.mark.parametrize(("where", "text", "key", "found"), [
    (SUITE_FILE, 'grading = "none"\n', "grading", "none"),
    (SUITE_FILE, '\n[grading]\ncut = "top_5"\n', "grading.cut", "top_5"),
    (SUITE_FILE, '\n[grading]\ntop_k = 3\n', "grading.top_k", "top_k"),
    (SUITE_FILE, '\n[grading]\nover_cap = "partial"\n', "grading.over_cap", "partial"),
    (SUITE_FILE, '\n[grading]\ncell_grade = "best"\n', "grading.cell_grade", "best"),
    (SUITE_FILE, '\n[grading]\nprecision_cap = "relative"\n', "grading.precision_cap",
     "relative"),
    (SUITE_FILE, '\n[grading]\nprecision_cap = "graded-multiple"\n',
     "grading.precision_cap_multiple", None),
    (SUITE_FILE, '\n[grading]\nprecision_cap = "graded-multiple"\nprecision_cap_multiple = 0\n',
     "grading.precision_cap_multiple", 0),
    (SUITE_FILE, '\n[grading]\nprecision_cap_multiple = 5\n', "grading.precision_cap",
     "absolute"),
    (TASK_FILE, '\n[grading]\nprecision_cap = "graded-multiple"\n',
     "grading.precision_cap_multiple", None),
    (TASK_FILE, '\n[grading]\ncut = 5\n', "grading.cut", 5),
    (TASK_FILE, '\n[published.ripgrep]\nsource = "s"\nlines = 1\nbytes = 1\n'
     'path_prefix = ""\ngrade = "correct"\n', "published.ripgrep", "ripgrep"),
    (TASK_FILE, '\n[published.rg]\nsource = "s"\nlines = 1\npath_prefix = ""\n',
     "published.rg.bytes", None),
    (TASK_FILE, '\n[published.rg]\nsource = "s"\nlines = -1\nbytes = 1\npath_prefix = ""\n'
     'grade = "correct"\n', "published.rg.lines", -1),
    (TASK_FILE, '\n[published.rg]\nsource = "s"\nlines = 1\nbytes = 1\n'
     'path_prefix = "bench/corpora/csharp"\ngrade = "correct"\n', "published.rg.path_prefix",
     "bench/corpora/csharp"),
    (TASK_FILE, '\n[published.rg]\nsource = "s"\nlines = 1\nbytes = 1\npath_prefix = ""\n'
     'grade = "good"\n', "published.rg.grade", "good"),
    (TASK_FILE, '\n[published.rg]\nsource = "s"\nlines = 1\nbytes = 1\npath_prefix = ""\n'
     'grade = "correct"\nrecall = 1.5\n', "published.rg.recall", 1.5),
    (TASK_FILE, '\n[published.rg]\nsource = "s"\nlines = 1\nbytes = 1\npath_prefix = ""\n'
     'grade = "correct"\nwhen = "2026"\n', "published.rg.when", "when"),
])
def test_each_bad_key_is_one_error_naming_file_key_expected_found(
        tmp_path: Path, where: str, text: str, key: str, found: Any) -> None:
    folder = _suite_files(tmp_path)
    path = folder / where
    body = path.read_text()
    if not text.startswith("\n"):  # a top-level key: before the first table
        body = text + body
    else:
        body += text
    path.write_text(body)
    with pytest.raises(InputError) as err:
        load_suite(tmp_path / "suites", "s")
    data = err.value.data
    assert (data["file"], data["key"], data["found"]) == (str(path), key, found)
    assert data["expected"] and err.value.exit_code == 2


def test_published_figures_load_with_their_printed_digits(tmp_path: Path) -> None:
    _suite_files(tmp_path, task_tail='\n[published.rg]\nsource = "devscout 2026-08"\n'
                 'lines = 14\nbytes = 3340\npath_prefix = "bench/corpora/csharp/"\n'
                 'grade = "partial"\nrecall = "1.000"\nprecision = 0.051\ngraded = 2\n')
    fig = load_suite(tmp_path / "suites", "s").tasks[0].published["rg"]
    assert (fig.lines, fig.bytes, fig.path_prefix, fig.grade) == (14, 3340,
                                                                  "bench/corpora/csharp/",
                                                                  "partial")
    assert (fig.recall, fig.recall_digits, fig.precision, fig.precision_digits, fig.graded) \
        == (1.0, 3, 0.051, 3, 2)


# -- the published comparison -------------------------------------------------------------------

def _swapped(stdout: bytes, prefix: str) -> bytes:
    """The output with the prefix swapped in, built: what swapped_figures counts (the mount
    wherever the byte before it, if any, is not one a word or a path goes on with)."""
    mount, out, at = b"/corpus/", bytearray(), 0
    while (found := stdout.find(mount, at)) >= 0:
        before = stdout[found - 1:found]
        starts = not before or not (before.isalnum() or before in b"_.~@+/-"
                                    or before[0] >= 0x80)
        out += stdout[at:found] + (prefix.encode() if starts else mount)
        at = found + len(mount)
    return bytes(out + stdout[at:])


def _figures(data: bytes) -> tuple[int, int]:
    lines = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    return lines, len(data)


def test_the_corpus_mount_is_swapped_wherever_a_path_starts_with_it() -> None:
    """At a line's start and within a line (after a blank, a quote, a bracket, `=`, `:`),
    never where it continues a longer word or path."""
    out = (b"/corpus/src/a.cs:1:x /corpus/y\n/corpus/b.cs\nno/corpus/c\n/corpusx\n"
           b'Found 2 in /corpus/d.cs (see "/corpus/e.cs", [/corpus/f], x=/corpus/g:/corpus/h)\n'
           b"data_/corpus/i .\xc3\xa9/corpus/j ~/corpus/k x//corpus/n ./corpus/o"
           b"\r/corpus/l\t/corpus/m")
    assert _swapped(out, "bench/c/") == (
        b"bench/c/src/a.cs:1:x bench/c/y\nbench/c/b.cs\nno/corpus/c\n/corpusx\n"
        b'Found 2 in bench/c/d.cs (see "bench/c/e.cs", [bench/c/f], x=bench/c/g:bench/c/h)\n'
        b"data_/corpus/i .\xc3\xa9/corpus/j ~/corpus/k x//corpus/n ./corpus/o"
        b"\rbench/c/l\tbench/c/m")
    for prefix in ("bench/corpora/csharp/", "p/", ""):  # longer, shorter: bytes change
        assert published.swapped_figures(out, prefix) == _figures(_swapped(out, prefix))
    for tail in (b"x /corpus/", b"/corpus/", b"a/corpus/"):  # the last line ends in the mount
        for prefix in ("p/", ""):
            assert published.swapped_figures(b"a\n" + tail, prefix) == \
                _figures(_swapped(b"a\n" + tail, prefix)), (tail, prefix)
    assert published.swapped_figures(b"a\nb", "p/") == (2, 3)
    assert published.swapped_figures(b"", "p/") == (0, 0)
    assert published.swapped_figures(b"a\n", "p/") == (1, 2)


def _fig(**kw: Any) -> Published:
    base = {"arm": "rg", "source": "pub", "lines": 2, "bytes": 0, "path_prefix": "p/",
            "grade": "partial", "recall": 1.0, "recall_digits": 3, "precision": 0.051,
            "precision_digits": 3, "graded": 2}
    return Published(**{**base, **kw})


def test_published_figures_reproduced_and_their_differences() -> None:
    out = b"/corpus/src/a.cs\n/corpus/src/b.cs\n"
    here = len(_swapped(out, "p/"))
    task = a_task("impact", {"graded": ["src/a.cs", "src/b.cs"]})
    cell_ = {"arm": "rg", "task": "t", "verdict": "partial", "flags": [],
             "grade": {"recall": 1.0, "precision": 0.050955}}
    same = published.compare(_fig(bytes=here), task, cell_, out)
    assert same["reproduced"] and [f["figure"] for f in same["figures"]] == \
        ["lines", "bytes", "grade", "recall", "precision", "graded"]
    off = published.compare(_fig(bytes=here + 5, lines=3, grade="correct", graded=8), task,
                            {**cell_, "grade": {"recall": 1.0, "precision": 0.0504}}, out)
    figs = {f["figure"]: f for f in off["figures"]}
    assert not off["reproduced"]
    assert (figs["bytes"]["difference"], figs["lines"]["difference"]) == (-5, -1)
    assert figs["grade"]["difference"] == "partial here, correct published"
    assert not figs["precision"]["reproduced"] and figs["recall"]["reproduced"]
    assert figs["graded"]["difference"] == -6


def test_a_publication_printing_no_grade_is_compared_on_what_it_printed() -> None:
    """No grade (nor line count) published: the grade here is shown, not compared, and the
    cell is reproduced when the bytes it printed are."""
    out = b"Found in /corpus/src/a.cs\n"
    task = a_task("impact", {"graded": ["src/a.cs"]})
    cell_ = {"arm": "rg", "task": "t", "verdict": "wrong", "flags": [], "grade": {}}
    bare = _fig(bytes=len(_swapped(out, "p/")), lines=None, grade=None, recall=None,
                precision=None, graded=None)
    result = published.compare(bare, task, cell_, out)
    assert result["reproduced"] and result["figures"][2] == {
        "figure": "grade", "published": None, "here": "wrong", "reproduced": None,
        "difference": None}
    assert not published.compare(replace(bare, bytes=1), task, cell_,
                                 out)["reproduced"]
    unscored = published.compare(bare, task, {**cell_, "verdict": "unscored"}, None)
    assert "printed no grade: nothing to compare" in unscored["notes"][0]


def test_a_published_block_may_print_no_grade(tmp_path: Path) -> None:
    _suite_files(tmp_path, task_tail='\n[published.rg]\nsource = "s"\nbytes = 9\n'
                                     'path_prefix = "bench/"\n')
    assert load_suite(tmp_path / "suites", "s").tasks[0].published["rg"].grade is None


def test_a_cell_without_output_reproduces_nothing_but_says_why() -> None:
    task = a_task("impact", {"graded": ["src/a.cs"]})
    result = published.compare(_fig(), task, {"arm": "rg", "task": "t", "flags": [],
                                              "verdict": "unscored", "grade": None}, None)
    assert not result["reproduced"] and "unscored" in result["notes"][0]
    assert {f["figure"]: f["here"] for f in result["figures"]}["lines"] is None


# -- every rep graded, on a built run -------------------------------------------------------------

IMP = "imp-a"  # graded: src/b.cs, src/d.cs; seed src/a.cs
BOTH = rg_rows("src/b.cs:1:x", "src/d.cs:1:x")
HALF = rg_rows("src/b.cs:1:x")


def _built(tmp_path: Path, tail: str = "", **kw: Any) -> RunBuilder:
    cells = {("rg", IMP): Cell(BOTH, warm_stdouts=(BOTH, HALF)),
             ("peer", IMP): Cell(BOTH, warm_stdouts=(BOTH, b"\xff\xfe not rows")),
             ("rg", "loc-a"): Cell(rg_rows("src/a.cs:1:x"))}
    return RunBuilder(tmp_path, cells=cells, suite_toml_tail=tail, **kw).build()


def _cell(scores: dict[str, Any], arm: str, task: str) -> dict[str, Any]:
    return next(c for c in scores["cells"] if (c["arm"], c["task"]) == (arm, task))


def test_every_rep_is_graded_and_a_cell_whose_grades_differ_is_unstable(
        tmp_path: Path) -> None:
    scores = score_run(_built(tmp_path).run_dir, tmp_path / "project" / "suites" / "mini")
    rg = _cell(scores, "rg", IMP)
    assert [r["verdict"] for r in rg["reps"]] == ["correct", "correct", "partial"]
    assert rg["unstable"] and rg["verdict"] == "correct" and rg["graded_rep"] == 0
    assert "output-varies" in rg["flags"]
    stable = _cell(scores, "rg", "loc-a")
    assert not stable["unstable"] and len(stable["reps"]) == 3
    assert scores["unstable"]["rg"]["tasks"] == [IMP]
    assert scores["unstable"]["rg"]["share"] == round(1 / scores["unstable"]["rg"]["graded"], 6)
    assert problems(scores) == []


def test_worst_takes_the_lowest_rep_and_a_failed_rep_is_wrong_with_its_kind(
        tmp_path: Path) -> None:
    built = _built(tmp_path, '\n[grading]\ncell_grade = "worst"\n')
    scores = score_run(built.run_dir, built.suite_dir)
    rg = _cell(scores, "rg", IMP)
    assert (rg["verdict"], rg["graded_rep"], rg["grade"]["recall"]) == ("partial", 2, 0.5)
    assert rg["cost"] is not None and rg["calls"] == _cell(scores, "rg", IMP)["calls"]
    assert scores["suite"]["grading"]["rules"]["cell_grade"] == "worst"
    assert scores["suite"]["grading"]["declared"] == ["cell_grade"]
    # A rep whose exec failed is wrong with its failure kind.
    failed = RunBuilder(tmp_path / "f", cells={("rg", IMP): Cell(
        BOTH, warm_outcomes=("ok", "timeout"))}, suite_toml_tail='\n[grading]\n'
        'cell_grade = "worst"\n').build()
    cell_ = _cell(score_run(failed.run_dir, failed.suite_dir), "rg", IMP)
    assert (cell_["verdict"], cell_["failure"], cell_["graded_rep"]) == ("wrong", "timeout", 2)
    assert cell_["reps"][2]["failure"] == "timeout" and "warm-failures" in cell_["flags"]


def test_the_rescore_self_check_covers_each_rep(tmp_path: Path) -> None:
    built = _built(tmp_path)
    first = score_run(built.run_dir, built.suite_dir)
    assert scorer.self_check(first, first) == []
    altered = json.loads(json.dumps(first))
    _cell(altered, "rg", IMP)["reps"][2]["verdict"] = "correct"
    assert scorer.self_check(altered, first) == [
        "rg/imp-a: REP 2 ('correct', 0.5, 1.0) -> ('partial', 0.5, 1.0)"]
    older = json.loads(json.dumps(first))
    for c in older["cells"]:
        del c["reps"]
    assert scorer.self_check(older, first) == []  # scores from before hold no reps


def test_worst_needs_every_warm_stream(tmp_path: Path) -> None:
    built = _built(tmp_path, '\n[grading]\ncell_grade = "worst"\n')
    (built.run_dir / "cells" / "rg" / IMP / "2" / "stdout").unlink()
    with pytest.raises(InputError, match="worst grade over its reps"):
        score_run(built.run_dir, built.suite_dir)


def test_published_cells_are_compared_in_scores(tmp_path: Path) -> None:
    pub = ('\n[published.rg]\nsource = "the paper"\nlines = 2\nbytes = 42\n'
           'path_prefix = "bench/c/"\ngrade = "correct"\nrecall = "1.000"\nprecision = 1.0\n'
           'graded = 2\n')
    built = RunBuilder(tmp_path, cells={("rg", IMP): Cell(rg_rows(
        "/corpus/src/b.cs:1:x", "/corpus/src/d.cs:1:x"))}, task_toml_tails={IMP: pub}).build()
    scores = score_run(built.run_dir, built.suite_dir)
    [entry] = scores["published"]
    assert (entry["arm"], entry["task"], entry["reproduced"]) == ("rg", IMP, True)
    assert len(b"bench/c/src/b.cs:1:x\nbench/c/src/d.cs:1:x\n") == 42
    assert problems(scores) == []


def test_a_published_arm_outside_the_suite_is_named(tmp_path: Path) -> None:
    pub = ('\n[published.ripgrep]\nsource = "s"\nlines = 1\nbytes = 1\npath_prefix = ""\n'
           'grade = "correct"\n')
    built = RunBuilder(tmp_path, task_toml_tails={IMP: pub}).build()
    with pytest.raises(InputError) as err:
        score_run(built.run_dir, built.suite_dir)
    assert err.value.data["key"] == "published.ripgrep"
    assert err.value.data["file"] == str(built.suite_dir / "tasks" / f"{IMP}.toml")


# -- flags: each one the scorer can set is defined ------------------------------------------------

def _added_flags(module: Any, function: str) -> set[str]:
    """Every string literal a function adds to a set or returns in a list: the flags it can
    emit, read from its source, so a flag added there without a definition fails here."""
    import inspect
    tree = ast.parse(inspect.getsource(getattr(module, function)))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add":
            found |= {a.value for a in node.args if isinstance(a, ast.Constant)}
        if isinstance(node, ast.Return) and node.value is not None:
            found |= {e.value for lst in ast.walk(node.value) if isinstance(lst, ast.List)
                      for e in lst.elts if isinstance(e, ast.Constant)}
    return found


def test_every_flag_the_scorer_can_set_is_defined() -> None:
    cell_flags = _added_flags(cell, "_flags")
    record_flags = _added_flags(transcripts, "sweep_flags") | _added_flags(transcripts,
                                                                          "timing_flags")
    # The reading finds the flags known today (so the check below is not vacuous).
    assert {"output-varies", "warm-failures", "stdout-truncated",
            "impossible-timing"} <= cell_flags
    assert {"stray-processes", "impossible-timing"} <= record_flags
    defined = {k.removeprefix("flag.") for k in scorer.DEFINITIONS if k.startswith("flag.")}
    assert cell_flags | record_flags <= defined
    assert all(scorer.DEFINITIONS[f"flag.{f}"].strip() for f in defined)


# -- the documents --------------------------------------------------------------------------------

def test_the_documents_show_rules_unstable_cells_flags_and_published_figures(
        tmp_path: Path) -> None:
    pub = ('\n[published.rg]\nsource = "the paper"\nlines = 2\nbytes = 99\npath_prefix = "b/"\n'
           'grade = "partial"\n')
    built = _built(tmp_path, '\n[grading]\nover_cap = "banded"\n',
                   task_toml_tails={IMP: pub + '\n[grading]\ncut = "none"\n'})
    scores = score_run(built.run_dir, built.suite_dir)
    text = render_markdown(scores)
    assert render_markdown(json.loads(json.dumps(scores))) == text  # byte-stable
    assert "| over_cap | banded | declared |" in text
    assert "| cell_grade | cold | default |" in text
    assert "| imp-a | cut | none |" in text
    assert "## Unstable cells" in text
    assert ("- rg / imp-a: REP 0 correct (recall 1.00, precision 1.00); REP 1 correct (recall "
            "1.00, precision 1.00); REP 2 partial (recall 0.50, precision 1.00); the cell's "
            "grade is REP 0's (correct)") in text
    assert "- `output-varies`: the reps whose exec succeeded" in text
    assert "- rg: unstable: REP 0 correct (recall 1.00, precision 1.00); REP 1 correct" in text
    assert "## Published figures" in text
    assert "no: bytes (" in text and "grade (correct here, partial published)" in text
    page = render_html(scores)
    assert render_html(json.loads(json.dumps(scores))) == page
    for part in ('id="unstable-cells"', 'id="published-figures"', "<dt>output-varies</dt>",
                 "<td>over_cap</td><td>banded</td><td>declared</td>"):
        assert part in page


def test_scores_written_before_the_grading_keys_still_render(tmp_path: Path) -> None:
    built = _built(tmp_path)
    scores = score_run(built.run_dir, built.suite_dir)
    older = json.loads(json.dumps(scores))
    for key in ("unstable", "published"):
        del older[key]
    del older["suite"]["grading"]
    for c in older["cells"]:
        for key in ("reps", "unstable", "graded_rep"):
            del c[key]
    assert problems(older) == []
    text = render_markdown(older)
    assert "## Unstable cells" not in text and "grading rules in force" not in text
    assert "<h2>Unstable cells</h2>" not in render_html(older)


def test_rules_are_replaced_only_by_what_a_task_declares() -> None:
    rules = GradingRules(cut="none", over_cap="banded")
    assert rules.over({}) is rules
    assert rules.over({"cut": "top_k"}) == replace(rules, cut="top_k")


# -- existing suites grade as before ------------------------------------------------------------

REPO = Path(__file__).resolve().parents[2]


# The suites sealed before grading rules could be declared: each grades by the defaults.
BEFORE_RULES = ("csharp", "csharp-held-out", "demo", "rust-edges", "serena-demo-typescript",
                "serena-typescript-parity", "typescript-parity")


def test_every_existing_suite_declares_no_rule_and_grades_by_the_defaults() -> None:
    from orchestrator.suite import known_suites
    names = known_suites(REPO / "suites")
    assert set(BEFORE_RULES) <= set(names)
    for name in BEFORE_RULES:
        loaded = load_suite(REPO / "suites", name)
        assert loaded.grading == GradingRules() and loaded.grading_declared == (), name
        assert all(loaded.rules(t) == GradingRules() for t in loaded.tasks), name


def test_the_reproduction_suite_declares_the_publications_rules() -> None:
    loaded = load_suite(REPO / "suites", "csharp-published-rg")
    assert loaded.grading == GradingRules(cut="none", precision_cap="graded-multiple",
                                          precision_cap_multiple=5, over_cap="banded",
                                          cell_grade="worst", seed="counted")
    assert all(set(t.published) == {"rg"} and set(t.commands) == {"rg"} for t in loaded.tasks)


def test_the_golden_run_keeps_every_grade(tmp_path: Path) -> None:
    """Whatever keys scores.json gained, re-scoring the golden run reproduces each committed
    cell's verdict, failure, recall and precision (the self-check's facts)."""
    import shutil
    golden = REPO / "tests" / "golden"
    run = tmp_path / "demo-run"
    shutil.copytree(golden / "demo-run", run, ignore=shutil.ignore_patterns("scores.json",
                                                                            "results.md"))
    scores = score_run(run, golden / "suites" / "demo")
    committed = json.loads((golden / "demo-run" / "scores.json").read_text())
    assert scorer.self_check(committed, scores) == []
    assert all(c["graded_rep"] in (None, 0) for c in scores["cells"])


def test_a_failed_warm_rep_is_wrong_without_its_streams(tmp_path: Path) -> None:
    built = RunBuilder(tmp_path, cells={("rg", IMP): Cell(
        BOTH, warm_outcomes=("timeout", "ok"))}, suite_toml_tail='\n[grading]\n'
        'cell_grade = "worst"\n').build()
    for stream in ("stdout", "stderr"):
        (built.run_dir / "cells" / "rg" / IMP / "1" / stream).unlink()
    cell_ = _cell(score_run(built.run_dir, built.suite_dir), "rg", IMP)
    assert (cell_["verdict"], cell_["failure"], cell_["graded_rep"]) == ("wrong", "timeout", 1)


def test_a_warm_stream_of_another_size_than_its_record_is_named(tmp_path: Path) -> None:
    built = _built(tmp_path)
    stdout = built.run_dir / "cells" / "rg" / IMP / "2" / "stdout"
    stdout.write_bytes(stdout.read_bytes() * 1000)
    with pytest.raises(InputError) as err:
        score_run(built.run_dir, built.suite_dir)
    assert err.value.data["key"] == "stdout.bytes_kept"


def test_an_edge_task_has_no_graded_set_of_files_to_compare() -> None:
    task = Task(id="t", kind="call-edges", language="rust", explanation="", input={},
                truth={"rule": "the oracle's"}, path=Path("t.toml"))
    cell_ = {"arm": "rg", "task": "t", "verdict": "correct", "flags": [],
             "grade": {"recall": 1.0, "precision": 1.0}}
    result = published.compare(_fig(grade="correct", lines=0), task, cell_, b"")
    graded = {f["figure"]: f for f in result["figures"]}["graded"]
    assert (graded["here"], graded["reproduced"]) == (None, False)


def test_the_new_sections_escape_what_they_show(tmp_path: Path) -> None:
    """A forged scores.json (or a task file's source text) brings no markup into either
    document: every string of the new sections goes through the renderers' escaping."""
    built = _built(tmp_path)
    scores = score_run(built.run_dir, built.suite_dir)
    forged = "<script>alert(1)</script>| x\n# Heading [l](http://e)"
    scores["published"] = [{"arm": "rg", "task": IMP, "source": forged, "path_prefix": forged,
                            "reproduced": False, "notes": [forged],
                            "figures": [{"figure": "grade", "published": forged,
                                         "here": forged, "reproduced": False,
                                         "difference": forged}]}]
    _cell(scores, "rg", IMP)["reps"][1]["failure"] = forged
    text, page = render_markdown(scores), render_html(scores)
    assert "<script>" not in text and "\n# Heading" not in text and "](http" not in text
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)" in page


def test_a_counted_seed_stays_in_the_answer_never_a_hit() -> None:
    """seed = "counted": the publication's 8/156 (its seed among the 156 files), not 8/155."""
    from orchestrator.parsers import Row
    from orchestrator.score.correctness import grade_impact
    from orchestrator.suite import Task
    task = Task(id="i", kind="impact", language="csharp", explanation="x",
                input={"seed": "S.cs"}, truth={"graded": ["A.cs", "B.cs"]}, path=Path("i.toml"))
    rows = [Row(p, None, None) for p in ("A.cs", "S.cs", "B.cs", "C.cs")]
    bands = {"impact_partial_fraction": 0.5}
    dropped = grade_impact(rows, task, 2, bands, "banded")
    counted = grade_impact(rows, task, 2, bands, "banded", "counted")
    assert (dropped.precision, counted.precision) == (Fraction(2, 3), Fraction(2, 4))
    assert dropped.answer == ("A.cs", "B.cs", "C.cs")
    assert counted.answer == ("A.cs", "S.cs", "B.cs", "C.cs") and "S.cs" not in counted.hits
    assert dropped.verdict == counted.verdict == "partial"  # over the cap of 2, banded

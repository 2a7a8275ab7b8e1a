"""Tasks that carry their own command per arm ([commands.ARM]), and the output shapes such a
command declares: every refusal of load_task and load_suite, the argv that runs, the file
list, the sections, the banners of one tool, and the call count of a script."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from orchestrator import parsers, suite
from orchestrator.errors import InputError
from orchestrator.parsers import ParseError, Row
from orchestrator.score.shapes import Shape, answer_section, file_list, parse_output
from orchestrator.untrusted.errors import HostileInput

REPO = Path(__file__).resolve().parents[2]
AIDER_BANNER = "Initial repo scan can be slow in larger repos, but only happens once."
RG = parsers.get_parser("rg")
AIDER = parsers.get_parser("aider-repomap")

TASK = '''id = "ref-money"
kind = "references"
language = "csharp"
explanation = "a test task"

[input]
symbol = "Money"

[truth]
core = ["src/a.cs"]
'''


def _task(tmp_path: Path, commands: str, head: str = TASK, name: str = "ref-money"
          ) -> suite.Task:
    path = tmp_path / f"{name}.toml"
    if commands.startswith("commands ="):  # a top-level key, before the first table
        head = head.replace("\n[input]", "\n" + commands + "[input]")
        commands = ""
    path.write_text(head + commands)
    return suite.load_task(path)


def _refused(tmp_path: Path, commands: str, key: str, **kw: Any) -> InputError:
    with pytest.raises(InputError) as err:
        _task(tmp_path, commands, **kw)
    assert err.value.data["key"] == key, err.value
    assert str(tmp_path) in str(err.value) and "expected" in str(err.value)
    return err.value


# -- load_task --------------------------------------------------------------------------------

def test_a_task_without_commands_has_none(tmp_path: Path) -> None:
    task = _task(tmp_path, "")
    assert task.commands == {} and task.command_argv("rg") is None


def test_an_argv_command_is_rendered_with_the_corpus_root(tmp_path: Path) -> None:
    task = _task(tmp_path, '[commands.rg]\nargv = ["rg", "-n", "-w", "-g", "*.{ext}", '
                           '"{symbol}", "{corpus}"]\n')
    command = task.commands["rg"]
    assert command.output == "tool" and command.sections is None and command.script is None
    assert task.command_argv("rg") == ["rg", "-n", "-w", "-g", "*.cs", "Money", "/corpus"]
    assert task.command_argv("ast-grep") is None


def test_a_script_gets_the_prelude_and_each_placeholder_as_one_quoted_word(
        tmp_path: Path) -> None:
    head = TASK.replace('symbol = "Money"', 'symbol = "it\'s $HOME; `x`"')
    task = _task(tmp_path, '[commands.rg]\nscript = "call printf \'%s\\\\n\' {symbol} {corpus}"\n'
                           'sections = "----"\nanswer_section = 2\noutput = "file-list"\n',
                 head=head)
    argv = task.command_argv("rg")
    assert argv is not None and argv[:2] == ["/bin/sh", "-c"]
    assert argv[2].startswith(suite.SCRIPT_PRELUDE)
    ran = subprocess.run(argv, capture_output=True, text=True, check=True)
    assert ran.stdout == "it's $HOME; `x`\n/corpus\n"
    assert ran.stderr.splitlines() == ["sandbench-call: printf %s\\n it's $HOME; `x` /corpus "]
    command = task.commands["rg"]
    assert (command.output, command.sections, command.answer_section) == ("file-list", "----", 2)


def test_a_scripts_own_braced_variables_are_the_shells(tmp_path: Path) -> None:
    task = _task(tmp_path, "[commands.rg]\nscript = 'x={symbol}; echo \"${x}\" ${HOME:+h}'\n")
    argv = task.command_argv("rg")
    assert argv is not None and argv[2].endswith("x=Money; echo \"${x}\" ${HOME:+h}")
    ran = subprocess.run(argv, capture_output=True, text=True, check=True,
                         env={"HOME": "/nowhere"})
    assert ran.stdout == "Money h\n"


def test_call_runs_its_command_with_its_status_and_one_line_per_call() -> None:
    script = suite.SCRIPT_PRELUDE + ('call sh -c "exit 3"; echo "status $?"; '
                                     'a=$(call printf "one\ntwo"); echo "$a"; call true')
    ran = subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True, check=True)
    assert ran.stdout == "status 3\none\ntwo\n"
    lines = ran.stderr.splitlines()
    assert len(lines) == 3 and all(line.startswith("sandbench-call: ") for line in lines)
    assert lines[1] == "sandbench-call: printf one two "  # a newline in a word: one line


@pytest.mark.parametrize(("commands", "key", "found"), [
    ('commands = "rg -n"\n', "commands", "rg -n"),
    ("commands = [1]\n", "commands", [1]),
    ('[commands]\nrg = "rg -n"\n', "commands.rg", "rg -n"),
    ('[commands.rg]\nargv = ["rg"]\nflags = "-n"\n', "commands.rg.flags", "flags"),
    ('[commands.rg]\nargv = ["rg"]\nscript = "rg"\n', "commands.rg", ["argv", "script"]),
    ('[commands.rg]\noutput = "tool"\n', "commands.rg", []),
    ("[commands.rg]\nargv = []\n", "commands.rg.argv", []),
    ('[commands.rg]\nargv = "rg -n"\n', "commands.rg.argv", "rg -n"),
    ('[commands.rg]\nargv = ["rg", 1]\n', "commands.rg.argv", ["rg", 1]),
    ('[commands.rg]\nargv = ["", "-n"]\n', "commands.rg.argv", ["", "-n"]),
    ('[commands.rg]\nscript = "  "\n', "commands.rg.script", "  "),
    ("[commands.rg]\nscript = 3\n", "commands.rg.script", 3),
    ('[commands.rg]\nargv = ["rg", "{ticket}"]\n', "commands.rg.argv", "{ticket}"),
    ('[commands.rg]\nargv = ["rg", "{seed}", "{corpus}"]\n', "commands.rg.argv", "{seed}"),
    ('[commands.rg]\nscript = "call rg {Symbol} {corpus}"\n', "commands.rg.script",
     "{Symbol}"),
    ('[commands.rg]\nargv = ["rg"]\noutput = "lines"\n', "commands.rg.output", "lines"),
    ('[commands.rg]\nargv = ["rg"]\nsections = ""\n', "commands.rg.sections", ""),
    ('[commands.rg]\nargv = ["rg"]\nsections = "--\\n--"\n', "commands.rg.sections",
     "--\n--"),
    ('[commands.rg]\nargv = ["rg"]\nsections = 4\n', "commands.rg.sections", 4),
    ('[commands.rg]\nargv = ["rg"]\nanswer_section = 2\n', "commands.rg.answer_section", 2),
    ('[commands.rg]\nargv = ["rg"]\nsections = "--"\nanswer_section = 0\n',
     "commands.rg.answer_section", 0),
    ('[commands.rg]\nargv = ["rg"]\nsections = "--"\nanswer_section = "first"\n',
     "commands.rg.answer_section", "first"),
    ('[commands.rg]\nargv = ["rg"]\nsections = "--"\nanswer_section = true\n',
     "commands.rg.answer_section", True),
    ('[commands.rg]\nargv = ["rg"]\nsections = "--"\nanswer_section = 1.0\n',
     "commands.rg.answer_section", 1.0),
])
def test_every_bad_command_is_one_error_naming_its_key(
        tmp_path: Path, commands: str, key: str, found: object) -> None:
    err = _refused(tmp_path, commands, key)
    assert err.data["found"] == found


def test_an_edge_task_carries_no_command(tmp_path: Path) -> None:
    head = ('id = "calls"\nkind = "call-edges"\nlanguage = "rust"\nexplanation = "x"\n'
            '[input]\nproject = "."\n[truth]\nrule = "the oracle\'s calls"\n')
    err = _refused(tmp_path, '[commands.rg]\nargv = ["rg"]\n', "commands", head=head,
                   name="calls")
    assert "edges" in str(err)


# -- load_suite: which arms a command may name --------------------------------------------------

@pytest.fixture
def demo(tmp_path: Path) -> Path:
    """A copy of the demo suite beside the project's arms and corpus lock."""
    project = tmp_path / "project"
    shutil.copytree(REPO / "suites" / "demo", project / "suites" / "demo")
    shutil.copytree(REPO / "arms", project / "arms")
    shutil.copy2(REPO / "corpus.lock", project / "corpus.lock")
    return project / "suites"


def _give(suites: Path, task: str, commands: str) -> Path:
    path = suites / "demo" / "tasks" / f"{task}.toml"
    path.write_text(path.read_text() + "\n" + commands)
    return path


def test_a_suite_loads_with_a_command_for_one_of_its_arms(demo: Path) -> None:
    _give(demo, "references-money-csharp", '[commands.rg]\nargv = ["rg", "-l", "{symbol}"]\n')
    loaded = suite.load_suite(demo, "demo")
    task = next(t for t in loaded.tasks if t.id == "references-money-csharp")
    assert task.command_argv("rg") == ["rg", "-l", "Money"]


@pytest.mark.parametrize(("task", "arm", "expected"), [
    ("references-money-csharp", "serena", "one of the suite's arms"),
    ("references-money-csharp", "code-index-mcp", "a command-line arm"),
    ("references-money-csharp", "ctags", "an arm that attempts references tasks"),
])
def test_a_command_for_an_arm_that_cannot_run_it_is_refused(
        demo: Path, task: str, arm: str, expected: str) -> None:
    path = _give(demo, task, f'[commands.{arm}]\nargv = ["rg", "-l", "{{symbol}}"]\n')
    with pytest.raises(InputError) as err:
        suite.load_suite(demo, "demo")
    assert err.value.data["key"] == f"commands.{arm}" and err.value.data["found"] == arm
    assert expected in str(err.value) and str(path) in str(err.value)


# -- the shapes ---------------------------------------------------------------------------------

def test_a_file_list_is_read_through_repo_path() -> None:
    out = b"/corpus/src/a.cs\n./src/b.cs\n\nsrc/c:12:d.cs\r\nsrc/\xff.cs\n"
    assert file_list(out, "rg") == (Row("src/a.cs", None, None), Row("src/b.cs", None, None),
                                    Row("src/c:12:d.cs", None, None),
                                    Row("src/\\xff.cs", None, None))
    for bad in (b"/etc/passwd\n", b"src/../../x\n", b"./\n", b"a" * 5000 + b"\n"):
        with pytest.raises((ParseError, HostileInput)):
            file_list(bad, "rg")


def test_a_file_list_shape_keeps_the_order_and_counts_one_call() -> None:
    parsed = parse_output(RG, b"/corpus/b.cs\n/corpus/a.cs\n", b"", "e2e-retrieval",
                          Shape(output="file-list"))
    assert [r.path for r in parsed.rows] == ["b.cs", "a.cs"] and parsed.calls == 1


SECTIONED = (b"/corpus/s.cs:3:class S\n----\n/corpus/x.cs\n/corpus/y.cs\n----\n"
             b"12:text of a single-file rg\n----\n/corpus/z.cs\n/corpus/x.cs\n")


def test_sections_last_and_by_number() -> None:
    assert answer_section(SECTIONED, "----", "last", "rg") == b"/corpus/z.cs\n/corpus/x.cs\n"
    assert answer_section(SECTIONED, "----", 1, "rg") == b"/corpus/s.cs:3:class S"
    assert answer_section(SECTIONED, "----", 3, "rg") == b"12:text of a single-file rg"
    assert answer_section(b"a\r\n----\r\nb\r\n", "----", 2, "rg") == b"b\r\n"
    assert answer_section(b"no separator\n", "----", "last", "rg") == b"no separator\n"
    # A line holding the separator among other text is no separator.
    assert answer_section(b"a ---- b\n", "----", "last", "rg") == b"a ---- b\n"


def test_a_missing_section_is_a_parse_error_naming_it() -> None:
    with pytest.raises(ParseError, match=r"answer section 5 is missing: the output has 4 "):
        answer_section(SECTIONED, "----", 5, "rg")
    with pytest.raises(ParseError) as err:
        parse_output(RG, b"only one\n", b"", "impact",
                     Shape(sections="----", answer_section=2))
    assert err.value.data == {"parser": "rg", "section": 2, "sections": 1}


def test_only_the_answer_section_is_parsed() -> None:
    """The earlier sections (a single-file rg's `N:text`, file lists) would not parse as rg's
    format or as a file list; only the declared one is read."""
    stderr = b"sandbench-call: rg -n\n" * 4
    shape = Shape(output="file-list", sections="----", script=True)
    parsed = parse_output(RG, SECTIONED, stderr, "impact", shape)
    assert [r.path for r in parsed.rows] == ["z.cs", "x.cs"] and parsed.calls == 4
    tool = parse_output(RG, SECTIONED, b"", "impact", Shape(sections="----", answer_section=1))
    assert tool.rows == (Row("s.cs", 3, "class S"),)
    with pytest.raises(ParseError, match="rg: line 2 is not path:line:text: '----'"):
        parse_output(RG, SECTIONED, b"", "impact", Shape())


def test_a_script_counts_exactly_its_call_lines() -> None:
    stderr = b"sandbench-call: rg a\nnoise\n  sandbench-call: indented\nsandbench-call: rg b\n"
    assert parse_output(RG, b"", stderr, "impact", Shape(script=True)).calls == 2
    assert parse_output(RG, b"", b"", "impact", Shape(script=True)).calls == 0
    assert parse_output(RG, b"", b"", "impact", Shape()).calls == 1  # a plain command
    assert parse_output(RG, b"", stderr, "impact", Shape()).calls == 2


# -- banners: one tool's, leading lines only ------------------------------------------------------

def test_aiders_banner_is_skipped_only_at_the_start() -> None:
    row = b"./src/a.py:3:f\n"
    banner = AIDER_BANNER.encode() + b"\n"
    assert AIDER.parse(banner + row, b"", "locate").rows == (Row("src/a.py", 3, "f"),)
    assert AIDER.parse(banner + banner.replace(b"\n", b"\r\n") + row, b"", "locate").rows \
        == (Row("src/a.py", 3, "f"),)
    assert AIDER.parse(banner, b"", "locate").rows == ()
    assert AIDER.parse(banner.rstrip(b"\n"), b"", "locate").rows == ()
    with pytest.raises(ParseError, match="aider-repomap: line 2"):
        AIDER.parse(row + banner, b"", "locate")
    for near in (b" " + banner, banner.replace(b"once.", b"once"), banner.upper()):
        with pytest.raises(ParseError):
            AIDER.parse(near + row, b"", "locate")


def test_another_tools_banner_is_not_skipped() -> None:
    banner = AIDER_BANNER.encode() + b"\n"
    with pytest.raises(ParseError, match="rg: line 1 is not path:line:text"):
        RG.parse(banner + b"./src/a.py:3:f\n", b"", "locate")
    # As a file list, the arm's parser's banners are skipped, and no other tool's.
    listed = parse_output(AIDER, banner + b"/corpus/a.py\n", b"", "locate",
                          Shape(output="file-list"))
    assert [r.path for r in listed.rows] == ["a.py"]
    unlisted = parse_output(RG, banner + b"/corpus/a.py\n", b"", "locate",
                            Shape(output="file-list"))
    assert [r.path for r in unlisted.rows] == [AIDER_BANNER, "a.py"]


def test_skip_banners_without_banners_is_the_identity() -> None:
    data = b"x\n" * 3
    assert parsers.skip_banners(data, ()) is data
    assert parsers.skip_banners(b"", ("a",)) == b""
    assert parsers.skip_banners(b"a\na\nb\na\n", ("a",)) == b"b\na\n"


def test_aiders_cold_output_on_a_large_corpus_is_read_by_its_own_parser() -> None:
    """A real cold cell (tests/unit/parser_fixtures/README.md): the rg parser, which the arm
    named before, refuses it at its banner; the arm's own parser reads every row after it."""
    out = (REPO / "tests/unit/parser_fixtures/aider-repomap/locate-jobservice-cold.stdout"
           ).read_bytes()
    assert out.startswith(AIDER_BANNER.encode() + b"\n")
    with pytest.raises(ParseError, match="rg: line 1 "):
        RG.parse(out, b"", "locate")
    parsed = AIDER.parse(out, b"", "locate")
    assert len(parsed.rows) == out.count(b"\n") - 1 == 45 and parsed.calls == 1
    assert parsed.rows[0] == Row("src/MassTransit/JobService/Configuration/JobSagaSettings.cs",
                                 9, "JobSagaSettings")


# -- the scorer's shape of a cell, and the report's disclosure ------------------------------------

def test_a_cell_is_read_as_its_tasks_command_declares(tmp_path: Path) -> None:
    from orchestrator.score.cell import output_shape
    task = _task(tmp_path, '[commands.rg]\nscript = "call rg -l x {corpus}"\n'
                           'output = "file-list"\nsections = "----"\nanswer_section = 2\n')
    assert output_shape(task, "rg") == Shape(output="file-list", sections="----",
                                             answer_section=2, script=True)
    assert output_shape(task, "ast-grep") == Shape()
    argv_task = _task(tmp_path, '[commands.rg]\nargv = ["rg", "-l", "x", "{corpus}"]\n')
    assert output_shape(argv_task, "rg") == Shape()


def test_the_report_names_the_cells_that_ran_a_task_given_command(tmp_path: Path) -> None:
    from test_score_fixtures import Cell, RunBuilder, rg_rows

    from orchestrator.report.html import render_html
    from orchestrator.report.markdown import render_markdown
    from orchestrator.score import compute

    b = RunBuilder(tmp_path)
    b.cells[("rg", "ref-money")] = Cell(rg_rows("src/a.cs:2:Money"))
    b.build()
    scores, _ = compute(b.run_dir, b.suite_dir)
    assert {c["command"] for c in scores["cells"]} <= {"arm", None}
    before = (render_markdown(scores), render_html(scores))
    assert "Task-given commands" not in before[0] + before[1]  # none ran: no section
    for cell in scores["cells"]:
        if (cell["arm"], cell["task"]) in {("rg", "ref-money"), ("rg", "imp-a")}:
            cell["command"] = "task"
    markdown, html = render_markdown(scores), render_html(scores)
    assert "\n## Task-given commands\n" in markdown
    assert "\n- rg: `ref-money`, `imp-a`\n" in markdown or \
        "\n- rg: `imp-a`, `ref-money`\n" in markdown
    assert '<section id="task-given-commands">' in html
    assert "<li>rg: ref-money, imp-a</li>" in html or "<li>rg: imp-a, ref-money</li>" in html

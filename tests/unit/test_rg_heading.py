"""The `rg-heading` parser (ripgrep's `--heading -n` output, as a publication pasted it from a
terminal) and a task command naming it: read, refused, sealed, and used for the cell."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_parsers import fixture

from orchestrator import parsers, suite
from orchestrator.errors import InputError
from orchestrator.parsers import ParseError, Row
from orchestrator.score.shapes import Shape, parse_output
from orchestrator.score.cell import output_shape
from orchestrator.suite.sealing import sealed_inputs
from orchestrator.settings import Settings

REPO = Path(__file__).resolve().parents[2]
HEADING = parsers.get_parser("rg-heading")
RG = parsers.get_parser("rg")

# Captured from ripgrep 13.0.0 (the rg arm's image): `rg --heading -n --binary --sort path
# Money /corpus/src`, then `rg --heading -n -C1 Money /corpus/src/gap.txt /corpus/src/Use.cs`.
MATCHES = (b"/corpus/src/Money.cs\n2:public class Money\n4:    // Money here\n"
           b"6:    Money Add(Money m) => m;\n\n/corpus/src/Use.cs\n1:var m = new Money();\n"
           b'/corpus/src/blob.bin: binary file matches (found "\\0" byte around offset 3)\n\n'
           b"/corpus/src/gap.txt\n1:a Money\n6:f Money\n")
CONTEXT = (b"/corpus/src/Use.cs\n1:var m = new Money();\n\n/corpus/src/gap.txt\n1:a Money\n"
           b"2-b\n--\n5-e\n6:f Money\n")


def test_every_match_is_a_row_of_its_files_group() -> None:
    parsed = HEADING.parse(MATCHES, b"", "references")
    assert parsed.rows == (Row("src/Money.cs", 2, "public class Money"),
                           Row("src/Money.cs", 4, "// Money here"),
                           Row("src/Money.cs", 6, "Money Add(Money m) => m;"),
                           Row("src/Use.cs", 1, "var m = new Money();"),
                           Row("src/gap.txt", 1, "a Money"), Row("src/gap.txt", 6, "f Money"))
    assert parsed.calls == 1


def test_context_lines_and_breaks_give_no_row() -> None:
    assert [(r.path, r.line) for r in HEADING.parse(CONTEXT, b"", "impact").rows] == \
        [("src/Use.cs", 1), ("src/gap.txt", 1), ("src/gap.txt", 6)]


def test_the_column_stays_in_the_reason_as_the_rg_parser_keeps_it() -> None:
    out = b"/corpus/src/Money.cs\n2:14:public class Money\r\n"
    assert HEADING.parse(out, b"", "locate").rows == RG.parse(
        b"/corpus/src/Money.cs:2:14:public class Money\n", b"", "locate").rows


@pytest.mark.parametrize(("out", "said"), [
    (b"/corpus/a.cs\npublic class Money\n", "line 2: expected line:text"),  # no -n
    (b"/corpus/a.cs\n\n/corpus/b.cs\n1:x\n", "line 2: expected line:text or line-text right after"),
    (b"/corpus/a.cs\n1:x\n\n/corpus/b.cs\n", "ends right after a file's path"),
    (b"1:a Money\n6:f Money\n", "line 1: expected a file's path (rg prints none"),
    (b"/etc/passwd\n1:root\n", "absolute path outside /corpus"),
    (b"/corpus/../x\n1:y\n", "not a path inside the repository"),
])
def test_output_it_cannot_read_is_a_parse_error(out: bytes, said: str) -> None:
    with pytest.raises(ParseError, match=said.replace("(", r"\(")):
        HEADING.parse(out, b"", "references")


def test_the_heading_form_gives_the_rows_rg_gives_without_it() -> None:
    """The same search on the demo corpus, captured in both forms (parser_fixtures/README.md):
    the same rows (rg's order without --sort is its threads', so compared as sets)."""
    heading = HEADING.parse(*fixture("rg-heading", "references-money-csharp"), "references")
    plain = RG.parse(*fixture("rg", "references-money-csharp"), "references")
    assert len(heading.rows) == 34 and set(heading.rows) == set(plain.rows)


def test_the_rg_parser_cannot_read_the_heading_form() -> None:
    """Why the form needs its own parser: rg's default parser refuses it."""
    with pytest.raises(ParseError):
        RG.parse(MATCHES, b"", "references")


# -- a task's command naming it ------------------------------------------------------------------

@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the demo suite beside the project's arms, corpus lock and sources."""
    root = tmp_path / "project"
    shutil.copytree(REPO / "suites" / "demo", root / "suites" / "demo")
    shutil.copytree(REPO / "arms", root / "arms")
    shutil.copytree(REPO / "orchestrator", root / "orchestrator",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(REPO / "corpus.lock", root / "corpus.lock")
    return root


def _command(root: Path, output: str) -> Path:
    path = root / "suites" / "demo" / "tasks" / "references-money-csharp.toml"
    path.write_text(path.read_text() + '\n[commands.rg]\nargv = ["rg", "--heading", "-n", '
                    f'"{{symbol}}", "{{corpus}}"]\noutput = "{output}"\n')
    return path


def test_a_task_command_reads_its_output_with_the_parser_it_names(project: Path) -> None:
    _command(project, "rg-heading")
    loaded = suite.load_suite(project / "suites", "demo")
    task = next(t for t in loaded.tasks if t.id == "references-money-csharp")
    shape = output_shape(task, "rg")
    assert shape == Shape(output="rg-heading")
    # the cell's rows are the named parser's, whatever the arm's parser is
    assert parse_output(RG, MATCHES, b"", "references", shape).rows == \
        HEADING.parse(MATCHES, b"", "references").rows


def test_the_seal_covers_the_parser_a_task_names_and_only_then(project: Path) -> None:
    settings = Settings(project_root=project, bench_root=project / "bench")
    module = "orchestrator/parsers/rg_heading.py"
    assert module not in sealed_inputs(suite.load_suite(project / "suites", "demo"), settings)
    _command(project, "rg-heading")
    assert module in sealed_inputs(suite.load_suite(project / "suites", "demo"), settings)


def test_an_output_naming_no_parser_is_refused_listing_them(project: Path) -> None:
    path = _command(project, "rg-human")
    with pytest.raises(InputError) as err:
        suite.load_suite(project / "suites", "demo")
    assert err.value.data["key"] == "commands.rg.output" and str(path) in str(err.value)
    assert "or a parser's name (" in str(err.value) and "rg-heading" in str(err.value)

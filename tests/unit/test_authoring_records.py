"""Authoring, complete: the records schema and its example, records carrying a task's commands
and published figures, the declared test-file choice, the refusal (or disclosed acceptance) of
a task that can never be correct, the records file sealed with the suite, `suite new` taking
every choice of suite.toml, and `corpus add` from a mirror without a remote."""

from __future__ import annotations

import json
import os
import shutil
import tomllib
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from orchestrator import suite
from orchestrator.authoring import read_records
from orchestrator.corpus.git import clean_git
from orchestrator.errors import InputError
from orchestrator.sandbox.shared_checks import load_schema
from tests.unit.test_authoring import (URL, Shop, _add_corpus, _add_tasks, _new_suite, _ready,
                                       _tree, make_shop, sandbench)

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "docs" / "records.example.json"
PUBLISHED = {"source": "a paper, 2026", "bytes": 120, "path_prefix": "corpus/",
             "grade": "partial", "recall": "0.50", "tool_version": "ripgrep 15.2.0"}


@pytest.fixture
def shop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Shop:
    return make_shop(tmp_path, monkeypatch)


def _json_records(shop: Shop, records: list[dict[str, Any]], name: str = "records.json"
                  ) -> Path:
    path = shop.project / name
    path.write_text(json.dumps({"version": 1, "record": records}))
    return path


def _fixes(shop: Shop, **extra: Any) -> dict[str, Any]:
    """The record whose two fixes touch Price, Cart and the test file MoneyTests."""
    return {"id": "price", "title": "Prices are wrong", "fix": [shop.fix1, shop.fix2], **extra}


def _suite_dir(shop: Shop) -> Path:
    return shop.project / "suites" / "shop-suite"


# -- the schema and its example ------------------------------------------------------------

def test_the_schema_is_a_schema_and_the_example_matches_it() -> None:
    Draft202012Validator.check_schema(load_schema("records.schema.json"))
    language, records = read_records(EXAMPLE)
    assert language == "csharp" and [r.id for r in records] == [
        "trim-exception-headers", "job-state-events", "message-urn"]
    assert records[1].kinds == ("e2e-retrieval",)
    assert records[2].published["references"]["rg"]["graded"] == 18
    assert records[0].commands["references"]["rg"]["argv"][-1] == "{corpus}"


@pytest.mark.parametrize(("edit", "said"), [
    (lambda r: r.update(symbl="Money"), "record[0].symbl: expected one of"),
    (lambda r: r.update(fix=["XYZ"]), "record[0].fix[0]: expected commits of 7 to 40"),
    (lambda r: r.update(commands={"build": {"rg": {"argv": ["x"]}}}),
     "record[0].commands: expected one of locate, references, impact, e2e-retrieval, "
     "found 'build'"),
    (lambda r: r.update(commands={"references": {"Bad Arm": {"argv": ["x"]}}}),
     "expected an arm name"),
    (lambda r: r.update(published={"impact": {"rg": PUBLISHED}}),
     "record[0].published.impact: expected one of the kinds this record makes"),
    (lambda r: r.update(accept_unreachable=["locate", "locate"]),
     "record[0].accept_unreachable: expected a non-empty list of kinds, each once"),
])
def test_a_records_file_is_checked_against_the_schema(tmp_path: Path, edit, said: str) -> None:
    record: dict[str, Any] = {"id": "money", "symbol": "Money"}
    edit(record)
    path = tmp_path / "records.json"
    path.write_text(json.dumps({"version": 1, "record": [record]}))
    with pytest.raises(InputError) as err:
        read_records(path)
    assert said in str(err.value), str(err.value)
    assert str(path) in str(err.value)


# -- commands and published figures --------------------------------------------------------

def test_records_carry_commands_and_published_figures(shop: Shop) -> None:
    _ready(shop)
    script = "call rg -n -w '{symbol}' {corpus}\ncall rg -l '{symbol}' {corpus}"
    records = _json_records(shop, [
        {"id": "money", "symbol": "Money", "seed": "src/Shop/Money.cs",
         "commands": {"references": {"rg": {"argv": ["rg", "-n", "-w", "{symbol}", "{corpus}"],
                                             "output": "tool"}},
                      "impact": {"rg": {"script": script.replace("symbol", "seed"),
                                        "sections": "---", "answer_section": 2}}},
         "published": {"references": {"rg": PUBLISHED}}}])
    made = _add_tasks(shop, records)
    assert made.exit_code == 0, made.output
    loaded = {t.id: t for t in suite.load_suite(shop.project / "suites", "shop-suite").tasks}
    refs, impact = loaded["references-money"], loaded["impact-money"]
    assert refs.commands["rg"].argv == ("rg", "-n", "-w", "{symbol}", "{corpus}")
    assert impact.commands["rg"].script == script.replace("symbol", "seed")
    assert impact.commands["rg"].answer_section == 2 and impact.published == {}
    published = refs.published["rg"]
    assert (published.source, published.bytes, published.grade, published.recall_digits,
            published.tool_version) == ("a paper, 2026", 120, "partial", 2, "ripgrep 15.2.0")


@pytest.mark.parametrize(("tables", "said"), [
    ({"commands": {"references": {"ctags": {"argv": ["x"]}}}},
     "record[0].commands.references.ctags: expected one of the suite's arms"),
    ({"published": {"references": {"rg": {"source": "a paper"}}}},
     "makes task references-money, which the task loader refuses"),
    ({"commands": {"references": {"rg": {"argv": ["rg", "{nothing}"]}}}},
     "placeholders among"),
])
def test_bad_task_tables_are_refused_naming_the_record(shop: Shop, tables, said) -> None:
    _ready(shop)
    before = _tree(_suite_dir(shop))
    result = _add_tasks(shop, _json_records(shop, [{"id": "money", "symbol": "Money",
                                                    **tables}]))
    assert result.exit_code == 2 and said in result.output, result.output
    assert "records.json" in result.output and "Traceback" not in result.output
    assert _tree(_suite_dir(shop)) == before


# -- the test-file choice ------------------------------------------------------------------

def test_test_files_exclude_leaves_the_fix_test_files_out(shop: Shop) -> None:
    _ready(shop, "--test-files", "exclude")
    assert _add_tasks(shop, _json_records(shop, [_fixes(shop)])).exit_code == 0
    loaded = suite.load_suite(shop.project / "suites", "shop-suite")
    assert loaded.test_files == "exclude"
    tasks = {t.id: t for t in loaded.tasks}
    assert tasks["e2e-retrieval-price"].truth["touched"] == ["src/Shop/Price.cs",
                                                              "src/Shop/Cart.cs"]
    assert tasks["locate-price"].truth["touched"] == ["src/Shop/Cart.cs"]
    said = " ".join(tasks["e2e-retrieval-price"].explanation.split())
    assert ('Test files left out (the suite\'s test_files = "exclude"): '
            "tests/Shop.Tests/MoneyTests.cs.") in said
    prereg = " ".join((_suite_dir(shop) / suite.PREREGISTRATION).read_text().split())
    assert "`e2e-retrieval` leaves out the test files the fix touched" in prereg


def test_test_files_include_is_the_default_and_is_said(shop: Shop) -> None:
    _ready(shop)
    assert _add_tasks(shop, _json_records(shop, [_fixes(shop)])).exit_code == 0
    loaded = suite.load_suite(shop.project / "suites", "shop-suite")
    task = next(t for t in loaded.tasks if t.id == "e2e-retrieval-price")
    assert loaded.test_files == "include" and "tests/Shop.Tests/MoneyTests.cs" in \
        task.truth["touched"]
    assert 'Test files kept (the suite\'s test_files = "include")' in " ".join(
        task.explanation.split())


def test_a_suite_toml_with_a_bad_test_file_choice_is_refused(shop: Shop) -> None:
    _ready(shop)
    assert _add_tasks(shop, _json_records(shop, [_fixes(shop)])).exit_code == 0
    toml = _suite_dir(shop) / "suite.toml"
    toml.write_text(toml.read_text().replace('test_files = "include"', 'test_files = "some"'))
    with pytest.raises(InputError, match='test_files: expected include or exclude'):
        suite.load_suite(shop.project / "suites", "shop-suite")


# -- a truth the cut or the cap cannot reach ----------------------------------------------

def test_a_task_that_can_never_be_correct_is_refused(shop: Shop) -> None:
    _ready(shop, "--top-k", "2")
    before = _tree(_suite_dir(shop))
    result = _add_tasks(shop, _json_records(shop, [_fixes(shop)]))
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert ("record[0].kinds: expected tasks that can be graded correct under the suite's cut "
            "and cap") in said
    assert ("'e2e-retrieval-price: its truth has 3 touched files and the suite cuts an answer "
            "at its first 2 (top_k)'") in said
    assert 'fix: drop e2e-retrieval' in said and 'accept_unreachable = ["e2e-retrieval"]' in said
    assert _tree(_suite_dir(shop)) == before


def test_an_unreachable_task_kept_by_its_record_is_disclosed(shop: Shop) -> None:
    _ready(shop, "--top-k", "2")
    records = _json_records(shop, [_fixes(shop, accept_unreachable=["e2e-retrieval"])])
    assert _add_tasks(shop, records).exit_code == 0
    task = suite.load_task(_suite_dir(shop) / "tasks" / "e2e-retrieval-price.toml")
    assert "It can never be graded correct: its truth has 3 touched files" in " ".join(
        task.explanation.split())
    prereg = (_suite_dir(shop) / suite.PREREGISTRATION).read_text()
    assert "- e2e-retrieval-price can never be graded correct: its truth has 3" in prereg


def test_accepting_a_reachable_task_and_an_impact_over_the_cap_are_refused(shop: Shop) -> None:
    _ready(shop, "--precision-cap", "2")
    stale = _add_tasks(shop, _json_records(shop, [_fixes(shop, accept_unreachable=["locate"])]))
    assert stale.exit_code == 2 and "record[0].accept_unreachable: expected only kinds whose " \
        "task can never be graded correct" in " ".join(stale.output.split())
    impact = _add_tasks(shop, _json_records(shop, [_fixes(shop, seed="src/Shop/Money.cs",
                                                          kinds=["impact"])]))
    assert impact.exit_code == 2, impact.output
    assert "impact-price: its truth has 3 graded files and the suite's precision cap is 2" in \
        " ".join(impact.output.split())


def test_no_cut_declared_means_no_refusal(shop: Shop) -> None:
    _ready(shop, "--top-k", "2", "--grading", "cut=none")
    assert _add_tasks(shop, _json_records(shop, [_fixes(shop)])).exit_code == 0


# -- the records file in the suite ---------------------------------------------------------

def test_the_records_file_is_copied_sealed_and_quoted_by_relative_path(shop: Shop) -> None:
    _ready(shop)
    records = _json_records(shop, [_fixes(shop), {"id": "money", "symbol": "Money"}])
    assert _add_tasks(shop, records).exit_code == 0
    copy = _suite_dir(shop) / "records" / "records.json"
    assert copy.read_bytes() == records.read_bytes()
    for task in (_suite_dir(shop) / "tasks").glob("*.toml"):
        text = task.read_text()
        assert str(shop.project) not in text and str(shop.bench) not in text
        assert "--records suites/shop-suite/records/records.json" in " ".join(text.split())
    # a second file of that name would change what the tasks quote: refused
    other = _json_records(shop, [{"id": "tax", "symbol": "Tax"}])
    taken = _add_tasks(shop, other)
    assert taken.exit_code == 2 and "--records: expected a records file whose name is not " \
        "taken" in " ".join(taken.output.split())
    assert sandbench(shop, "suite", "seal", "shop-suite").exit_code == 0
    manifest = json.loads((_suite_dir(shop) / suite.MANIFEST).read_text())
    assert "suites/shop-suite/records/records.json" in manifest["inputs"]
    copy.write_text(copy.read_text().replace("money", "other"))
    verified = sandbench(shop, "suite", "verify", "shop-suite")
    assert verified.exit_code == 1 and "records/records.json" in verified.output


# -- suite new: every declared choice ------------------------------------------------------

REASON = "the oracle needs a .NET SDK"
SOURCE = "methodology.md, Resolver precision"


def test_suite_new_takes_every_declared_choice(shop: Shop) -> None:
    _ready(shop, "--test-files", "exclude", "--grading", "cut=none", "--grading",
           "precision_cap=graded-multiple", "--grading", "precision_cap_multiple=5",
           "--not-attempted", f"resolver-precision={REASON}", "--not-attempted-source",
           f"resolver-precision={SOURCE}", "--runtime", "runsc", "--arm-runtime",
           "rg=runc", "--oracle", "ast-grep")
    data = tomllib.loads((_suite_dir(shop) / "suite.toml").read_text())
    assert data["test_files"] == "exclude"
    assert data["grading"] == {"cut": "none", "precision_cap": "graded-multiple",
                               "precision_cap_multiple": 5}
    assert data["families_not_attempted"] == {
        "resolver-precision": {"reason": REASON, "source": SOURCE}}
    assert data["runtime"] == {"default": "runsc", "arms": {"rg": "runc"}}
    assert data["oracle"] == {"arm": "ast-grep", "project": "."}
    assert _add_tasks(shop, _json_records(shop, [{"id": "money", "symbol": "Money"}])
                      ).exit_code == 0
    loaded = suite.load_suite(shop.project / "suites", "shop-suite")
    assert loaded.families_not_attempted == {"resolver-precision": (REASON, SOURCE)}
    assert (loaded.grading.cut, loaded.grading.precision_cap_multiple) == ("none", 5)
    assert loaded.runtime.default == "runsc" and loaded.oracle is not None
    prereg = " ".join((_suite_dir(shop) / suite.PREREGISTRATION).read_text().split())
    for said in (f"**Not attempted: resolver-precision.** {REASON} ({SOURCE}).",
                 "`cut = \"none\"`", "runsc by default; `rg` runc", "**Oracle:** `ast-grep`"):
        assert said in prereg, said


@pytest.mark.parametrize(("args", "said"), [
    (("--grading", "cut=sometimes"), "grading.cut: expected one of ['top_k', 'none']"),
    (("--grading", "precision_cap=graded-multiple"), "grading.precision_cap_multiple"),
    (("--not-attempted", f"resolver-precision={REASON}"), "--not-attempted-source: expected one"),
    (("--not-attempted", "flying=x", "--not-attempted-source", "flying=y"),
     "families_not_attempted.flying: expected one of"),
    (("--arm-runtime", "ctags=runsc"), "runtime.arms"),
    (("--test-files", "some"), "--test-files: expected include or exclude"),
    (("--oracle", "nobody"), "--oracle: expected an arm with a spec"),
])
def test_suite_new_refuses_bad_declared_tables(shop: Shop, args: tuple[str, ...],
                                               said: str) -> None:
    assert _add_corpus(shop, "--url", URL).exit_code == 0
    result = _new_suite(shop, *args)
    assert result.exit_code == 2 and said in result.output, result.output
    assert list((shop.project / "suites").iterdir()) == []


# -- corpus add from a mirror without a remote ---------------------------------------------

def test_corpus_add_from_a_mirror_without_a_remote_needs_no_url(shop: Shop) -> None:
    with clean_git() as git:
        git.run("remote", "remove", "origin", cwd=shop.mirror)
    added = _add_corpus(shop)
    assert added.exit_code == 0, added.output
    assert "read from the mirror" in added.output
    pin = tomllib.loads((shop.project / "corpus.lock").read_text())["shop"]
    assert (pin["repo"], pin["url"]) == ("acme/shop", "https://github.com/acme/shop.git")


def test_corpus_add_without_url_or_repo_anywhere_is_refused(shop: Shop, tmp_path: Path) -> None:
    nameless = tmp_path / "nameless"
    shutil.copytree(shop.mirror, nameless)
    lock = shop.project / "corpus.lock"
    before = lock.read_bytes()
    result = sandbench(shop, "corpus", "add", "shop", "--from", str(nameless), "--sha",
                       shop.pin, "--license", "MIT", "--kind", "target", "--note", "n")
    assert result.exit_code == 2, result.output
    assert "--url: expected the https:// git URL of the corpus" in result.output
    assert "fix: pass --url URL, or --repo OWNER/NAME" in result.output
    assert lock.read_bytes() == before


# -- end to end: the example records on the corpus they name ------------------------------

MASSTRANSIT = Path("/work/.mirror/MassTransit+MassTransit/repo")


@pytest.mark.skipif(not MASSTRANSIT.is_dir() or not os.environ.get("SANDBENCH_ROOT"),
                    reason="needs the MassTransit mirror and a bench root with corpus csharp")
def test_the_example_records_author_a_suite_that_loads_and_seals(shop: Shop) -> None:
    bench = Path(os.environ["SANDBENCH_ROOT"])
    if not (bench / "corpora" / "csharp" / ".git").is_dir():
        pytest.skip("corpus csharp is not fetched in the bench root")

    def run(*args: str):
        from typer.testing import CliRunner

        from orchestrator.cli import app
        return CliRunner().invoke(app, [*args, "--bench-root", str(bench)])

    assert run("suite", "new", "mt", "--corpus", "csharp", "--arms", "rg,ast-grep",
               "--baseline", "rg").exit_code == 0
    made = run("suite", "add-tasks", "mt", "--records", str(EXAMPLE), "--mirror",
               str(MASSTRANSIT))
    assert made.exit_code == 0, made.output
    loaded = suite.load_suite(shop.project / "suites", "mt")
    tasks = {t.id: t for t in loaded.tasks}
    assert sorted(tasks) == ["e2e-retrieval-job-state-events",
                             "e2e-retrieval-trim-exception-headers",
                             "impact-trim-exception-headers", "locate-trim-exception-headers",
                             "references-message-urn", "references-trim-exception-headers"]
    assert tasks["references-message-urn"].published["rg"].graded == 18
    assert tasks["locate-trim-exception-headers"].truth["primary"] == \
        "src/MassTransit.Abstractions/Util/ExceptionUtil.cs"
    assert run("suite", "seal", "mt").exit_code == 0


def test_every_run_of_a_suite_says_its_test_files_are_left_out(shop: Shop) -> None:
    from orchestrator.run.document import suite_deviations
    _ready(shop, "--test-files", "exclude", "--not-attempted", f"resolver-precision={REASON}",
           "--not-attempted-source", f"resolver-precision={SOURCE}")
    assert _add_tasks(shop, _json_records(shop, [{"id": "money", "symbol": "Money"}])
                      ).exit_code == 0
    loaded = suite.load_suite(shop.project / "suites", "shop-suite")
    assert suite_deviations(loaded) == [
        f"metric family resolver-precision not attempted: {REASON} ({SOURCE})",
        "truth of locate and e2e-retrieval leaves out the test files the fix touched "
        "(suite.toml test_files = \"exclude\")"]


def test_a_toml_records_file_reads_as_its_json_twin(tmp_path: Path) -> None:
    toml_file = tmp_path / "records.toml"
    toml_file.write_text('version = 1\n\n[[record]]\nid = "money"\nsymbol = "Money"\n\n'
                         '[record.commands.references.rg]\nargv = ["rg", "{symbol}"]\n\n'
                         '[record.published.references.rg]\nsource = "a paper, 2026"\n'
                         'bytes = 120\npath_prefix = "corpus/"\ngrade = "partial"\n'
                         'recall = "0.50"\ntool_version = "ripgrep 15.2.0"\n')
    json_file = tmp_path / "records.json"
    json_file.write_text(json.dumps({"version": 1, "record": [{
        "id": "money", "symbol": "Money",
        "commands": {"references": {"rg": {"argv": ["rg", "{symbol}"]}}},
        "published": {"references": {"rg": PUBLISHED}}}]}))
    as_toml, as_json = read_records(toml_file), read_records(json_file)
    assert [r.commands for r in as_toml[1]] == [r.commands for r in as_json[1]]
    assert [r.published for r in as_toml[1]] == [r.published for r in as_json[1]]

"""Suites: loading, truth checks before any arm runs, and the seal."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from orchestrator import importgraph, suite
from orchestrator.errors import InputError
from orchestrator.settings import Settings

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(tmp_path: Path) -> Settings:
    return copy_project(tmp_path)


def copy_project(tmp_path: Path) -> Settings:
    """A copy of the project's inputs, so tests may break them."""
    root = tmp_path / "project"
    for part in ("suites", "arms", *suite.every_scorer_source(REPO), "corpus.lock"):
        source = REPO / part
        if source.is_dir():
            shutil.copytree(source, root / part)
        elif source.exists():
            (root / part).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / part)
    return Settings(project_root=root, bench_root=tmp_path / "bench")


def _suite(settings: Settings) -> suite.Suite:
    return suite.load_suite(settings.suites_dir, "demo")


def test_the_demo_suite_has_every_kind_at_least_twice() -> None:
    demo = suite.load_suite(REPO / "suites", "demo")
    kinds = [t.kind for t in demo.tasks]
    for kind in ("locate", "references", "impact", "e2e-retrieval"):
        assert kinds.count(kind) >= 2, kind
    assert demo.baseline == "rg" and demo.precision_cap > 0 and demo.top_k > 0


def test_the_demo_seal_holds() -> None:
    settings = Settings(project_root=REPO, bench_root=REPO / "bench")
    assert suite.verify_seal(suite.load_suite(REPO / "suites", "demo"), settings) == []


def test_every_demo_truth_path_exists_at_the_pin(tmp_path: Path) -> None:
    from orchestrator import corpus
    settings = Settings(project_root=REPO, bench_root=tmp_path / "bench")
    pins = corpus.load_lock(REPO / "corpus.lock")
    corpus.fetch(pins["demo"], settings)
    suite.check_truth_at_pin(suite.load_suite(REPO / "suites", "demo"),
                             corpus.corpus_dir(settings, "demo"))


def _first(settings: Settings, kind: str) -> Path:
    return next(t.path for t in _suite(settings).tasks if t.kind == kind)


def test_an_empty_impact_set_is_refused(project: Settings) -> None:
    path = _first(project, "impact")
    emptied = re.sub(r"(?ms)^graded = \[.*?\]", "graded = []", path.read_text())
    assert "graded = []" in emptied
    path.write_text(emptied)
    with pytest.raises(InputError, match="non-empty") as err:
        _suite(project)
    assert err.value.data["key"] == "truth.graded" and str(path) in str(err.value)


def test_a_truth_path_absent_at_the_pin_is_named(project: Settings, tmp_path: Path) -> None:
    repo = tmp_path / "pin"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "only.txt").write_text("x")
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                    "commit", "-qm", "x"], check=True)
    with pytest.raises(InputError, match="a file tracked at the pin") as err:
        suite.check_truth_at_pin(_suite(project), repo)
    assert err.value.data["key"] in ("truth", "input.seed")


@pytest.mark.parametrize(("old", "new", "key"), [
    ('kind = "', 'kind = "x', "kind"),
    ("[input]", "[inputs]", "inputs"),
])
def test_bad_task_files_name_file_and_key(project: Settings, old: str, new: str,
                                          key: str) -> None:
    path = _first(project, "references")
    path.write_text(path.read_text().replace(old, new, 1))
    with pytest.raises(InputError) as err:
        _suite(project)
    assert err.value.data["key"] == key and str(path) in str(err.value)


def test_the_seal_names_a_changed_input(project: Settings) -> None:
    demo = _suite(project)
    suite.seal(demo, project)
    assert suite.verify_seal(demo, project) == []
    task = demo.tasks[0].path
    task.write_text(task.read_text() + "\n# edited after the seal\n")
    diffs = suite.verify_seal(demo, project)
    assert [d.file for d in diffs] == [task.relative_to(project.project_root).as_posix()]
    arm = project.arms_dir / "rg.toml"
    arm.write_text(arm.read_text() + "\n")
    assert "arms/rg.toml" in {d.file for d in suite.verify_seal(demo, project)}


def test_an_unsealed_suite_says_how_to_seal(project: Settings) -> None:
    (project.project_root / "suites" / "demo" / "manifest.json").unlink(missing_ok=True)
    with pytest.raises(InputError, match="not sealed") as err:
        suite.verify_seal(_suite(project), project)
    assert "sandbench suite seal demo" in err.value.fix


def test_the_csharp_suites_declare_resolver_precision_not_attempted() -> None:
    for name in ("csharp", "csharp-held-out"):
        loaded = suite.load_suite(REPO / "suites", name)
        reason, source = loaded.families_not_attempted["resolver-precision"]
        assert ".NET SDK" in reason and "Roslyn" in source
        assert {t.kind for t in loaded.tasks} == {"locate", "references", "impact",
                                                  "e2e-retrieval"}


@pytest.mark.parametrize(("extra", "key"), [
    ('\n[oracle]\narm = "oracle-scip-typescript"\n', "oracle"),
    ('\n[oracle]\narm = "oracle-scip-typescript"\nproject = "../web"\n', "oracle.project"),
    ('\n[oracle]\narm = "x"\nproject = "web"\nedges = "yes"\n', "oracle.edges"),
    ('\n[families_not_attempted.speed]\nreason = "r"\nsource = "s"\n',
     "families_not_attempted.speed"),
    ('\n[families_not_attempted.rust-edges]\nreason = ""\nsource = "s"\n',
     "families_not_attempted.rust-edges.reason"),
])
def test_bad_oracle_and_family_tables_name_the_key(project: Settings, extra: str,
                                                   key: str) -> None:
    path = project.suites_dir / "demo" / "suite.toml"
    path.write_text(path.read_text() + extra)
    with pytest.raises(InputError) as err:
        _suite(project)
    assert err.value.data["key"] == key and err.value.exit_code == 2


def test_an_oracle_suite_seals_its_truth_only_once_built(project: Settings) -> None:
    path = project.suites_dir / "demo" / "suite.toml"
    path.write_text(path.read_text() + '\n[oracle]\narm = "oracle-scip-typescript"\n'
                    'project = "web"\n')
    demo = _suite(project)
    with pytest.raises(InputError, match="no compiler truth yet") as err:
        suite.seal(demo, project)
    assert err.value.fix == "sandbench truth build demo"
    truth = demo.truth_file()
    assert truth is not None
    truth.parent.mkdir()
    truth.write_text("{}\n")
    suite.seal(demo, project)
    truth.write_text('{"edited": true}\n')
    assert {d.file for d in suite.verify_seal(demo, project)} == {
        "suites/demo/truth/oracle-scip-typescript.json"}


# -- what the seal covers: the scorer's imports, and the parsers of the suite's own arms ------

def test_the_scorer_core_is_found_from_its_imports_and_reaches_no_tool_parser() -> None:
    """Modules that change grades (transcripts' outcomes, the suite, fsutil, the cell) are in
    the core without being listed anywhere; no core module imports a per-tool parser module,
    so leaving those out of the core hides nothing the scorer imports."""
    core = {p.relative_to(REPO).as_posix() for p in suite.scorer_sources(REPO, [])}
    for module in ("orchestrator/run/transcripts.py", "orchestrator/suite/loading.py",
                   "orchestrator/fsutil.py", "orchestrator/score/cell.py",
                   "orchestrator/parsers/__init__.py", "orchestrator/untrusted/decode.py"):
        assert module in core, module
    unstopped = importgraph.module_files(REPO, suite.SCORER_ENTRY)
    assert not [p for p in unstopped if p.parent.name == "parsers" and not p.name.startswith("_")]
    assert "orchestrator/score/resolver.py" not in core  # not imported by the scorer
    assert {p.relative_to(REPO).as_posix() for p in suite.scorer_sources(REPO, ["serena"])} \
        == core | {"orchestrator/parsers/serena.py"}


def _add_parser(project: Settings, name: str, arm: str) -> None:
    """A new tool: its parser module (rg's, renamed) and an arm naming it."""
    parsers_dir = project.project_root / "orchestrator" / "parsers"
    source = (parsers_dir / "rg.py").read_text().replace('name = "rg"', f'name = "{name}"')
    (parsers_dir / f"{name.replace('-', '_')}.py").write_text(source)
    spec = (project.arms_dir / "rg.toml").read_text().replace('parser = "rg"',
                                                              f'parser = "{name}"')
    (project.arms_dir / f"{arm}.toml").write_text(spec)


def test_a_new_arm_with_its_own_parser_leaves_every_suite_sealed(project: Settings) -> None:
    _add_parser(project, "new-tool", "new-tool")
    names = suite.known_suites(project.suites_dir)
    assert len(names) >= 7
    for name in names:
        assert suite.verify_seal(suite.load_suite(project.suites_dir, name), project) == [], name
    # A suite that declares the new arm seals its parser module (and no other suite does).
    folder = project.suites_dir / "with-new"
    shutil.copytree(project.suites_dir / "demo", folder)
    text = (folder / "suite.toml").read_text().replace('name = "demo"', 'name = "with-new"')
    (folder / "suite.toml").write_text(text.replace('arms = ["rg", ', 'arms = ["rg", "new-tool", '))
    inputs = suite.sealed_inputs(suite.load_suite(project.suites_dir, "with-new"), project)
    assert "orchestrator/parsers/new_tool.py" in inputs and "arms/new-tool.toml" in inputs


def test_changing_one_parser_breaks_only_the_suites_whose_arms_use_it(
        project: Settings) -> None:
    serena = project.project_root / "orchestrator" / "parsers" / "serena.py"
    serena.write_text(serena.read_text() + "# a fix of serena's parser\n")
    broken = {}
    for name in suite.known_suites(project.suites_dir):
        the_suite = suite.load_suite(project.suites_dir, name)
        if diffs := suite.verify_seal(the_suite, project):
            broken[name] = [d.file for d in diffs]
    assert broken == {"serena-demo-typescript": ["orchestrator/parsers/serena.py"],
                      "serena-typescript-parity": ["orchestrator/parsers/serena.py"]}


def test_an_arm_naming_a_parser_without_a_module_cannot_be_sealed(project: Settings) -> None:
    spec = project.arms_dir / "ctags.toml"
    spec.write_text(spec.read_text().replace('parser = "rg"', 'parser = "grep"'))
    with pytest.raises(InputError) as err:
        suite.sealed_inputs(_suite(project), project)
    assert err.value.data["key"] == "parser" and str(spec) in str(err.value)


@pytest.mark.parametrize("value", ["nope", "rg"])
def test_the_tool_under_test_is_a_declared_arm_other_than_the_baseline(
        project: Settings, value: str) -> None:
    path = project.suites_dir / "demo" / "suite.toml"
    path.write_text(path.read_text().replace('tool_under_test = "devscout"',
                                             f'tool_under_test = "{value}"'))
    with pytest.raises(InputError) as err:
        _suite(project)
    assert err.value.data["key"] == "tool_under_test" and str(path) in str(err.value)
    assert "other than the baseline 'rg'" in str(err.value)


@pytest.mark.parametrize("value", ['"demo@57f72c"', '["demo"]', '["demo@' + "A" * 64 + '"]'])
def test_a_comparable_with_declaration_names_suite_and_seal(project: Settings,
                                                            value: str) -> None:
    path = project.suites_dir / "demo" / "suite.toml"
    path.write_text(f"comparable_with = {value}\n" + path.read_text())
    with pytest.raises(InputError) as err:
        _suite(project)
    assert err.value.data["key"] == "comparable_with" and "SUITE@SHA256" in str(err.value)
    path.write_text(path.read_text().replace(value, '["demo@' + "a" * 64 + '"]'))
    assert _suite(project).name == "demo"


def test_every_suite_names_its_tool_under_test() -> None:
    """Every suite with an arm beside its baseline; a suite of its baseline alone (a published
    column reproduced) has no other arm to name."""
    for name in suite.known_suites(REPO / "suites"):
        the_suite = suite.load_suite(REPO / "suites", name)
        if the_suite.arms == (the_suite.baseline,):
            assert the_suite.tool_under_test is None, name
            continue
        assert the_suite.tool_under_test in the_suite.arms, name
        assert the_suite.tool_under_test != the_suite.baseline, name

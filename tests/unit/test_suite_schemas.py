"""The suite and task schemas (orchestrator/schemas/suite.schema.json, task.schema.json): they
name exactly the keys and choices the suite model knows, every committed suite and task file
matches them, and a bad key is refused with one error naming the file, the key, the expected
and the found value."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator import suite
from orchestrator.sandbox import runtimes
from orchestrator.errors import InputError
from orchestrator.fsutil import read_toml
from orchestrator.kinds import ALL_KINDS, INPUT_KEY
from orchestrator.settings import PACKAGE_DIR
from orchestrator.sandbox.shared_checks import load_schema, schema_problem
from orchestrator.suite import loading, task_file

REPO = PACKAGE_DIR.parent
SUITE_SCHEMA = load_schema(loading.SCHEMA)
TASK_SCHEMA = load_schema(task_file.SCHEMA)
SUITE_FILES = sorted([*REPO.glob("suites/*/suite.toml"),
                      *REPO.glob("tests/golden/suites/*/suite.toml")])
TASK_FILES = sorted([*REPO.glob("suites/*/tasks/*.toml"),
                     *REPO.glob("tests/golden/suites/*/tasks/*.toml")])


def test_the_suite_schema_names_the_keys_and_choices_of_the_model() -> None:
    properties = SUITE_SCHEMA["properties"]
    assert set(properties) == suite.SUITE_KEYS | suite.OPTIONAL_SUITE_KEYS
    assert set(SUITE_SCHEMA["required"]) == suite.SUITE_KEYS
    assert set(properties["bands"]["properties"]) == suite.BAND_KEYS | suite.EDGE_BAND_KEYS
    assert set(properties["bands"]["required"]) == suite.BAND_KEYS
    assert list(properties["families_not_attempted"]["properties"]) == list(suite.FAMILIES)
    assert set(properties["oracle"]["properties"]) == suite.ORACLE_KEYS | suite.ORACLE_OPTIONAL_KEYS
    assert properties["truth_rule"]["enum"] == list(suite.TRUTH_RULES)
    assert properties["test_files"]["enum"] == list(suite.TEST_FILES)
    assert properties["runtime"]["properties"]["default"]["enum"] == list(runtimes.RUNTIMES)
    grading = SUITE_SCHEMA["$defs"]["grading"]
    assert grading == TASK_SCHEMA["$defs"]["grading"]  # one set of rules in both files
    assert list(grading["properties"]) == list(suite.GRADING_KEYS)
    assert {k: tuple(v["enum"]) for k, v in grading["properties"].items() if "enum" in v} \
        == suite.GRADING_CHOICES


def test_the_task_schema_names_the_keys_of_each_kind() -> None:
    assert set(TASK_SCHEMA["properties"]) == suite.TASK_KEYS | suite.OPTIONAL_TASK_KEYS
    assert TASK_SCHEMA["properties"]["kind"]["enum"] == list(ALL_KINDS)
    assert TASK_SCHEMA["properties"]["language"]["enum"] == sorted(suite.LANGUAGES)
    branches = {b["if"]["properties"]["kind"]["const"]: b["then"]["properties"]
                for b in TASK_SCHEMA["allOf"]}
    assert list(branches) == list(ALL_KINDS)
    for kind, then in branches.items():
        assert then["input"]["required"] == [INPUT_KEY[kind]]
        truth = TASK_SCHEMA["$defs"][then["truth"]["$ref"].rpartition("/")[2]]
        required, optional = suite.TRUTH_KEYS[kind]
        assert set(truth["required"]) == required
        assert set(truth["properties"]) == required | optional
    defs = TASK_SCHEMA["$defs"]
    assert set(defs["command"]["properties"]) == suite.COMMAND_KEYS
    assert set(defs["published"]["properties"]) == \
        suite.PUBLISHED_KEYS | suite.PUBLISHED_OPTIONAL_KEYS
    assert defs["published"]["properties"]["grade"]["enum"] == list(suite.VERDICT_NAMES)


@pytest.mark.parametrize("path", SUITE_FILES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_committed_suite_file_matches_its_schema(path: Path) -> None:
    assert schema_problem(read_toml(path), loading.SCHEMA) is None


@pytest.mark.parametrize("path", TASK_FILES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_committed_task_file_matches_its_schema(path: Path) -> None:
    assert schema_problem(read_toml(path), task_file.SCHEMA) is None


def _refused(path: Path, text: str, load) -> InputError:
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load()
    assert err.value.data["file"] == str(path) and err.value.exit_code == 2
    return err.value


@pytest.mark.parametrize(("old", "new", "message"), [
    ("reps = 3", "reps = 0", "reps: expected a positive integer, found 0"),
    ("reps = 3", "reps = 3.0", "reps: expected a positive integer, found 3.0"),
    ("timeout_s = 120", "timeout_s = true", "timeout_s: expected a positive number of seconds, "
     "found True"),
    ("version = 1", "version = 2", "version: expected 1, found 2"),
    ("top_k = 5", "top_k = 5\ncolour = 1", "colour: expected one of ['arms', 'bands', "
     "'baseline', 'comparable_with', 'corpus', 'families_not_attempted', 'grading', 'name', "
     "'oracle', 'precision_cap', 'reps', 'runtime', 'test_files', 'timeout_s', "
     "'tool_under_test', 'top_k', 'truth_rule', 'truth_rule_version', 'version'], "
     "found 'colour'"),
    ("reps = 3\n", "", "reps: expected a positive integer, found None"),
    ('arms = ["rg",', 'arms = [1, "rg",', "arms: expected a non-empty list of arm names, "
     "found [1, 'rg', 'ast-grep', 'code-review-graph', 'devscout', 'code-index-mcp', "
     "'ctags']"),
    ("impact_partial_fraction = 0.5", "impact_partial_fraction = 1.5",
     "bands.impact_partial_fraction: expected a fraction from 0 to 1, found 1.5"),
    ("references_correct_max_outside = 2", "references_correct_max_outside = 2.5",
     "bands.references_correct_max_outside: expected a whole number of files, 0 or more, "
     "found 2.5"),
    ("impact_partial_fraction = 0.5", "impact_partial_fraction = 0.5\nspeed = 1",
     "bands: expected a table of numbers with exactly ['impact_partial_fraction', "
     "'references_correct_max_outside', 'references_correct_recall', "
     "'references_partial_recall'] (and ['edges_correct_precision', 'edges_correct_recall'] "
     "for edge tasks), found {'references_correct_recall': 0.75, "
     "'references_correct_max_outside': 2, 'references_partial_recall': 0.4, "
     "'impact_partial_fraction': 0.5, 'speed': 1}"),
    ("top_k = 5", 'top_k = 5\n[grading]\ncut = "all"', "grading.cut: expected one of "
     "['top_k', 'none'], found 'all'"),
    ("top_k = 5", 'top_k = 5\n[runtime]\ndefault = "kata"', "runtime.default: expected one of "
     "['runc', 'runsc'], found 'kata'"),
])
def test_the_suite_schema_refuses(tmp_path: Path, old: str, new: str, message: str) -> None:
    folder = tmp_path / "suites" / "demo"
    (folder / "tasks").mkdir(parents=True)
    text = (REPO / "suites/demo/suite.toml").read_text()
    assert old in text
    path = folder / "suite.toml"
    err = _refused(path, text.replace(old, new, 1),
                   lambda: suite.load_suite(tmp_path / "suites", "demo"))
    assert err.what == f"{path}: {message}"


@pytest.mark.parametrize(("old", "new", "message"), [
    ('kind = "impact"', 'kind = "lookup"', "kind: expected one of ['locate', 'references', "
     "'impact', 'e2e-retrieval', 'call-edges', 'test-edges'], found 'lookup'"),
    ('language = "typescript"', 'language = "python"', "language: expected one of ['csharp', "
     "'rust', 'typescript'], found 'python'"),
    ("[input]", "[input]\nticket = \"t\"", "input: expected a table with exactly 'seed' for a "
     "impact task, found {'ticket': 't', 'seed': 'web/src/cart/cart.ts'}"),
    ("[truth]", "[truth]\ncore = [\"a.cs\"]", "truth.core: expected one of ['graded'], "
     "found 'core'"),
    ("graded = [", "graded = [1, ", "truth.graded.0: expected a repo-relative path, found 1"),
    ("[truth]", '[published.rg]\nsource = "s"\nbytes = 1\n\n[truth]',
     "published.rg.path_prefix: expected the prefix its paths had, ending in '/' (or empty), "
     "found None"),
    ("[truth]", '[commands.rg]\nargv = []\n\n[truth]', "commands.rg.argv: expected a "
     "non-empty list of strings, the program first, found []"),
])
def test_the_task_schema_refuses(tmp_path: Path, old: str, new: str, message: str) -> None:
    text = (REPO / "suites/demo/tasks/impact-cart.toml").read_text()
    assert old in text
    path = tmp_path / "impact-cart.toml"
    err = _refused(path, text.replace(old, new, 1), lambda: suite.load_task(path))
    assert err.what.startswith(f"{path}: {message}")


def test_an_empty_required_truth_set_is_refused(tmp_path: Path) -> None:
    text = (REPO / "suites/demo/tasks/e2e-bulk-discount-boundary.toml").read_text()
    old = 'touched = ["dotnet/src/Ordering/Pricing/BulkDiscountRule.cs"]'
    assert old in text
    path = tmp_path / "e2e-bulk-discount-boundary.toml"
    err = _refused(path, text.replace(old, "touched = []"), lambda: suite.load_task(path))
    assert err.what == (f"{path}: truth.touched: expected a list of repo-relative paths "
                        "(non-empty: an empty truth set satisfies every band vacuously), "
                        "found []")

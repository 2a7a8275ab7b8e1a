"""Authoring by command on a tiny corpus made here (a repository with a pin and two fixes after
it, and its bare mirror): `corpus add`, `suite new`, `suite add-tasks`, `truth rule`, the
suite loading and sealing afterwards, and every refusal leaving every file as it was."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator import suite
from orchestrator.authoring import toml_text
from orchestrator.truth import rules as truth_rules, sources as truth_sources
from orchestrator.cli import app
from orchestrator.corpus import foreign
from orchestrator.corpus.git import clean_git
from orchestrator.errors import InputError

REPO = Path(__file__).resolve().parents[2]
URL = "https://git.example.invalid/acme/shop.git"

PIN_FILES = {
    "src/Shop/Money.cs": "namespace Shop;\npublic class Money { }\n",
    "src/Shop/Price.cs": "namespace Shop;\nclass Price { Money amount; }\n",
    "src/Shop/Cart.cs": "namespace Shop;\nclass Cart { Price p; } // Money, in a comment\n",
    "src/Shop/Tax.cs": 'namespace Shop;\nclass Tax { string s = "Money"; }\n',
    "tests/Shop.Tests/MoneyTests.cs": "class MoneyTests { Money m; }\n",
}


@dataclass(frozen=True)
class Shop:
    """The project copy, its bench root, the mirror, and the shas: before, pin, fix1, fix2."""

    project: Path
    bench: Path
    mirror: Path
    before: str
    pin: str
    fix1: str
    fix2: str
    upstream: Path


def _commit(git, repo: Path, files: dict[str, str], message: str) -> str:
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git.run("add", "-A", cwd=repo)
    git.run("commit", "-q", "-m", message, cwd=repo)
    return git.out("rev-parse", "HEAD", cwd=repo)


@pytest.fixture
def shop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Shop:
    return make_shop(tmp_path, monkeypatch)


def make_shop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Shop:
    """A project copy whose corpus is a repository made here, and that repository's mirror."""
    project = tmp_path / "project"
    for part in ("arms", *suite.every_scorer_source(REPO), "corpus.lock"):
        source = REPO / part
        if source.is_dir():
            shutil.copytree(source, project / part)
        else:
            (project / part).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, project / part)
    (project / "suites").mkdir()
    (project / "images").mkdir()
    monkeypatch.setenv("SANDBENCH_PROJECT", str(project))
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    with clean_git() as git:
        git.run("init", "-q", cwd=upstream)
        before = _commit(git, upstream, {"README.md": "shop\n"}, "start")
        pin = _commit(git, upstream, PIN_FILES, "the pin")
        fix1 = _commit(git, upstream, {
            "src/Shop/Price.cs": "namespace Shop;\nclass Price {\n Money amount;\n int a;\n}\n",
            "tests/Shop.Tests/MoneyTests.cs": "class MoneyTests {\n Money m;\n int a;\n int b;\n"
                                              " int c;\n}\n"}, "Fixed #1")
        fix2 = _commit(git, upstream, {"src/Shop/Cart.cs": PIN_FILES["src/Shop/Cart.cs"] + "\n",
                                       "src/Shop/New.cs": "class New { }\n"}, "Fixed #2")
        mirror = tmp_path / "mirrors" / "acme+shop" / "repo"
        git.run("clone", "-q", "--mirror", str(upstream), str(mirror))
    return Shop(project, tmp_path / "bench", mirror, before, pin, fix1, fix2, upstream)


def sandbench(shop: Shop, *args: str):
    return CliRunner().invoke(app, [*args, "--bench-root", str(shop.bench)])


def _add_corpus(shop: Shop, *extra: str, sha: str | None = None):
    return sandbench(shop, "corpus", "add", "shop", "--from", str(shop.mirror), "--sha",
                     sha or shop.pin, "--license", "MIT", "--kind", "target", "--note",
                     "A tiny shop.", *extra)


def _new_suite(shop: Shop, *extra: str):
    return sandbench(shop, "suite", "new", "shop-suite", "--corpus", "shop", "--arms",
                     "rg,ast-grep", "--baseline", "rg", *extra)


RECORDS = '''version = 1

[[record]]
id = "price-and-cart"
issue = "acme/shop#1"
title = "Prices are wrong"
ticket = """The price shown is not what I pay."""
fix = ["FIX1", "FIX2"]
symbol = "Money"
seed = "src/Shop/Money.cs"

[[record]]
id = "tax"
symbol = "Tax"
'''


def _records(shop: Shop, text: str = RECORDS) -> Path:
    path = shop.project / "records.toml"
    path.write_text(text.replace("FIX1", shop.fix1[:9]).replace("FIX2", shop.fix2))
    return path


def _ready(shop: Shop, *suite_args: str) -> None:
    """The corpus pinned and fetched, the suite created."""
    assert _add_corpus(shop, "--url", URL).exit_code == 0
    fetched = sandbench(shop, "corpus", "fetch", "shop", "--from", str(shop.mirror))
    assert fetched.exit_code == 0, fetched.output
    assert _new_suite(shop, *suite_args).exit_code == 0


def _add_tasks(shop: Shop, records: Path):
    return sandbench(shop, "suite", "add-tasks", "shop-suite", "--records", str(records),
                     "--mirror", str(shop.mirror))


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


# -- end to end ---------------------------------------------------------------------------------

def test_pin_create_add_tasks_then_the_suite_loads_and_seals(shop: Shop) -> None:
    _ready(shop, "--tool-under-test", "ast-grep", "--purpose", "Authoring, end to end")
    made = _add_tasks(shop, _records(shop))
    assert made.exit_code == 0, made.output
    folder = shop.project / "suites" / "shop-suite"
    loaded = suite.load_suite(shop.project / "suites", "shop-suite")
    assert loaded.truth_rule == "text-v1" and loaded.tool_under_test == "ast-grep"
    tasks = {t.id: t for t in loaded.tasks}
    assert sorted(tasks) == ["e2e-retrieval-price-and-cart", "impact-price-and-cart",
                             "locate-price-and-cart", "references-price-and-cart",
                             "references-tax"]
    # the fixes unioned: MoneyTests (7 lines), Price (5), Cart (1); New.cs is not at the pin
    locate = tasks["locate-price-and-cart"]
    assert locate.truth == {"primary": "src/Shop/Price.cs", "types": ["Price"],
                            "touched": ["tests/Shop.Tests/MoneyTests.cs", "src/Shop/Cart.cs"]}
    assert locate.input == {"ticket": "The price shown is not what I pay."}
    assert "Not at the pin (added by the fix), so left out: src/Shop/New.cs" in " ".join(
        locate.explanation.split())
    assert tasks["e2e-retrieval-price-and-cart"].truth["touched"] == [
        "tests/Shop.Tests/MoneyTests.cs", "src/Shop/Price.cs", "src/Shop/Cart.cs"]
    assert tasks["references-price-and-cart"].truth == {
        "core": ["src/Shop/Money.cs", "src/Shop/Price.cs", "tests/Shop.Tests/MoneyTests.cs"],
        "admissible": ["src/Shop/Cart.cs", "src/Shop/Tax.cs"]}
    # impact: the fix's files beyond the seed unioned with the seed's dependents
    assert tasks["impact-price-and-cart"].truth["graded"] == [
        "src/Shop/Cart.cs", "src/Shop/Price.cs", "tests/Shop.Tests/MoneyTests.cs"]
    # each task quotes its rule and the commands that made it and printed its sets
    text = " ".join(tasks["impact-price-and-cart"].explanation.split())
    assert ("sandbench suite add-tasks shop-suite --records suites/shop-suite/records/"
            "records.toml --mirror MIRROR") in text
    assert str(shop.project) not in (folder / "tasks" / "impact-price-and-cart.toml").read_text()
    assert (f"sandbench truth rule impact PRISTINE src/Shop/Money.cs --mirror MIRROR --fix "
            f"{shop.fix1} --fix {shop.fix2}") in text
    assert "Rule (impact, the suite's declared text-v1)" in text
    prereg = (folder / suite.PREREGISTRATION).read_text()
    assert "## Tasks from `records.toml`" in prereg and "references-tax" in prereg
    assert "TODO" not in prereg and "TODO" not in (folder / "suite.toml").read_text()

    sealed = sandbench(shop, "suite", "seal", "shop-suite")
    assert sealed.exit_code == 0, sealed.output
    assert sandbench(shop, "suite", "verify", "shop-suite").exit_code == 0
    with clean_git():
        suite.check_truth_at_pin(loaded, shop.bench / "corpora" / "shop")
    # tasks are added before the seal only
    again = _add_tasks(shop, _records(shop, RECORDS.replace('"tax"', '"tax-2"')))
    assert again.exit_code == 2 and "is sealed" in again.output


def test_the_declaring_admissible_rule_moves_the_declaring_file(shop: Shop) -> None:
    _ready(shop, "--truth-rule", "text-v1-declaring-admissible")
    only_money = RECORDS[:RECORDS.index('[[record]]\nid = "tax"')]
    assert _add_tasks(shop, _records(shop, only_money)).exit_code == 0
    # the declaring file out of core leaves Tax with none: one clear refusal
    tax = _add_tasks(shop, _records(shop, RECORDS.replace("price-and-cart", "again")))
    assert tax.exit_code == 2 and "record[1].symbol: expected a symbol named in code" \
        in tax.output
    task = suite.load_task(shop.project / "suites" / "shop-suite" / "tasks"
                           / "references-price-and-cart.toml")
    assert task.truth == {"core": ["src/Shop/Price.cs", "tests/Shop.Tests/MoneyTests.cs"],
                          "admissible": ["src/Shop/Cart.cs", "src/Shop/Money.cs",
                                         "src/Shop/Tax.cs"]}
    assert "--rule text-v1-declaring-admissible` prints 2 core and 3 admissible" in " ".join(
        task.explanation.split())


def test_suite_new_writes_the_declared_choices(shop: Shop) -> None:
    _ready(shop, "--reps", "2", "--timeout-s", "90", "--top-k", "7", "--precision-cap", "30",
           "--band", "references_partial_recall=0.5")
    folder = shop.project / "suites" / "shop-suite"
    data = tomllib.loads((folder / "suite.toml").read_text())
    assert data == {"version": 1, "name": "shop-suite", "corpus": "shop",
                    "arms": ["rg", "ast-grep"], "baseline": "rg", "reps": 2, "timeout_s": 90,
                    "precision_cap": 30, "top_k": 7, "truth_rule": "text-v1",
                    "truth_rule_version": truth_rules.VERSION, "test_files": "include",
                    "bands": {"references_correct_recall": 0.75,
                              "references_correct_max_outside": 2,
                              "references_partial_recall": 0.5,
                              "impact_partial_fraction": 0.5}}
    text = (folder / "suite.toml").read_text()
    assert text.count("\n# ") >= 6 and all(len(line) <= 100 for line in text.splitlines())
    prereg = (folder / suite.PREREGISTRATION).read_text()
    for said in ("1 cold + 2 warm per task; time limit 90 s", "**Top-7 cut**",
                 "**Impact precision cap: 30 files.**", "| ≥50% |", f"acme/shop @ `{shop.pin}`",
                 "no tool under test declared"):
        assert said in " ".join(prereg.split()) or said in prereg, said


# -- refusals: one message, exit 2, nothing written ----------------------------------------

def test_corpus_add_derives_repo_and_url_from_the_mirror(shop: Shop) -> None:
    with clean_git() as git:
        git.run("config", "remote.origin.url", URL, cwd=shop.mirror)
    added = _add_corpus(shop, "--json")
    assert added.exit_code == 0, added.output
    assert json.loads(added.stdout)["repo"] == "acme/shop"
    pin = tomllib.loads((shop.project / "corpus.lock").read_text())["shop"]
    assert pin == {"id": "shop", "repo": "acme/shop", "url": URL, "sha": shop.pin,
                   "license": "MIT", "kind": "target", "status": "registered",
                   "note": "A tiny shop."}


@pytest.mark.parametrize(("args", "said"), [
    (("--url", URL, "--sha", "abc123"), "--sha: expected a full commit sha"),
    (("--url", URL, "--sha", "f" * 40), "--sha: expected a commit of the mirror"),
    (("--url", "http://x/a/b.git", "--sha", "PIN"), "--url: expected an https:// git URL"),
    (("--url", URL, "--sha", "PIN", "--kind", "demo"), "--kind: expected target or held-out"),
    (("--url", URL, "--sha", "PIN", "--license", "not a licence"), "--license: expected"),
])
def test_corpus_add_refuses_bad_values(shop: Shop, args: tuple[str, ...], said: str) -> None:
    lock = shop.project / "corpus.lock"
    before = lock.read_bytes()
    options = dict(zip(args[::2], args[1::2], strict=True))
    argv = ["corpus", "add", "shop", "--from", str(shop.mirror), "--license",
            options.pop("--license", "MIT"), "--kind", options.pop("--kind", "target"),
            "--note", "n"]
    for key, value in options.items():
        argv += [key, shop.pin if value == "PIN" else value]
    result = sandbench(shop, *argv)
    assert result.exit_code == 2, result.output
    assert said in result.output and "Traceback" not in result.output
    assert lock.read_bytes() == before


def test_corpus_add_refuses_a_duplicate_id_naming_its_line(shop: Shop) -> None:
    lock = shop.project / "corpus.lock"
    before = lock.read_bytes()
    result = sandbench(shop, "corpus", "add", "demo", "--url", URL, "--sha", shop.pin,
                       "--license", "MIT", "--kind", "target", "--note", "n")
    assert result.exit_code == 2
    line = next(n for n, text in enumerate(before.decode().splitlines(), 1)
                if text == 'id = "demo"')
    assert f"{lock}:{line}: demo.id: expected an id not yet in the lock, found 'demo'" \
        in result.output
    assert lock.read_bytes() == before


@pytest.mark.parametrize(("args", "said"), [
    (("--baseline", "ctags"), "--baseline: expected one of the arms"),
    (("--baseline", "rg", "--tool-under-test", "rg"), "--tool-under-test: expected one of"),
    (("--baseline", "rg", "--truth-rule", "by-hand"), "--rule: expected one of"),
    (("--baseline", "rg", "--band", "impact_partial_fraction=2"), "a fraction from 0 to 1"),
])
def test_suite_new_refuses_bad_choices(shop: Shop, args: tuple[str, ...], said: str) -> None:
    assert _add_corpus(shop, "--url", URL).exit_code == 0
    result = sandbench(shop, "suite", "new", "shop-suite", "--corpus", "shop", "--arms",
                       "rg,ast-grep", *args)
    assert result.exit_code == 2 and said in result.output, result.output
    assert list((shop.project / "suites").iterdir()) == []


def test_suite_new_never_overwrites(shop: Shop) -> None:
    _ready(shop)
    folder = shop.project / "suites" / "shop-suite"
    before = _tree(folder)
    again = _new_suite(shop)
    assert again.exit_code == 2 and "suite new never overwrites" in again.output
    assert _tree(folder) == before
    unknown = sandbench(shop, "suite", "new", "other", "--corpus", "nope", "--arms", "rg",
                        "--baseline", "rg")
    assert unknown.exit_code == 2 and "no corpus 'nope'" in unknown.output


@pytest.mark.parametrize(("edit", "said"), [
    (lambda t: t.replace('symbol = "Tax"', 'symbl = "Tax"'), "record[1].symbl: expected one of"),
    (lambda t: t.replace('id = "tax"', 'id = "price-and-cart"'),
     "record[1].id: expected an id no other record has"),
    (lambda t: t.replace('"FIX2"', '"xyz"'), "record[0].fix[1]: expected commits of 7 to 40"),
    (lambda t: t.replace('"FIX2"', '"abcdef1234"'), "record[0].fix: expected a commit of the "
                                                    "mirror"),
    (lambda t: t.replace('"FIX2"', '"BEFORE"'), "record[0].fix: expected a commit after the pin"),
    (lambda t: t.replace('symbol = "Tax"', 'symbol = "Nowhere"'),
     "record[1].symbol: expected a symbol named in code"),
    (lambda t: t.replace('seed = "src/Shop/Money.cs"', 'seed = "src/Shop/New.cs"'),
     "record[0].seed: expected a file tracked at the pin"),
    (lambda t: t.replace('seed = "src/Shop/Money.cs"', 'seed = "../x.cs"'),
     "seed: expected a repo-relative path"),
    (lambda t: t.replace("version = 1", "version = 2"), "version: expected 1"),
])
def test_add_tasks_refuses_bad_records_writing_nothing(shop: Shop, edit, said: str) -> None:
    _ready(shop)
    folder = shop.project / "suites" / "shop-suite"
    before = _tree(folder)
    records = _records(shop, edit(RECORDS).replace("BEFORE", shop.before))
    result = _add_tasks(shop, records)
    assert result.exit_code == 2, result.output
    assert said in result.output and "Traceback" not in result.output
    assert str(records) in result.output or "the command line" in result.output
    assert _tree(folder) == before


def test_add_tasks_never_overwrites_a_task(shop: Shop) -> None:
    _ready(shop)
    assert _add_tasks(shop, _records(shop)).exit_code == 0
    folder = shop.project / "suites" / "shop-suite"
    before = _tree(folder)
    again = _add_tasks(shop, _records(shop, RECORDS.replace('"price-and-cart"', '"other"')))
    assert again.exit_code == 2 and "record[1].id: expected a record whose tasks do not " \
        "exist yet" in again.output
    assert _tree(folder) == before


def test_add_tasks_needs_the_mirror_and_a_declared_rule(shop: Shop) -> None:
    _ready(shop)
    no_mirror = sandbench(shop, "suite", "add-tasks", "shop-suite", "--records",
                          str(_records(shop)))
    assert no_mirror.exit_code == 2 and "--mirror: expected the corpus's mirror" \
        in no_mirror.output
    toml = shop.project / "suites" / "shop-suite" / "suite.toml"
    toml.write_text(toml.read_text().replace('truth_rule = "text-v1"\n', ""))
    no_rule = _add_tasks(shop, _records(shop))
    assert no_rule.exit_code == 2 and "truth_rule: expected one of" in no_rule.output


@pytest.mark.parametrize(("version", "said"), [
    (None, "truth_rule_version: expected 2 (the version of the rules add-tasks"),
    ("1", "truth_rule_version: expected 2 (the version of the rules add-tasks"),
    ("0", "truth_rule_version: expected a whole number, 1 or more")])
def test_add_tasks_makes_truth_only_for_the_rules_version_the_suite_records(
        shop: Shop, version: str | None, said: str) -> None:
    """One suite's truth is made by one version of the rules: add-tasks refuses a suite that
    records another (or none), writing nothing."""
    _ready(shop)
    toml = shop.project / "suites" / "shop-suite" / "suite.toml"
    line = f"truth_rule_version = {truth_rules.VERSION}\n"
    toml.write_text(toml.read_text().replace(line, "" if version is None else
                                             f"truth_rule_version = {version}\n"))
    before = _tree(shop.project / "suites" / "shop-suite")
    refused = _add_tasks(shop, _records(shop))
    assert refused.exit_code == 2 and said in " ".join(refused.output.split()), refused.output
    assert _tree(shop.project / "suites" / "shop-suite") == before


def test_a_suite_records_its_rules_version_only_beside_its_rule(shop: Shop) -> None:
    _ready(shop)
    assert _add_tasks(shop, _records(shop)).exit_code == 0
    toml = shop.project / "suites" / "shop-suite" / "suite.toml"
    assert suite.load_suite(shop.project / "suites", "shop-suite").truth_rule_version == \
        truth_rules.VERSION
    toml.write_text(toml.read_text().replace('truth_rule = "text-v1"\n', ""))
    with pytest.raises(InputError, match="truth_rule_version: expected absent"):
        suite.load_suite(shop.project / "suites", "shop-suite")


# -- the rules ----------------------------------------------------------------------------------

def test_the_rules_a_suite_may_declare_are_the_librarys() -> None:
    assert set(suite.TRUTH_RULES) == set(truth_rules.RULES)


def test_text_truth_py_prints_what_truth_rule_prints(shop: Shop) -> None:
    """The wrapper script and `sandbench truth rule` print the same lines; JSON holds the same
    sets (several fix commits unioned)."""
    assert _add_corpus(shop, "--url", URL).exit_code == 0
    assert sandbench(shop, "corpus", "fetch", "shop", "--from", str(shop.mirror)).exit_code == 0
    pristine = str(shop.bench / "corpora" / "shop")
    mirror = str(shop.mirror)
    for script_args, cli_args in [
            (["fix", mirror, shop.fix1, shop.fix2], ["fix", mirror, shop.fix1, shop.fix2]),
            (["refs", pristine, "Money"], ["refs", pristine, "Money"]),
            (["impact", pristine, "src/Shop/Money.cs", mirror, shop.fix1],
             ["impact", pristine, "src/Shop/Money.cs", "--mirror", mirror, "--fix", shop.fix1])]:
        script = subprocess.run([sys.executable, str(REPO / "suites/tools/text_truth.py"),
                                 *script_args], capture_output=True, text=True, check=True)
        cli = CliRunner().invoke(app, ["truth", "rule", *cli_args])
        assert cli.exit_code == 0 and cli.stdout == script.stdout, cli.output
    assert script.stdout == ("types Money\nfix beyond seed tests/Shop.Tests/MoneyTests.cs "
                             "src/Shop/Price.cs\ngraded\n  2\n  src/Shop/Price.cs\n"
                             "  tests/Shop.Tests/MoneyTests.cs\n")
    fix = json.loads(CliRunner().invoke(app, ["truth", "rule", "fix", mirror, shop.fix1,
                                              shop.fix2, "--json"]).stdout)
    assert fix["files"] == [{"path": "tests/Shop.Tests/MoneyTests.cs", "lines": 7},
                            {"path": "src/Shop/Price.cs", "lines": 5},
                            {"path": "src/Shop/Cart.cs", "lines": 1},
                            {"path": "src/Shop/New.cs", "lines": 1}]
    assert fix["primary"] == "src/Shop/Price.cs"
    refs = json.loads(CliRunner().invoke(app, ["truth", "rule", "refs", pristine, "Money",
                                               "--json"]).stdout)
    assert refs["declaring"] == ["src/Shop/Money.cs"] and refs["rule"] == "text-v1"
    assert refs["rules_version"] == fix["rules_version"] == truth_rules.VERSION
    bad = CliRunner().invoke(app, ["truth", "rule", "fix", mirror, "HEAD~1"])
    assert bad.exit_code == 2 and "FIX_SHA: expected a commit" in bad.output


def test_a_source_file_above_the_bound_is_refused(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    big = tmp_path / "Big.cs"
    big.write_text("class Big { }\n" * 10)
    monkeypatch.setattr(truth_sources, "MAX_SOURCE_BYTES", 20)
    with pytest.raises(Exception, match="larger than 20 bytes"):
        truth_sources.read_source(big)
    monkeypatch.setattr(truth_sources, "MAX_SOURCE_BYTES", 1000)
    assert truth_sources.declared_types(big) == ["Big"]


@pytest.mark.parametrize(("path", "test"), [
    ("tests/MassTransit.Tests/FaultPoly_Specs.cs", True), ("src/Foo.Tests/Bar.cs", True),
    ("src/FooTests.cs", True), ("web/src/cart.test.ts", True), ("src/test/x.ts", True),
    ("src/Latest.cs", False), ("src/Spectre.cs", False), ("src/attest/A.cs", False),
    ("src/MassTransit/JobService/JobStateMachine.cs", False)])
def test_what_counts_as_a_test_file(path: str, test: bool) -> None:
    assert truth_sources.is_test(path) is test


@pytest.mark.parametrize("value", ['a"b', 'x"""y', '""""""""', 'end"', "tab\there\nback\\slash",
                                   "control\x01\x7f", "ünï"])
def test_toml_strings_read_back_as_written(value: str) -> None:
    assert tomllib.loads(f"k = {toml_text.string(value)}")["k"] == value
    assert tomllib.loads(f"k = {toml_text.multiline(value)}")["k"] == value + "\n"
    assert tomllib.loads(f"k = {toml_text.array([value, value])}")["k"] == [value, value]


def test_the_word_index_finds_what_the_word_search_finds(tmp_path: Path) -> None:
    """Sources.naming: its first call searches each file, later calls use the word index;
    both give the files naming the word as `\\bWORD\\b` does (not in a longer word)."""
    files = {"a.cs": "class Money { }", "b.cs": "MoneyBag x; Money.Zero", "c.cs": "Moneys",
             "d.cs": "résuméMoney Money_ _Money", "e.ts": "const $money = 1; money$"}
    with clean_git() as git:
        git.run("init", "-q", cwd=tmp_path)
        _commit(git, tmp_path, files, "words")
        for ext, names, want in [("cs", ["Money"], ["a.cs", "b.cs"]),
                                 ("cs", ["Money", "Moneys"], ["a.cs", "b.cs", "c.cs"]),
                                 ("cs", ["Money_"], ["d.cs"]), ("ts", ["money"], ["e.ts"]),
                                 ("ts", ["$money"], [])]:  # \b before $ needs a word char
            with foreign.opened(tmp_path, "PRISTINE") as checkout:
                sources = truth_sources.Sources(checkout)
                assert sources.naming(names, ext) == want  # the scan
                assert sources.naming(names, ext) == want  # the index (or the scan for $-names)


def test_refs_reads_rust_sources_with_their_own_lexer(tmp_path: Path) -> None:
    """A Rust file naming the symbol only in a raw string or a nested comment is admissible,
    in code core; the file declaring it (a struct with its where clause on the next line) is
    the declaring one."""
    files = {"src/level.rs": "pub struct StockLevel<T>\nwhere\n    T: Copy,\n{\n    n: T,\n}\n",
             "src/use.rs": "fn f<'a>(l: &'a StockLevel<u8>) {}\n",
             "src/doc.rs": 'const S: &str = r#"a "StockLevel" b"#; /* /* StockLevel */ */\n'}
    with clean_git() as git:
        git.run("init", "-q", cwd=tmp_path)
        _commit(git, tmp_path, files, "rust")
    with foreign.opened(tmp_path, "PRISTINE") as checkout:
        refs = truth_rules.refs(truth_sources.Sources(checkout), "StockLevel", "rs")
    assert (refs.core, refs.admissible, refs.declaring) == (
        ["src/level.rs", "src/use.rs"], ["src/doc.rs"], ["src/level.rs"])


def test_a_record_may_make_only_some_of_its_kinds(shop: Shop) -> None:
    _ready(shop)
    records = RECORDS.replace('seed = "src/Shop/Money.cs"',
                              'seed = "src/Shop/Money.cs"\nkinds = ["references", "impact"]')
    made = _add_tasks(shop, _records(shop, records))
    assert made.exit_code == 0, made.output
    tasks = sorted(p.stem for p in (shop.project / "suites" / "shop-suite" / "tasks").iterdir())
    assert tasks == ["impact-price-and-cart", "references-price-and-cart", "references-tax"]
    bad = _add_tasks(shop, _records(shop, RECORDS.replace('symbol = "Tax"',
                                                          'symbol = "Tax"\nkinds = ["impact"]')))
    assert bad.exit_code == 2 and "record[1].kinds: expected kinds this record's fields make: " \
        "['references'], found 'impact'" in bad.output


def test_the_declares_rule_finds_the_non_test_files_declaring_the_term(tmp_path: Path) -> None:
    """A published task's search term: `member` finds a declaration line holding it as
    written (its literal included), `type` a type whose name holds it; test files, comments
    and a line that is not a declaration never count."""
    files = {"src/Urn.cs": 'public static class MessageUrn\n{\n    public const string Prefix = '
                           '"urn:message:";\n}\n',
             "src/Use.cs": 'class Use { string x = "urn:message:" + y; }\n',
             "src/Note.cs": "// public const string P = \"urn:message:\";\nclass Note { }\n",
             "tests/UrnSpecs.cs": 'public class UrnSpecs { public const string P = '
                                  '"urn:message:"; }\n',
             "src/Outbox/InMemoryOutboxFilter.cs": "public class InMemoryOutboxFilter { }\n",
             "src/Outbox/Uses.cs": "class Uses { InMemoryOutboxFilter f; }\n"}
    with clean_git() as git:
        git.run("init", "-q", cwd=tmp_path)
        _commit(git, tmp_path, files, "declares")
    with foreign.opened(tmp_path, "PRISTINE") as checkout:
        sources = truth_sources.Sources(checkout)
        member = truth_rules.declarations(sources, "urn:message:", "member")
        assert member.files == ["src/Urn.cs"]
        assert member.to_json()["primary"] == "src/Urn.cs"
        found = truth_rules.declarations(sources, "inmemoryoutbox", "type", ignore_case=True)
        assert found.files == ["src/Outbox/InMemoryOutboxFilter.cs"]
        assert truth_rules.declarations(sources, "inmemoryoutbox", "type").files == []
        with pytest.raises(InputError, match="--what"):
            truth_rules.declarations(sources, "x", "field")

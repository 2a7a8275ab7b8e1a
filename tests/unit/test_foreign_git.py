"""git never runs a program or fetches because of a repository sandbench did not make (issue
#29, class 5). The hostile mirrors are built here from the shop corpus's repository: a full
mirror and a partial one (`--filter=blob:none`, so git would lazy-fetch every blob from its
promisor remote), each configured with every key that makes git run a program (the promisor's
`uploadpack`, `core.sshCommand`, fsmonitor, hooks, filters, textconv, a pager, a credential
helper, ...), directly, through `include.path` and through `includeIf`, each pointing at a
script that records that it ran. The three authoring commands (and `truth rule impact
--mirror`, `text_truth.py`, `corpus fetch --from`) run on them leave no record; on the full
mirror they print what they print on a clean one, on the partial one one InputError naming the
mirror and the missing object."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.corpus import foreign
from orchestrator.corpus.git import clean_git
from orchestrator.errors import InputError
from tests.unit.test_authoring import (
    REPO,
    URL,
    Shop,
    _new_suite,
    _records,
    _tree,
    make_shop,
    sandbench,
)

HOOKS = ("applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
         "prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout",
         "post-merge", "pre-push", "pre-receive", "update", "proc-receive", "post-receive",
         "post-update", "reference-transaction", "push-to-checkout", "pre-auto-gc",
         "post-rewrite", "sendemail-validate", "fsmonitor-watchman", "p4-changelist",
         "p4-prepare-changelist", "p4-post-changelist", "p4-pre-submit", "post-index-change")


def _keys(evil: Path, hooks: Path, upstream: Path) -> str:
    """Every config key through which git runs a program or fetches, each naming `evil`."""
    return f"""
[core]
\trepositoryformatversion = 1
\tsshCommand = {evil} ssh-command
\tfsmonitor = {evil} fsmonitor
\thooksPath = {hooks}
\tpager = {evil} core-pager
\teditor = {evil} editor
\taskPass = {evil} askpass
\tgitProxy = {evil} git-proxy
\talternateRefsCommand = {evil} alternate-refs
\tattributesFile = {hooks}/attributes
[extensions]
\tpartialClone = origin
[remote "origin"]
\turl = file://{upstream}
\tpromisor = true
\tpartialclonefilter = blob:none
\tuploadpack = {evil} upload-pack
\treceivepack = {evil} receive-pack
[uploadpack]
\tpackObjectsHook = {evil} pack-objects-hook
[credential]
\thelper = !{evil} credential-helper
[filter "x"]
\tprocess = {evil} filter-process
\tsmudge = {evil} smudge
\tclean = {evil} clean
\trequired = true
[diff]
\texternal = {evil} diff-external
[diff "x"]
\ttextconv = {evil} textconv
\tcommand = {evil} diff-command
[pager]
\tdiff = {evil} pager-diff
\tlog = {evil} pager-log
[gpg]
\tprogram = {evil} gpg
[log]
\tshowSignature = true
[sequence]
\teditor = {evil} sequence-editor
[gc]
\tauto = 1
\tautoDetach = false
"""


def _plant(git_dir: Path, tmp: Path, upstream: Path) -> None:
    """Make `git_dir` hostile: every key, an include of them, includeIf, every hook (in the
    repository and in core.hooksPath), attributes naming the filter and the diff driver."""
    evil = tmp / "evil.sh"
    if not evil.exists():
        evil.write_text(f'#!/bin/sh\necho "$*" >> {tmp / "ran"}\nexit 1\n')
        evil.chmod(0o755)
    hooks = tmp / "hooks"
    hooks.mkdir(exist_ok=True)
    (hooks / "attributes").write_text("* filter=x diff=x\n")
    keys = _keys(evil, hooks, upstream)
    (tmp / "included.config").write_text(keys)
    with (git_dir / "config").open("a") as config:
        config.write(keys + f'[include]\n\tpath = {tmp / "included.config"}\n'
                     f'[includeIf "gitdir:/"]\n\tpath = {tmp / "included.config"}\n')
    (git_dir / "info").mkdir(exist_ok=True)
    (git_dir / "info" / "attributes").write_text("* filter=x diff=x\n")
    for folder in (git_dir / "hooks", hooks):
        folder.mkdir(exist_ok=True)
        for name in HOOKS:
            (folder / name).write_text(f"#!/bin/sh\nexec {evil} hook-{name}\n")
            (folder / name).chmod(0o755)


def _hostile(shop: Shop, tmp: Path, partial: bool) -> Path:
    """The shop repository's mirror, hostile; partial: cloned with blob:none from file://."""
    mirror = tmp / ("partial" if partial else "full") / "acme+shop" / "repo"
    with clean_git() as git:
        git.run("config", "uploadpack.allowFilter", "true", cwd=shop.upstream)
        git.run("clone", "-q", "--mirror", *(["--filter=blob:none"] if partial else []),
                f"file://{shop.upstream}", str(mirror))
        missing = git.out("rev-list", "--objects", "--missing=print", "--all", cwd=mirror)
    assert ("?" in missing) is partial  # the partial mirror really lacks objects
    _plant(mirror, tmp, shop.upstream)
    return mirror


@pytest.fixture
def shop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Shop:
    shop = make_shop(tmp_path, monkeypatch)
    assert sandbench(shop, "corpus", "add", "shop", "--from", str(shop.mirror), "--url", URL,
                     "--sha", shop.pin, "--license", "MIT", "--kind", "target", "--note",
                     "A tiny shop.").exit_code == 0
    assert sandbench(shop, "corpus", "fetch", "shop", "--from", str(shop.mirror)).exit_code == 0
    assert _new_suite(shop).exit_code == 0
    return shop


def _nothing_ran(tmp: Path, after: str) -> None:
    ran = tmp / "ran"
    assert not ran.exists(), f"after {after}, git ran: {ran.read_text()}"


# A commit no mirror holds: in a promisor's mirror, git asks the remote for it.
ABSENT = "0123456789abcdef" * 2 + "01234567"


def _pin(shop: Shop, mirror: Path, lock: Path, sha: str) -> tuple[int, str, str]:
    """corpus add --from `mirror` into a copy of the lock: exit, output and the lock after."""
    shutil.copy2(shop.project / "corpus.lock", lock)
    result = sandbench(shop, "corpus", "add", "shop-2", "--from", str(mirror), "--sha", sha,
                       "--url", URL, "--license", "MIT", "--kind", "target", "--note",
                       "A tiny shop.", "--lock", str(lock))
    return (result.exit_code, result.output.replace(str(lock), "LOCK").replace(str(mirror), "M"),
            lock.read_text())


def _pins_as_clean(shop: Shop, mirror: Path, tmp: Path) -> None:
    """corpus add --from `mirror` pins what it pins from the clean mirror, and refuses the
    same absent commit, running nothing."""
    for sha, code in ((shop.pin, 0), (ABSENT, 2)):
        clean = _pin(shop, shop.mirror, tmp / "clean.lock", sha)
        hostile = _pin(shop, mirror, tmp / "hostile.lock", sha)
        _nothing_ran(tmp, f"corpus add --from --sha {sha}")
        assert clean[0] == code and hostile == clean, (clean, hostile)


def _add_tasks_on(shop: Shop, mirror: Path) -> tuple[int, str, dict[str, bytes]]:
    """add-tasks with `mirror`; the suite folder put back as it was after."""
    folder = shop.project / "suites" / "shop-suite"
    before = folder.parent / "before"
    shutil.copytree(folder, before)
    made = sandbench(shop, "suite", "add-tasks", "shop-suite", "--records",
                     str(_records(shop)), "--mirror", str(mirror))
    tree = _tree(folder)
    shutil.rmtree(folder)
    before.rename(folder)
    return made.exit_code, made.output.replace(str(mirror), "MIRROR"), tree


def _truth(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["truth", "rule", *args])
    return result.exit_code, result.output


def test_on_a_hostile_full_mirror_authoring_prints_what_a_clean_one_gives(
        shop: Shop, tmp_path: Path) -> None:
    hostile = _hostile(shop, tmp_path, partial=False)
    pristine = str(shop.bench / "corpora" / "shop")
    _pins_as_clean(shop, hostile, tmp_path)
    for args in (["fix", "MIRROR", shop.fix1, shop.fix2], ["fix", "MIRROR", shop.fix1, "--json"],
                 ["impact", pristine, "src/Shop/Money.cs", "--mirror", "MIRROR", "--fix",
                  shop.fix1, "--fix", shop.fix2]):
        clean = _truth(*[str(shop.mirror) if a == "MIRROR" else a for a in args])
        hostile_said = _truth(*[str(hostile) if a == "MIRROR" else a for a in args])
        _nothing_ran(tmp_path, f"truth rule {args[0]}")
        assert clean[0] == 0 and clean[1].count("\n") >= 2, clean
        assert hostile_said == clean
    checkout = tmp_path / "checkout"  # a hostile PRISTINE: a clone at the pin, its .git planted
    with clean_git() as git:
        git.run("clone", "-q", "--no-checkout", str(shop.upstream), str(checkout))
        git.run("checkout", "-q", "--detach", shop.pin, cwd=checkout)
    _plant(checkout / ".git", tmp_path, shop.upstream)
    for verb in (["refs", "{}", "Money"], ["declares", "{}", "Money", "--what", "type"]):
        clean = _truth(*[a.format(pristine) for a in verb])
        hostile_said = _truth(*[a.format(checkout) for a in verb])
        _nothing_ran(tmp_path, f"truth rule {verb[0]} PRISTINE")
        assert clean[0] == 0 and hostile_said == clean, (clean, hostile_said)
    clean_tasks = _add_tasks_on(shop, shop.mirror)
    hostile_tasks = _add_tasks_on(shop, hostile)
    _nothing_ran(tmp_path, "suite add-tasks --mirror")
    assert clean_tasks[0] == 0 and len(clean_tasks[2]) > 5, clean_tasks[1]
    assert hostile_tasks == clean_tasks
    fetched = sandbench(shop, "corpus", "fetch", "shop", "--from", str(hostile), "--force")
    _nothing_ran(tmp_path, "corpus fetch --from")
    assert fetched.exit_code == 0, fetched.output


def test_a_partial_hostile_mirror_is_one_clear_error_never_a_fetch(
        shop: Shop, tmp_path: Path) -> None:
    partial = _hostile(shop, tmp_path, partial=True)
    pristine = str(shop.bench / "corpora" / "shop")
    _pins_as_clean(shop, partial, tmp_path)  # a pin needs its commit only, which it holds
    said = f"{partial} lacks object "
    for args in (["fix", str(partial), shop.fix1],
                 ["impact", pristine, "src/Shop/Money.cs", "--mirror", str(partial), "--fix",
                  shop.fix1]):
        code, output = _truth(*args)
        _nothing_ran(tmp_path, f"truth rule {args[0]}")
        assert code == 2 and said in output and "partial or shallow copy" in output \
            and "git clone --mirror URL" in output and "Traceback" not in output, output
    code, output, tree = _add_tasks_on(shop, partial)
    _nothing_ran(tmp_path, "suite add-tasks --mirror")
    assert code == 2 and "--mirror MIRROR lacks object" in output, output
    assert tree == _tree(shop.project / "suites" / "shop-suite")  # nothing written
    script = subprocess.run([sys.executable, str(REPO / "suites/tools/text_truth.py"), "fix",
                             str(partial), shop.fix1], capture_output=True, text=True)
    _nothing_ran(tmp_path, "text_truth.py fix")
    assert script.returncode != 0 and said in script.stderr, script.stderr
    fetched = sandbench(shop, "corpus", "fetch", "shop", "--from", str(partial), "--force")
    _nothing_ran(tmp_path, "corpus fetch --from")
    assert fetched.exit_code != 0  # upload-pack cannot send what the mirror lacks


@pytest.mark.parametrize("twist", ["dot-git-file", "alternates", "objects-link", "fifo",
                                   "commondir"])
def test_a_mirror_whose_objects_lie_elsewhere_is_refused(shop: Shop, tmp_path: Path,
                                                         twist: str) -> None:
    """A `.git` file, alternates, a linked object directory, a FIFO among the objects, a
    shared git dir: each one InputError naming the mirror, nothing run."""
    hostile = _hostile(shop, tmp_path, partial=False)
    given = hostile
    if twist == "dot-git-file":
        given = tmp_path / "checkout"
        given.mkdir()
        (given / ".git").write_text(f"gitdir: {hostile}\n")
    elif twist == "alternates":
        (hostile / "objects" / "info" / "alternates").write_text(f"{shop.mirror}/objects\n")
    elif twist == "objects-link":
        shutil.rmtree(hostile / "objects")
        (hostile / "objects").symlink_to(shop.mirror / "objects")
    elif twist == "fifo":
        os.mkfifo(hostile / "objects" / "pack" / "pack-0.idx")
    else:
        (hostile / "commondir").write_text(f"{shop.mirror}\n")
    code, output = _truth("fix", str(given), shop.fix1)
    _nothing_ran(tmp_path, twist)
    assert code == 2 and str(given) in output and "Traceback" not in output, output


def test_head_is_read_as_data_through_loose_and_packed_refs(shop: Shop, tmp_path: Path) -> None:
    with foreign.opened(shop.mirror, "MIRROR") as repo:
        assert repo.head() == shop.fix2  # refs/heads/main, packed by the clone
    checkout = tmp_path / "checkout"
    with clean_git() as git:
        git.run("clone", "-q", str(shop.upstream), str(checkout))
        git.run("checkout", "-q", "--detach", shop.pin, cwd=checkout)
    with foreign.opened(checkout, "PRISTINE") as repo:
        assert repo.head() == shop.pin  # detached
    (checkout / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    with foreign.opened(checkout, "PRISTINE") as repo:
        assert repo.head() == shop.fix2  # a loose ref
    (checkout / ".git" / "HEAD").unlink()
    (checkout / ".git" / "HEAD").symlink_to(checkout / ".git" / "ORIG_HEAD")
    with foreign.opened(checkout, "PRISTINE") as repo, pytest.raises(InputError, match="HEAD"):
        repo.head()


# -- every module that runs git, and why it may ---------------------------------------------

# Modules that run git themselves, each on repositories sandbench made (or its own checkout):
# every other module reaches a repository it did not make through orchestrator.corpus.foreign.
RUNS_GIT = {
    "orchestrator/corpus/git.py": "clean git itself; the demo corpus in a temp repository",
    "orchestrator/corpus/foreign.py": "git in a scratch repository of its own",
    "orchestrator/corpus/pristine.py": "fetches into its own staging repository; a --from "
                                       "mirror only serves it through git-upload-pack",
    "orchestrator/corpus/copies.py": "the pristine store's git dir",
    "orchestrator/line_index.py": "the pristine store's object store",
    "orchestrator/oracle/sources.py": "the pristine store",
    "orchestrator/suite/loading.py": "the pristine store (check_truth_at_pin)",
    "orchestrator/sandbox/remote.py": "a fresh copy of the pristine on an engine's host, before "
                                      "any container has it",
    "benchmarks/bounds_cost.py": "clones of this project's own checkout",
    "benchmarks/cold_demo.py": "clones of this project's own checkout",
    "benchmarks/split_cost.py": "an earlier helper source from this project's own history",
    "benchmarks/probe_cost.py": "an earlier helper source from this project's own history",
    "benchmarks/corpus_copy.py": "a repository it synthesises",
    "benchmarks/docker_group.py": "this project's own checkout (its files, for another user)",
    "benchmarks/foreign_git_cost.py": "a repository it synthesises; this checkout (git archive)",
    "benchmarks/cli_startup.py": "this checkout (git archive of an earlier commit)",
}


def _runs_git(tree: ast.AST) -> bool:
    """The module imports clean git, or spells a git command line (argv or shell text)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "orchestrator.corpus.git" and \
                {alias.name for alias in node.names} & {"clean_git", "Git", "CLEAN_GIT_ENV"}:
            return True
        if isinstance(node, ast.List) and node.elts and isinstance(node.elts[0], ast.Constant) \
                and node.elts[0].value == "git":
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                node.value.startswith("git "):
            return True
    return False


def test_only_modules_working_on_repositories_sandbench_made_run_git() -> None:
    found = {path.relative_to(REPO).as_posix()
             for folder in ("orchestrator", "suites", "benchmarks", "scripts")
             for path in sorted((REPO / folder).rglob("*.py"))
             if _runs_git(ast.parse(path.read_text(), str(path)))}
    assert found == set(RUNS_GIT), ("a module runs git on its own: route a repository "
                                    "sandbench did not make through orchestrator.corpus.foreign")

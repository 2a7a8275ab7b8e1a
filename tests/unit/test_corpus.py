"""Fetch at the pin, the pristine store, per-arm copies and tamper detection, with real git."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings as hsettings, strategies as st
from structlog.testing import capture_logs

from orchestrator import corpus, demo_corpus
from orchestrator.errors import InputError, SandbenchError
from orchestrator.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DEMO_SHA = "fdafffcc9bcb9bcea0a59ec86b520a9978cf136b"
ENV = {"PATH": os.environ["PATH"], "HOME": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
       "GIT_CONFIG_GLOBAL": os.devnull, "LC_ALL": "C",
       "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
       "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
       "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z"}


def git(*args: str, cwd: Path | None = None, check: bool = True) -> str:
    proc = subprocess.run(["git", "-c", "init.defaultBranch=main", "-c", "gc.auto=0", *args],
                          cwd=cwd, env=ENV, capture_output=True, text=True, check=False)
    if check and proc.returncode:
        raise AssertionError(f"git {args}: {proc.stderr}")
    return proc.stdout.strip()


@dataclasses.dataclass(frozen=True)
class Upstream:
    """A repo with history around the pin: `answer` is the later commit no arm may see."""

    work: Path
    mirror: Path
    bundle: Path
    before: str
    pin: str
    answer: str


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Upstream:
    root = tmp_path_factory.mktemp("upstream")
    work = root / "work"
    git("init", "-q", str(work))
    (work / "src").mkdir()
    (work / "src" / "Order.cs").write_text("class Order {}\n")
    (work / "README.md").write_text("sample\n")
    git("add", ".", cwd=work)
    git("commit", "-qm", "first", cwd=work)
    before = git("rev-parse", "HEAD", cwd=work)
    (work / "src" / "cart.ts").write_text("export class Cart {}\n")
    (work / "src" / "lib.rs").write_text("pub fn f() {}\n")
    (work / "run.sh").write_text("#!/bin/sh\n")
    (work / "run.sh").chmod(0o755)
    os.symlink("src/Order.cs", work / "link-to-order")
    git("add", ".", cwd=work)
    git("commit", "-qm", "second", cwd=work)
    pin = git("rev-parse", "HEAD", cwd=work)
    (work / "src" / "Order.cs").write_text("class Order { /* the fix */ }\n")
    git("commit", "-qam", "the fix", cwd=work)
    answer = git("rev-parse", "HEAD", cwd=work)
    git("remote", "add", "origin", "https://example.invalid/acme/sample.git", cwd=work)
    git("clone", "-q", "--mirror", str(work), str(root / "mirror.git"))
    git("bundle", "create", str(root / "all.bundle"), "--all", cwd=work)
    return Upstream(work, root / "mirror.git", root / "all.bundle", before, pin, answer)


def make_pin(sha: str | None, **changes: str) -> corpus.CorpusPin:
    base = corpus.CorpusPin(id="sample", repo="acme/sample",
                            url="https://example.invalid/acme/sample.git", sha=sha,
                            license="MIT", kind="target", status="registered", note="")
    return dataclasses.replace(base, **changes)


@pytest.fixture
def cfg(tmp_path: Path) -> Settings:
    return Settings(project_root=ROOT, bench_root=tmp_path / "bench")


@pytest.fixture
def fetched(upstream: Upstream, cfg: Settings) -> tuple[corpus.CorpusPin, Path]:
    pin = make_pin(upstream.pin)
    corpus.fetch(pin, cfg, source=upstream.mirror)
    return pin, corpus.corpus_dir(cfg, pin.id)


def has_object(repo: Path, sha: str) -> bool:
    return subprocess.run(["git", "cat-file", "-e", sha], cwd=repo, env=ENV,
                          capture_output=True).returncode == 0


def assert_clean_pristine(repo: Path, up: Upstream, shallow: bool = True) -> None:
    assert git("rev-parse", "HEAD", cwd=repo) == up.pin
    assert git("symbolic-ref", "-q", "HEAD", cwd=repo, check=False) == ""
    assert git("remote", cwd=repo) == ""
    assert git("for-each-ref", cwd=repo) == ""
    assert git("status", "--porcelain", "--ignored", cwd=repo) == ""
    assert not has_object(repo, up.answer), "the later commit (the answer) must not be there"
    assert has_object(repo, up.before) is not shallow
    assert (repo / "link-to-order").is_symlink()
    assert os.access(repo / "run.sh", os.X_OK)


# --- fetch -----------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["mirror", "bundle", "work"])
def test_fetch_from_a_local_source_stores_only_the_pin(upstream: Upstream, cfg: Settings,
                                                       kind: str) -> None:
    pin = make_pin(upstream.pin)
    info = corpus.fetch(pin, cfg, source=getattr(upstream, kind))
    repo = corpus.corpus_dir(cfg, "sample")
    assert_clean_pristine(repo, upstream)
    assert info.shallow and info.sha == upstream.pin
    assert info.tracked_files == 6
    assert info.languages == {"C#": 1, "Rust": 1, "TypeScript": 1}
    assert info.extensions == {"(none)": 1, ".cs": 1, ".md": 1, ".rs": 1, ".sh": 1, ".ts": 1}
    assert info.worktree_bytes > 0 and info.git_bytes > 0
    assert info.source == str(getattr(upstream, kind).resolve())
    record = json.loads(corpus.info_path(cfg, "sample").read_text())
    assert record == info.to_json() and record["tree_digest"] == corpus.tree_digest(repo)
    assert sorted(p.name for p in repo.parent.iterdir()) == ["sample", "sample.json"]


def test_fetch_from_the_url_is_shallow_at_the_pin(upstream: Upstream, cfg: Settings) -> None:
    pin = make_pin(upstream.pin, url=upstream.mirror.as_uri())
    info = corpus.fetch(pin, cfg)
    assert info.source == pin.url and info.shallow
    assert_clean_pristine(corpus.corpus_dir(cfg, "sample"), upstream)


def test_fetch_removes_every_remote_of_the_source(upstream: Upstream, cfg: Settings) -> None:
    assert git("remote", cwd=upstream.work) == "origin"
    corpus.fetch(make_pin(upstream.pin), cfg, source=upstream.work)
    repo = corpus.corpus_dir(cfg, "sample")
    assert git("remote", cwd=repo) == ""
    assert "remote" not in (repo / ".git" / "config").read_text()
    assert not (repo / ".git" / "FETCH_HEAD").exists()


def test_full_history_keeps_the_ancestry_but_never_what_came_after(upstream: Upstream,
                                                                   cfg: Settings) -> None:
    info = corpus.fetch(make_pin(upstream.pin), cfg, source=upstream.bundle, full_history=True)
    assert not info.shallow
    assert_clean_pristine(corpus.corpus_dir(cfg, "sample"), upstream, shallow=False)


def test_a_proposed_corpus_is_fetched_by_nobody(upstream: Upstream, cfg: Settings) -> None:
    with pytest.raises(InputError, match="'sample' is proposed, not pinned"):
        corpus.fetch(make_pin(None, status="proposed"), cfg, source=upstream.mirror)
    assert not cfg.bench_root.exists()


@pytest.mark.parametrize("kind", ["mirror", "bundle"])
def test_a_sha_the_source_lacks_is_refused_and_leaves_nothing(upstream: Upstream, cfg: Settings,
                                                              kind: str) -> None:
    with pytest.raises(InputError, match="does not contain commit 1{40}") as info:
        corpus.fetch(make_pin("1" * 40), cfg, source=getattr(upstream, kind))
    assert info.value.exit_code == 2
    assert list((cfg.bench_root / "corpora").iterdir()) == []


def test_a_source_that_is_not_a_repository_is_refused(tmp_path: Path, cfg: Settings) -> None:
    (tmp_path / "junk").write_text("not a bundle")
    with pytest.raises(InputError, match="cannot read .*junk as a git repository"):
        corpus.fetch(make_pin("1" * 40), cfg, source=tmp_path / "junk")
    with pytest.raises(InputError, match="no such file or directory"):
        corpus.fetch(make_pin("1" * 40), cfg, source=tmp_path / "absent")


def test_an_existing_destination_is_refused_without_force(fetched, upstream: Upstream,
                                                          cfg: Settings) -> None:
    pin, repo = fetched
    before = corpus.tree_digest(repo)
    with pytest.raises(InputError, match="already fetched") as info:
        corpus.fetch(pin, cfg, source=upstream.mirror)
    assert info.value.exit_code == 2
    assert corpus.tree_digest(repo) == before


def test_an_incomplete_copy_also_counts_as_existing(fetched, upstream: Upstream,
                                                    cfg: Settings) -> None:
    pin, _ = fetched
    corpus.info_path(cfg, pin.id).unlink()
    assert corpus.list_corpora({pin.id: pin}, cfg)[0].state == "incomplete"
    with pytest.raises(InputError, match="already fetched"):
        corpus.fetch(pin, cfg, source=upstream.mirror)


def test_force_reverifies_reports_and_replaces_a_tampered_copy(fetched, upstream: Upstream,
                                                               cfg: Settings) -> None:
    pin, repo = fetched
    (repo / "README.md").write_text("tampered\n")
    with capture_logs() as logs:
        info = corpus.fetch(pin, cfg, source=upstream.bundle, force=True)
    replacing = [e for e in logs if e["event"] == "corpus.replacing"]
    assert replacing and replacing[0]["existing"] == "failed verification"
    assert "worktree: expected clean" in replacing[0]["why"]
    assert (repo / "README.md").read_text() == "sample\n"
    assert corpus.verify_pristine(pin, cfg) == info
    assert sorted(p.name for p in repo.parent.iterdir()) == ["sample", "sample.json"]


def test_the_demo_corpus_needs_no_network_and_has_its_pinned_sha(cfg: Settings) -> None:
    pin = corpus.load_lock(ROOT / "corpus.lock")["demo"]
    assert pin.sha == DEMO_SHA
    info = corpus.fetch(pin, cfg)
    repo = corpus.corpus_dir(cfg, "demo")
    assert git("rev-parse", "HEAD", cwd=repo) == DEMO_SHA
    assert info.source == "builtin:demo" and info.tracked_files == len(demo_corpus.files())
    assert set(info.languages) == {"C#", "TypeScript", "Rust"}
    assert min(info.languages.values()) >= 8
    corpus.verify_pristine(pin, cfg)


def test_the_demo_sha_is_stable_and_what_plain_git_makes_of_the_tree(tmp_path: Path) -> None:
    assert corpus.demo_sha() == DEMO_SHA
    work = tmp_path / "plain"
    shutil.copytree(demo_corpus.TREE, work)
    git("init", "-q", str(work))
    git("-c", "core.autocrlf=false", "add", ".", cwd=work)
    msg = demo_corpus.MESSAGE.decode()
    name, rest = demo_corpus.IDENT.split(" <")
    email, _, date = rest.partition("> ")
    env = {**ENV, "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": date,
           "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email,
           "GIT_COMMITTER_DATE": date}
    subprocess.run(["git", "commit", "-q", "--cleanup=verbatim", "-m", msg.rstrip("\n")],
                   cwd=work, env=env, check=True)
    assert git("rev-parse", "HEAD", cwd=work) == DEMO_SHA


def test_a_changed_demo_tree_is_refused_naming_both_shas(tmp_path: Path, cfg: Settings,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(demo_corpus.TREE, tree)
    (tree / "README.md").write_text("changed\n")
    original = demo_corpus.fast_import_stream
    monkeypatch.setattr(demo_corpus, "fast_import_stream", lambda: original(tree))
    pin = corpus.load_lock(ROOT / "corpus.lock")["demo"]
    with pytest.raises(SandbenchError, match=f"is commit [0-9a-f]{{40}}, but corpus.lock pins "
                       f"{DEMO_SHA}"):
        corpus.fetch(pin, cfg)
    assert list((cfg.bench_root / "corpora").iterdir()) == []


# --- verify and the tree digest --------------------------------------------------------------

def test_verify_passes_on_an_untouched_copy_and_changes_nothing(fetched, cfg: Settings) -> None:
    pin, repo = fetched
    before = corpus.snapshot(repo)
    corpus.verify_pristine(pin, cfg)
    corpus.verify_pristine(pin, cfg)
    assert corpus.changes(before, corpus.snapshot(repo)) == []


@pytest.mark.parametrize("tamper, check", [
    (lambda r: (r / "src" / "cart.ts").write_bytes(b"export class Cart {]\n"), "worktree"),
    (lambda r: (r / "new-file").write_text("x"), "worktree"),
    (lambda r: git("remote", "add", "origin", "https://example.invalid/x.git", cwd=r), "remotes"),
    (lambda r: git("switch", "-qc", "work", cwd=r), "HEAD: expected detached"),
    (lambda r: git("update-ref", "refs/heads/keep", "HEAD", cwd=r), "refs"),
    (lambda r: (r / ".git" / "description").write_text("x"), "tree digest"),
    (lambda r: (r / "run.sh").chmod(0o644), "worktree"),
])
def test_verify_names_what_changed(fetched, cfg: Settings, tamper, check: str) -> None:
    pin, repo = fetched
    tamper(repo)
    with pytest.raises(SandbenchError) as info:
        corpus.verify_pristine(pin, cfg)
    assert check in info.value.why
    assert "tree digest" in info.value.why
    assert info.value.exit_code == 1


def test_verify_refuses_when_the_lock_moved_the_pin(fetched, upstream: Upstream,
                                                    cfg: Settings) -> None:
    pin, _ = fetched
    with pytest.raises(SandbenchError, match=f"pin: expected {upstream.answer}"):
        corpus.verify_pristine(dataclasses.replace(pin, sha=upstream.answer), cfg)
    assert corpus.list_corpora({pin.id: dataclasses.replace(pin, sha=upstream.answer)},
                               cfg)[0].state == "stale"


def test_verify_of_an_unfetched_corpus_says_how_to_fetch(cfg: Settings) -> None:
    with pytest.raises(SandbenchError, match="not fetched") as info:
        corpus.verify_pristine(make_pin("1" * 40), cfg)
    assert info.value.fix.startswith("sandbench corpus fetch sample --from PATH/TO/MIRROR (a "
                                     "local clone, bare mirror or bundle of acme/sample;")
    assert "leave out --from to fetch https://example.invalid/acme/sample.git" in info.value.fix


def test_the_fetch_hint_of_an_embedded_corpus_needs_no_mirror() -> None:
    demo = make_pin("1" * 40, id="demo", url="builtin:demo")
    assert demo.fetch_hint() == "sandbench corpus fetch demo"
    assert demo.fetch_hint(force=True) == "sandbench corpus fetch demo --force"


def test_the_tree_digest_detects_a_one_byte_change_anywhere(fetched) -> None:
    _, repo = fetched
    before = corpus.tree_digest(repo)
    pack = next(p for p in (repo / ".git" / "objects").rglob("*") if p.is_file())
    for target in (repo / "src" / "Order.cs", pack):
        data = bytearray(target.read_bytes())
        target.chmod(0o644)
        original = bytes(data)
        data[len(data) // 2] ^= 0x01
        target.write_bytes(bytes(data))
        assert corpus.tree_digest(repo) != before, target
        target.write_bytes(original)
        target.chmod(0o444 if ".git" in target.parts else 0o644)
    assert corpus.tree_digest(repo) == before


@hsettings(max_examples=40, deadline=None)
@given(data=st.binary(min_size=1, max_size=300), where=st.integers(min_value=0),
       bit=st.integers(0, 7))
def test_any_single_bit_flip_changes_the_digest(data: bytes, where: int, bit: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "f")
        path.write_bytes(data)
        before = corpus.tree_digest(Path(tmp))
        flipped = bytearray(data)
        flipped[where % len(data)] ^= 1 << bit
        path.write_bytes(bytes(flipped))
        assert corpus.tree_digest(Path(tmp)) != before


def test_the_digest_hashes_symlinks_as_links_and_sees_modes_and_empty_dirs(
        tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.write_text("one")
    (root / "f").write_text("x")
    os.symlink(outside, root / "link")
    os.mkfifo(root / "fifo")
    base = corpus.tree_digest(root)
    outside.write_text("two")
    assert corpus.tree_digest(root) == base, "a symlink's target must never be followed"
    (root / "f").chmod(0o755)
    assert corpus.tree_digest(root) != base
    (root / "f").chmod(0o644)
    (root / "empty").mkdir()
    assert corpus.tree_digest(root) != base
    (root / "empty").rmdir()
    (root / "link").unlink()
    os.symlink(tmp_path / "elsewhere", root / "link")
    assert corpus.tree_digest(root) != base
    assert corpus.snapshot(root).entries["fifo"].kind == "other"


# --- per-arm copies --------------------------------------------------------------------------

def test_arm_copies_are_independent_of_the_pristine_and_of_each_other(
        fetched, upstream: Upstream, tmp_path: Path) -> None:
    pin, pristine = fetched
    digest = corpus.tree_digest(pristine)
    a = corpus.make_arm_copy(pristine, tmp_path / "arms" / "a", pin)
    b = corpus.make_arm_copy(pristine, tmp_path / "arms" / "b", pin)
    for copy in (a, b):
        assert_clean_pristine(copy, upstream)
        assert not (copy / ".git" / "objects" / "info" / "alternates").exists()
        corpus.verify_arm_copy(copy, pristine, pin)
    (a / "src" / "Order.cs").write_text("class Order { int edited; }\n")
    (a / ".git" / "tool-index.db").write_bytes(b"\0" * 64)
    git("-c", "core.hooksPath=/dev/null", "commit", "-qam", "arm state", cwd=a)
    committed = git("rev-parse", "HEAD", cwd=a)
    assert corpus.tree_digest(pristine) == digest
    for other in (pristine, b):
        assert (other / "src" / "Order.cs").read_text() == "class Order {}\n"
        assert not (other / ".git" / "tool-index.db").exists()
        assert not has_object(other, committed)
    pristine_inodes = {p.stat().st_ino for p in pristine.rglob("*") if p.is_file()}
    assert not pristine_inodes & {p.stat().st_ino for p in b.rglob("*") if p.is_file()}


def test_a_fresh_copy_needs_no_index_rewrite(fetched, tmp_path: Path) -> None:
    pin, pristine = fetched
    copy = corpus.make_arm_copy(pristine, tmp_path / "arm", pin)
    before = corpus.snapshot(copy)
    git("status", cwd=copy)
    assert corpus.changes(before, corpus.snapshot(copy)) == []


@pytest.mark.parametrize("tamper, named", [
    (lambda r: (r / "README.md").write_text("changed\n"), "worktree: expected clean"),
    (lambda r: git("remote", "add", "up", "https://example.invalid/x.git", cwd=r),
     "remotes: expected none, found up"),
    (lambda r: git("switch", "-qc", "b", cwd=r), "HEAD: expected detached, found on refs/heads/b"),
    (lambda r: (r / ".git" / "objects" / "info" / "alternates").write_text("/elsewhere\n"),
     "object store: expected its own objects"),
])
def test_a_copy_that_differs_is_refused_naming_the_difference(fetched, tmp_path: Path, tamper,
                                                              named: str) -> None:
    pin, pristine = fetched
    tamper(pristine)
    with pytest.raises(SandbenchError, match="refused") as info:
        corpus.make_arm_copy(pristine, tmp_path / "arms" / "a", pin)
    assert named in info.value.why
    assert list((tmp_path / "arms").iterdir()) == []


def test_a_copy_at_another_commit_is_refused(fetched, upstream: Upstream,
                                             tmp_path: Path) -> None:
    pin, pristine = fetched
    with pytest.raises(SandbenchError) as info:
        corpus.make_arm_copy(pristine, tmp_path / "a",
                             dataclasses.replace(pin, sha=upstream.answer))
    assert f"HEAD: expected {upstream.answer}, found {upstream.pin}" in info.value.why


def test_a_worktree_of_another_clone_is_refused(fetched, tmp_path: Path) -> None:
    pin, pristine = fetched
    copy = corpus.make_arm_copy(pristine, tmp_path / "a", pin)
    git("worktree", "add", "-q", "--detach", str(tmp_path / "wt"), "HEAD", cwd=copy)
    with pytest.raises(SandbenchError) as info:
        corpus.verify_arm_copy(tmp_path / "wt", pristine, pin)
    assert "git dir: expected a .git directory of its own, found a file" in info.value.why


def test_an_existing_arm_destination_is_refused(fetched, tmp_path: Path) -> None:
    pin, pristine = fetched
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "left-over").write_text("x")
    with pytest.raises(SandbenchError, match="already exists"):
        corpus.make_arm_copy(pristine, tmp_path / "a", pin)
    os.symlink(tmp_path / "elsewhere", tmp_path / "b")
    with pytest.raises(SandbenchError, match="already exists"):
        corpus.make_arm_copy(pristine, tmp_path / "b", pin)


def test_an_empty_mount_point_takes_the_copy_and_is_emptied_when_refused(
        fetched, tmp_path: Path) -> None:
    """The arm's own file system is mounted before the copy: the copy goes into it, and a
    copy that fails verification leaves the mount point empty, not removed."""
    pin, pristine = fetched
    point = tmp_path / "corpus"
    point.mkdir()
    assert corpus.make_arm_copy(pristine, point, pin) == point
    corpus.verify_arm_copy(point, pristine, pin)
    refused = tmp_path / "refused"
    refused.mkdir()
    with pytest.raises(SandbenchError, match="refused"):
        corpus.make_arm_copy(pristine, refused, dataclasses.replace(pin, sha="0" * 40))
    assert refused.is_dir() and list(refused.iterdir()) == []


def test_changes_list_what_an_arm_wrote_inside_and_outside_git(fetched, tmp_path: Path) -> None:
    pin, pristine = fetched
    copy = corpus.make_arm_copy(pristine, tmp_path / "a", pin)
    before = corpus.snapshot(copy)
    (copy / ".devscout").mkdir()
    (copy / ".devscout" / "graph.json").write_bytes(b"{}" * 50)
    (copy / ".git" / "crg.db").write_bytes(b"x" * 7)
    (copy / "src" / "Order.cs").write_text("class Order { }\n")
    (copy / "README.md").unlink()
    os.symlink("/etc", copy / "etc-link")
    found = {c.path: c for c in corpus.changes(before, corpus.snapshot(copy))}
    assert found == {
        ".devscout": corpus.Change(".devscout", "added", "dir", 0, 0, False),
        ".devscout/graph.json": corpus.Change(".devscout/graph.json", "added", "file", 0, 100,
                                              False),
        ".git/crg.db": corpus.Change(".git/crg.db", "added", "file", 0, 7, True),
        "src/Order.cs": corpus.Change("src/Order.cs", "modified", "file", 15, 16, False),
        "README.md": corpus.Change("README.md", "removed", "file", 7, 0, False),
        "etc-link": corpus.Change("etc-link", "added", "symlink", 0, 4, False),
    }


def test_ls_reports_each_state(fetched, upstream: Upstream, cfg: Settings) -> None:
    pin, _ = fetched
    pins = {"sample": pin, "other": make_pin("2" * 40, id="other"),
            "later": make_pin(None, id="later", status="proposed")}
    states = {s.pin.id: s for s in corpus.list_corpora(pins, cfg)}
    assert {k: s.state for k, s in states.items()} == {"sample": "fetched", "other": "absent",
                                                       "later": "absent"}
    assert states["sample"].info is not None and states["sample"].info.tracked_files == 6


def test_a_tree_read_back_from_its_archive_has_the_snapshot_of_the_tree(tmp_path: Path) -> None:
    """A copy on another host is described from the tar its engine makes: every kind,
    mode, size and digest as `snapshot` reads them here, hard links and links included,
    however the stream is cut; and the archive sent there is owned by the run's user."""
    import io
    import tarfile

    from orchestrator.corpus import archive_tree, snapshot, snapshot_of_archive
    root = tmp_path / "tree"
    (root / "src" / "deep").mkdir(parents=True)
    (root / "src" / "a.rs").write_bytes(b"fn main() {}\n")
    (root / "src" / "deep" / "big.bin").write_bytes(os.urandom(300_000))
    (root / "tool").write_text("#!/bin/sh\n")
    (root / "tool").chmod(0o750)
    os.link(root / "src" / "a.rs", root / "again.rs")
    os.symlink("src/a.rs", root / "link")
    os.mkfifo(root / "pipe")
    archive = io.BytesIO()
    archive_tree(root, archive, "4242:4343")
    data = archive.getvalue()
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        assert {(m.uid, m.gid) for m in tar.getmembers()} == {(4242, 4343)}
    for cut in (1, 4096, 1 << 20):
        read = snapshot_of_archive(data[i:i + cut] for i in range(0, len(data), cut))
        assert read == snapshot(root)
    assert read.entries["pipe"].kind == "other" and read.entries["again.rs"].kind == "file"


def test_verifying_a_copy_runs_no_git_there(fetched, tmp_path: Path) -> None:
    """An arm owns its copy's .git: verification reads files only, so a config or hook it
    planted never runs, and the planted files are named."""
    pin, pristine = fetched
    copy = corpus.make_arm_copy(pristine, tmp_path / "a", pin)
    marker = tmp_path / "marker"
    with open(copy / ".git" / "config", "a") as fh:
        fh.write(f"[core]\n\tfsmonitor = touch {marker}-fsmonitor; echo\n"
                 f"\tpager = touch {marker}-pager\n\thooksPath = {copy / '.git' / 'h'}\n")
    (copy / ".git" / "h").mkdir()
    for hook in ("post-index-change", "reference-transaction"):
        (copy / ".git" / "h" / hook).write_text(f"#!/bin/sh\ntouch {marker}-{hook}\n")
        (copy / ".git" / "h" / hook).chmod(0o755)
    with pytest.raises(SandbenchError, match="refused") as info:
        corpus.verify_arm_copy(copy, pristine, pin)
    assert ".git/config" in info.value.why and ".git/h" in info.value.why
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("marker")) == []


def test_an_archive_stops_at_a_member_past_the_read_budget() -> None:
    """A remote engine's tar spells out a sparse file's holes: a 1 TiB member is listed by
    its size and the stream is not read further (here it does not even hold the bytes)."""
    import io
    import tarfile

    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as archive:
        small = tarfile.TarInfo("./small")
        small.size = 2
        archive.addfile(small, io.BytesIO(b"ok"))
    huge = tarfile.TarInfo("./huge")
    huge.size = 1 << 40
    header = huge.tobuf(tarfile.PAX_FORMAT)
    data = out.getvalue().rstrip(b"\0")
    data = data + b"\0" * (-len(data) % 512) + header
    found = corpus.snapshot_of_archive([data])
    assert found.entries["small"].digest == hashlib.sha256(b"ok").hexdigest()
    assert found.entries["huge"].size == 1 << 40 and found.entries["huge"].digest == "unread"
    assert [c.guard for c in found.cuts] == ["read-bytes"]


def test_an_archive_links_a_name_to_a_file_past_the_depth_cut() -> None:
    """An arm can hard-link a shallow name to a file deeper than the walk's depth bound: the
    deep file is cut, and the link is listed as a file not read, never a failed listing."""
    import io
    import tarfile

    from orchestrator.untrusted.limits import WALK_MAX_DEPTH

    deep = "./" + "/".join(["d"] * WALK_MAX_DEPTH) + "/f"
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as archive:
        member = tarfile.TarInfo(deep)
        member.size = 2
        archive.addfile(member, io.BytesIO(b"ok"))
        link = tarfile.TarInfo("./shallow")
        link.type, link.linkname = tarfile.LNKTYPE, deep
        archive.addfile(link)
    found = corpus.snapshot_of_archive([out.getvalue()])
    assert found.entries["shallow"].kind == "file"
    assert found.entries["shallow"].digest == "unread"
    assert [c.guard for c in found.cuts] == ["depth"]


def test_an_archive_counts_a_file_with_several_names_once_and_stops_at_the_deadline() -> None:
    """A hard link in a tar reuses its file's digest; every name but the first in byte order
    is a repeat (as `snapshot` counts them); past the arm's deadline the listing stops."""
    import io
    import tarfile

    from orchestrator.untrusted import walk

    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as archive:
        member = tarfile.TarInfo("./m")
        member.size = 2
        archive.addfile(member, io.BytesIO(b"ok"))
        for name in ("./z", "./a"):
            link = tarfile.TarInfo(name)
            link.type, link.linkname = tarfile.LNKTYPE, "./m"
            archive.addfile(link)
    found = corpus.snapshot_of_archive([out.getvalue()])
    assert {e.digest for e in found.entries.values()} == {hashlib.sha256(b"ok").hexdigest()}
    assert found.repeats == {"m", "z"}
    late = corpus.snapshot_of_archive([out.getvalue()], walk.Budget(walk.Bounds(seconds=0)))
    assert late.entries == {} and [(c.guard, c.at) for c in late.cuts] == [("time", "m")]

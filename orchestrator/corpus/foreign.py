"""git on a repository sandbench did not make: a mirror the user fetched (`corpus add --from`,
`truth rule fix`, `truth rule impact --mirror`, `suite add-tasks --mirror`) or a checkout
given as PRISTINE. Its config, hooks, attributes, refs and `.git` file are a third party's, and
git run inside it may run a program (a promisor remote's `uploadpack` on a lazy fetch,
`core.sshCommand`, fsmonitor, filters, textconv, a pager, a credential helper, an include of
any of these) or fetch: closing one key is no fix. So git never runs there. It runs in a bare
repository made here, whose config is sandbench's, with the foreign object directory (a real
directory inside it, holding regular files only, borrowing from nowhere) as its one alternate:
objects are read as data, and nothing else of the repository is read by git. That repository
has no remote and allows no transport, so a missing object (a partial or shallow mirror) is
one InputError naming the repository and the commit, never a fetch. HEAD is read as a file.

Every other module that runs git works on repositories sandbench made (the pristine store, its
own staging and scratch repositories; tests/unit/test_foreign_git.py lists them and why).
`corpus fetch --from` is one: its git runs in its own staging repository, and the mirror only
serves it through git-upload-pack, which runs no program a repository's config names and never
lazy-fetches (git 2.39.4 and later)."""

from __future__ import annotations

import contextlib
import os
import re
import stat
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from orchestrator.corpus.git import GIT_DIR, Git, clean_git, tail
from orchestrator.errors import InputError, SandbenchError
from orchestrator.untrusted import paths
from orchestrator.untrusted.errors import HostileInput

# The scratch repository's whole config, written here: a bare repository, no remote, no
# extension (so no promisor to fetch from).
SCRATCH_CONFIG = "[core]\n\trepositoryformatversion = 0\n\tbare = true\n"
# After (so over) the settings every clean git call has: no transport at all, so no fetch,
# lazy or asked for; and no lazy fetch in any case (git 2.39.4 and later).
_NO_TRANSPORT = ("-c", "protocol.allow=never", "-c", "protocol.file.allow=never")
_NO_LAZY_FETCH = {"GIT_NO_LAZY_FETCH": "1"}
# Bytes of HEAD or of one loose ref: a sha, or `ref: NAME` with a name of at most a few hundred
# bytes in any real repository.
REF_FILE_BYTES = 8192
# Bytes of a packed-refs file and of a config read as data: 64 MiB holds about a million refs
# at 60 bytes a line (the largest public repositories have a few hundred thousand); a clone's
# config is under 1 kB.
PACKED_REFS_BYTES = 64 << 20
CONFIG_BYTES = 1 << 20
# Levels of `ref: NAME` followed from HEAD, as git itself follows them.
SYMREF_DEPTH = 5
HEX = re.compile(r"[0-9a-f]{4,40}")
SHA = re.compile(r"[0-9a-f]{40}")
REFNAME = re.compile(r"refs/(?:[A-Za-z0-9_+@-][A-Za-z0-9_.+@-]*/)*[A-Za-z0-9_+@-][A-Za-z0-9_.+@-]*")
# How git says it could not read an object, and which.
_MISSING = re.compile(r"(?:unable to read|bad object|could not read|missing (?:blob|tree|"
                      r"commit)|invalid object|bad tree object|is not a valid)\D{0,40}"
                      r"\b([0-9a-f]{40})\b", re.I)
FULL_MIRROR = ("give a full mirror: `git clone --mirror URL` with no --filter and no --depth "
               "(sandbench never fetches into a mirror, nor through it)")


@dataclass(frozen=True)
class Foreign:
    """A repository sandbench did not make, read through a scratch repository of its own."""

    path: Path          # as the user gave it: every message names it
    what: str           # the argument that gave it (--from, MIRROR, PRISTINE)
    git_dir: Path       # its git directory (the repository itself when bare)
    scratch: Path       # the bare repository git runs in
    git: Git

    def read(self, *args: str, commit: str) -> bytes:
        """git's output of `args`, run on the objects only; a failure names `commit`."""
        proc = self._run(*args)
        if proc.returncode != 0:
            raise self.unreadable(args[0], commit, proc.stderr)
        return proc.stdout

    def commit(self, rev: str) -> str | None:
        """The full sha of the commit `rev` (hex digits) names among the objects, or None."""
        if not HEX.fullmatch(rev):
            return None
        found = self._run("rev-parse", "--verify", "-q", f"{rev}^{{commit}}")
        return found.stdout.decode().strip() if found.returncode == 0 else None

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        proc = self._run("merge-base", "--is-ancestor", ancestor, descendant)
        if proc.returncode not in (0, 1):
            raise self.unreadable("merge-base", descendant, proc.stderr)
        return proc.returncode == 0

    def diff_to_parent(self, rev: str, *options: str) -> bytes:
        """`git diff OPTIONS REV^ REV`: the commit against its first parent. On a failure, why:
        no such commit, a root commit, or an object the repository lacks."""
        proc = self._run("diff", *options, f"{rev}^", rev)
        if proc.returncode == 0:
            return proc.stdout
        sha = self.commit(rev)
        if sha is None:
            raise InputError(f"{self.what} {self.path} holds no commit {rev}",
                             fix="name a commit the repository holds (git log)",
                             path=str(self.path), commit=rev)
        body = self.read("cat-file", "commit", sha, commit=sha).split(b"\n\n", 1)[0]
        parents = [line[7:].decode() for line in body.split(b"\n") if line.startswith(b"parent ")]
        if not parents:
            raise InputError(f"commit {sha} of {self.what} {self.path} has no parent to diff it "
                             "against (a root commit)", fix="name the commit that fixed the "
                             "issue, not the repository's first", path=str(self.path), commit=sha)
        if self.commit(parents[0]) is None:
            raise self.missing(parents[0], sha, "its parent commit is not there")
        raise self.unreadable("diff", sha, proc.stderr)

    def head(self) -> str:
        """The commit HEAD names, read from the files (HEAD, a loose ref, packed-refs) as data,
        following `ref: NAME` as git does."""
        text = self._file("HEAD", REF_FILE_BYTES)
        for _ in range(SYMREF_DEPTH):
            if text is None or SHA.fullmatch(text) or not text.startswith("ref: "):
                break
            name = text.removeprefix("ref: ")
            if not REFNAME.fullmatch(name) or ".." in name or name.endswith(".lock"):
                break
            text = self._file(name, REF_FILE_BYTES) or self._packed(name)
        if text is None or not SHA.fullmatch(text):
            raise InputError(f"{self.what} {self.path}: HEAD does not name a commit",
                             why=f"found {text!r}", fix="give a clone or a checkout whose HEAD "
                             "is a commit (detached, or a branch with commits)",
                             path=str(self.path))
        return text

    def config_value(self, key: str) -> str | None:
        """The value of `key` in the repository's own config file, read as data: no include,
        no other file; None when absent."""
        text = self._file("config", CONFIG_BYTES, strip=False)
        if text is None:
            return None
        found = self._run("config", "--file", "-", "--no-includes", "--get", key,
                          stdin=text.encode("utf-8", "surrogateescape"))
        return found.stdout.decode("utf-8", "replace").strip() if found.returncode == 0 \
            else None

    def unreadable(self, verb: str, commit: str, stderr: bytes) -> SandbenchError:
        """A failed read: the mirror lacks an object (one InputError saying so), or git's
        own failure."""
        missing = _MISSING.search(stderr.decode("utf-8", "replace"))
        if missing:
            return self.missing(missing.group(1), commit, tail(stderr))
        return SandbenchError(f"git {verb} could not read commit {commit} from the objects "
                              f"of {self.what} {self.path}", why=tail(stderr), fix=FULL_MIRROR,
                              path=str(self.path), commit=commit)

    def missing(self, obj: str, commit: str, why: str) -> InputError:
        """The one error for an object the repository lacks: sandbench never fetches it."""
        return InputError(f"{self.what} {self.path} lacks object {obj}, which commit {commit} "
                          "needs: it is a partial or shallow copy", why=why, fix=FULL_MIRROR,
                          path=str(self.path), commit=commit, missing=obj)

    def _run(self, *args: str, stdin: bytes | None = None
             ) -> subprocess.CompletedProcess[bytes]:
        return self.git.run(*_NO_TRANSPORT, *args, cwd=self.scratch, stdin=stdin, check=False,
                            env={"GIT_DIR": str(self.scratch), **_NO_LAZY_FETCH})

    def _file(self, rel: str, limit: int, strip: bool = True) -> str | None:
        """A file of the git dir as text, opened without following a link; None if absent."""
        try:
            data = paths.read_bytes(self.git_dir, rel, limit)
        except HostileInput as err:
            if isinstance(err.__cause__, FileNotFoundError):
                return None
            raise self._refused(rel, err.message) from err
        text = data.decode("utf-8", "surrogateescape")
        return text.strip() if strip else text

    def _packed(self, name: str) -> str | None:
        """The sha packed-refs gives `name`, or None."""
        text = self._file("packed-refs", PACKED_REFS_BYTES, strip=False) or ""
        for line in text.splitlines():
            sha, _, ref = line.partition(" ")
            if ref == name and SHA.fullmatch(sha):
                return sha
        return None

    def _refused(self, rel: str, why: str) -> InputError:
        return InputError(f"{self.what} {self.path}: {rel} is not a plain file of its git "
                          "directory", why=why, fix=FULL_MIRROR, path=str(self.path))


@contextlib.contextmanager
def opened(path: Path, what: str) -> Iterator[Foreign]:
    """`path` (a bare mirror, or a clone with its own .git directory) read through a scratch
    repository of sandbench's, removed after."""
    git_dir = _git_dir(path, what)
    objects = git_dir / "objects"
    _check_objects(objects, path, what)
    with clean_git() as git:
        scratch = Path(git.env["HOME"]) / "scratch.git"  # removed with git's scratch HOME
        for folder in ("objects/info", "refs"):
            (scratch / folder).mkdir(parents=True)
        (scratch / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
        (scratch / "config").write_text(SCRATCH_CONFIG, encoding="utf-8")
        (scratch / "objects" / "info" / "alternates").write_text(f"{objects.resolve()}\n",
                                                                 encoding="utf-8")
        yield Foreign(path, what, git_dir, scratch, git)


@contextlib.contextmanager
def opened_if(path: Path | None, what: str) -> Iterator[Foreign | None]:
    """`opened(path, what)`, or None when no path was given."""
    if path is None:
        yield None
        return
    with opened(path, what) as repo:
        yield repo


def _git_dir(path: Path, what: str) -> Path:
    """The git directory of `path`: its own `.git` directory, or itself when bare. A `.git`
    that is a file or a link (a worktree, a submodule: its git dir lies elsewhere) and a git
    dir sharing another's (`commondir`) are refused."""
    def refuse(found: str) -> InputError:
        return InputError.bad_value("the command line", what, "a bare mirror or a clone with a "
                                    "git directory of its own", f"{path}: {found}",
                                    fix="give the repository itself: a bare mirror (`git clone "
                                    "--mirror URL`) or a clone with its own .git directory")

    if not path.is_dir():
        raise refuse("not a directory")
    dot_git = path / GIT_DIR
    if os.path.lexists(dot_git):
        if not stat.S_ISDIR(dot_git.lstat().st_mode):
            raise refuse(".git is a file or a link, so its git directory lies elsewhere")
        git_dir = dot_git
    else:
        git_dir = path
    if not os.path.lexists(git_dir / "objects") or not os.path.lexists(git_dir / "HEAD"):
        raise refuse("no git repository (no objects directory and HEAD)")
    if os.path.lexists(git_dir / "commondir"):
        raise refuse("a worktree sharing another repository's git directory (commondir)")
    if "\n" in str(git_dir.resolve()):
        raise refuse("a line break in its path")
    return git_dir


def _check_objects(objects: Path, path: Path, what: str) -> None:
    """The object directory is a real directory of regular files and directories (no link,
    FIFO or device git would open) that borrows from no other (no alternates)."""
    def refuse(rel: str, found: str) -> InputError:
        return InputError(f"{what} {path}: {rel} is {found}; sandbench reads a mirror's objects "
                          "only from regular files inside it", fix=FULL_MIRROR,
                          path=str(path), file=rel)

    if not stat.S_ISDIR(objects.lstat().st_mode):
        raise refuse("objects", "not a directory (a link?)")
    if os.path.lexists(objects / "info" / "alternates"):
        raise refuse("objects/info/alternates", "present: it borrows objects from elsewhere")
    pending = [objects]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(Path(entry.path))
                elif not entry.is_file(follow_symlinks=False):
                    rel = Path(entry.path).relative_to(objects.parent).as_posix()
                    raise refuse(rel, "not a regular file (a link, FIFO, socket or device)")

"""Corpora: pinned in corpus.lock, fetched once into a pristine store, copied privately per arm.

Every published figure names a corpus and the commit it was measured on, so a corpus is a
verified input. The lock pins it; `fetch` stores exactly the pinned commit, detached, with no
remote and no object that the pin cannot reach (so no arm can read the upstream answer);
`make_arm_copy` gives each arm an independent copy (its own object store, since some tools
write into the git directory); `tree_digest` proves the pristine copy unchanged across a run;
`snapshot`/`changes` list what an arm wrote into its copy.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
import tomllib
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from orchestrator import __version__, demo_corpus, log
from orchestrator.errors import InputError, SandbenchError
from orchestrator.fsutil import atomic_write_json, duplicate_toml_key
from orchestrator.settings import Settings
from orchestrator.values import load_schema, schema_problem

LOCK_NAME = "corpus.lock"
SCHEMA_FILE = "corpus-lock.schema.json"
FIELDS = tuple(load_schema(SCHEMA_FILE)["$defs"]["pin"]["properties"])
BUILTIN_SCHEME = "builtin:"
BUILTINS = ("demo",)
GIT_DIR = ".git"

_ID = re.compile(r"[a-z0-9][a-z0-9-]*")
_HEADER = re.compile(r"\s*\[\s*(?:\"([^\"]+)\"|([A-Za-z0-9_-]+))\s*\]\s*(?:#.*)?")

# By extension; everything else is counted under its extension only.
LANGUAGES = {
    ".cs": "C#", ".csx": "C#", ".fs": "F#", ".vb": "Visual Basic",
    ".ts": "TypeScript", ".tsx": "TypeScript", ".mts": "TypeScript", ".cts": "TypeScript",
    ".js": "JavaScript", ".jsx": "JavaScript", ".mjs": "JavaScript", ".cjs": "JavaScript",
    ".rs": "Rust", ".py": "Python", ".go": "Go", ".java": "Java", ".kt": "Kotlin",
    ".c": "C", ".h": "C", ".cc": "C++", ".cpp": "C++", ".hpp": "C++",
}

# Passed to git only for a network fetch: the host's proxy and CA bundle, nothing else.
_NETWORK_ENV = ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY",
                "NO_PROXY", "ALL_PROXY", "all_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR",
                "GIT_SSL_CAINFO", "GIT_SSL_CAPATH")

# Settings on every git call: no background gc or maintenance may touch a verified copy, no
# hooks run, no line-ending or template surprises, and local sources are always allowed.
_GIT_CONFIG = ("gc.auto=0", "maintenance.auto=false", "core.autocrlf=false",
               "core.hooksPath=/dev/null", "core.logAllRefUpdates=false", "core.fsmonitor=false",
               "protocol.file.allow=always", "uploadpack.allowAnySHA1InWant=true",
               "advice.detachedHead=false", "init.defaultBranch=main")

_log = log.get("corpus")


# --- corpus.lock -----------------------------------------------------------------------------

@dataclass(frozen=True)
class CorpusPin:
    """One corpus as corpus.lock pins it. A proposed corpus has no sha and cannot be fetched."""

    id: str
    repo: str
    url: str
    sha: str | None
    license: str
    kind: str
    status: str
    note: str

    @property
    def builtin(self) -> str | None:
        """The embedded corpus this pin names (`builtin:demo`), or None for a remote one."""
        return self.url.removeprefix(BUILTIN_SCHEME) if self.url.startswith(BUILTIN_SCHEME) \
            else None


def lock_path(settings: Settings) -> Path:
    return settings.project_root / LOCK_NAME


def load_lock(path: Path) -> dict[str, CorpusPin]:
    """Parse and check corpus.lock; any problem is one InputError naming file, table and key."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise InputError(f"{path}: cannot read the corpus lock", why=err.strerror,
                         fix="run from the checkout, or pass --lock", file=str(path)) from err
    except UnicodeDecodeError as err:
        raise InputError(f"{path}: does not parse: not UTF-8 text ({err.reason} at byte "
                         f"{err.start})", file=str(path)) from err
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise _duplicate_table(path, text) or duplicate_toml_key(path, text, err) or InputError(
            f"{path}: not valid TOML: {err}", fix="fix the syntax at the position named",
            file=str(path)) from err
    if problem := schema_problem(data, SCHEMA_FILE):
        table, key = (None, *problem.where)[-2:]
        raise InputError.bad_value(_where(path, text, table, str(key)), problem.key,
                                   problem.expected, problem.found)
    return {table: _pin(path, text, table, body) for table, body in data.items()
            if table != "version"}


def _pin(path: Path, text: str, table: str, body: dict[str, Any]) -> CorpusPin:
    """One table, its fields already checked against the schema: what the schema cannot say."""
    def bad(key: str, expected: str, found: object) -> InputError:
        return InputError.bad_value(_where(path, text, table, key), f"{table}.{key}",
                                    expected, found)

    if not _ID.fullmatch(table):
        raise bad("id", "a table name of lower-case letters, digits and dashes", table)
    if body["id"] != table:
        raise bad("id", f"the table name {table!r}", body["id"])
    url = body["url"]
    if url.startswith(BUILTIN_SCHEME) and url.removeprefix(BUILTIN_SCHEME) not in BUILTINS:
        raise bad("url", "one of " + ", ".join(BUILTIN_SCHEME + b for b in BUILTINS), url)
    return CorpusPin(id=table, repo=body["repo"], url=url, sha=body.get("sha"),
                     license=body["license"], kind=body["kind"], status=body["status"],
                     note=body["note"])


def _where(path: Path, text: str, table: str | None, key: str) -> str:
    """`file:line` of `key` in `[table]` (top level if None), else of the table's header."""
    current: str | None = None
    header_line: int | None = None
    key_line = re.compile(rf"\s*(?:{re.escape(key)}|\"{re.escape(key)}\")\s*=")
    for line_no, line in enumerate(text.splitlines(), start=1):
        if header := _HEADER.fullmatch(line):
            current = header.group(1) or header.group(2)
            if header_line is None and current == (key if table is None else table):
                header_line = line_no
        elif current == table and key_line.match(line):
            return f"{path}:{line_no}"
    return f"{path}:{header_line}" if header_line else str(path)


def _duplicate_table(path: Path, text: str) -> InputError | None:
    """A corpus declared twice is a TOML error; name it as the duplicate id it is."""
    seen: dict[str, int] = {}
    for line_no, line in enumerate(text.splitlines(), start=1):
        if header := _HEADER.fullmatch(line):
            name = header.group(1) or header.group(2)
            if name in seen:
                return InputError(
                    f"{path}:{line_no}: {name}.id: duplicate id {name!r} "
                    f"(first declared at line {seen[name]})",
                    fix="give each corpus one table", file=str(path), key=f"{name}.id",
                    expected="a unique id", found=name, line=line_no)
            seen[name] = line_no
    return None


def pin_for(pins: Mapping[str, CorpusPin], corpus_id: str, lock: Path) -> CorpusPin:
    """The pin for `corpus_id`, or an InputError listing the known ids."""
    if corpus_id not in pins:
        raise InputError(f"no corpus {corpus_id!r} in {lock}",
                         fix="known corpora: " + (", ".join(sorted(pins)) or "none"),
                         file=str(lock), key=corpus_id)
    return pins[corpus_id]


# --- git, in a clean environment -------------------------------------------------------------

@dataclass(frozen=True)
class _Git:
    """git with no user, global or system config, a scratch HOME and a fixed identity."""

    env: Mapping[str, str]

    def run(self, *args: str, cwd: Path | None = None, stdin: bytes | None = None,
            check: bool = True) -> subprocess.CompletedProcess[bytes]:
        argv = ["git"]
        for setting in _GIT_CONFIG:
            argv += ["-c", setting]
        argv += args
        try:
            proc = subprocess.run(argv, cwd=cwd, env=dict(self.env), input=stdin,
                                  capture_output=True, check=False)
        except FileNotFoundError as err:
            raise SandbenchError("git is not installed or not on PATH",
                                 fix="install git (2.29 or later)") from err
        if check and proc.returncode != 0:
            raise SandbenchError(f"git {args[0]} failed (exit {proc.returncode})",
                                 why=_tail(proc.stderr), argv=argv, cwd=str(cwd),
                                 returncode=proc.returncode)
        return proc

    def out(self, *args: str, cwd: Path) -> str:
        return self.run(*args, cwd=cwd).stdout.decode("utf-8", "surrogateescape").strip()


@contextlib.contextmanager
def _git(network: bool = False) -> Iterator[_Git]:
    with tempfile.TemporaryDirectory(prefix="sandbench-git-home-") as home:
        env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": home,
               "XDG_CONFIG_HOME": str(Path(home) / ".config"), "GIT_CONFIG_NOSYSTEM": "1",
               "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0",
               "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", "TZ": "UTC",
               "GIT_AUTHOR_NAME": "sandbench", "GIT_AUTHOR_EMAIL": "sandbench@invalid",
               "GIT_COMMITTER_NAME": "sandbench", "GIT_COMMITTER_EMAIL": "sandbench@invalid"}
        if network:
            env.update({key: os.environ[key] for key in _NETWORK_ENV if key in os.environ})
        yield _Git(env)


def _tail(stderr: bytes, lines: int = 6) -> str:
    text = stderr.decode("utf-8", "replace").strip().splitlines()
    return " | ".join(text[-lines:]) or "(no output)"


# --- what a copy must be ----------------------------------------------------------------------

@dataclass(frozen=True)
class Difference:
    """One way a copy is not what it must be: the check, what was expected, what was found."""

    check: str
    expected: str
    found: str

    def __str__(self) -> str:
        return f"{self.check}: expected {self.expected}, found {self.found}"


def _differences(git: _Git, repo: Path, sha: str) -> list[Difference]:
    """Every way `repo` differs from a private, clean, detached checkout of `sha`."""
    if not repo.is_dir():
        return [Difference("directory", f"a checkout at {repo}", "nothing there")]
    gitdir = repo / GIT_DIR
    if gitdir.is_symlink() or not gitdir.is_dir():
        what = "a symlink" if gitdir.is_symlink() else "a file (a worktree of another clone)" \
            if gitdir.exists() else "nothing"
        return [Difference("git dir", "a .git directory of its own", what)]
    found: list[Difference] = []
    if (gitdir / "commondir").exists():
        found.append(Difference("git dir", "no commondir", "a worktree of another repository"))
    alternates = gitdir / "objects" / "info" / "alternates"
    if alternates.exists():
        found.append(Difference("object store", "its own objects, no alternates",
                                "alternates: " + alternates.read_text(errors="replace").strip()))
    shared, links = [], []
    for dirpath, dirnames, filenames in os.walk(gitdir):
        for name in dirnames + filenames:
            full = Path(dirpath, name)
            st = full.lstat()
            if stat.S_ISLNK(st.st_mode):
                links.append(full.relative_to(repo).as_posix())
            elif stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                shared.append(full.relative_to(repo).as_posix())
    if shared:
        found.append(Difference("object store", "no file hard-linked with another copy",
                                f"{len(shared)} hard-linked, e.g. {_some(shared)}"))
    if links:
        found.append(Difference("git dir", "no symlinks", _some(links)))
    head = git.run("rev-parse", "--verify", "-q", "HEAD^{commit}", cwd=repo, check=False)
    head_sha = head.stdout.decode().strip() if head.returncode == 0 else "no commit"
    if head_sha != sha:
        found.append(Difference("HEAD", sha, head_sha))
    branch = git.run("symbolic-ref", "-q", "HEAD", cwd=repo, check=False)
    if branch.returncode == 0:
        found.append(Difference("HEAD", "detached", "on " + branch.stdout.decode().strip()))
    if remotes := git.out("remote", cwd=repo).split():
        found.append(Difference("remotes", "none", ", ".join(remotes)))
    if refs := git.out("for-each-ref", "--format=%(refname)", cwd=repo).split():
        found.append(Difference("refs", "none besides the detached HEAD", _some(refs)))
    status = git.run("status", "--porcelain=v1", "-z", "--untracked-files=all",
                     "--ignored=matching", "--no-renames", cwd=repo, check=False)
    if status.returncode != 0:
        found.append(Difference("worktree", "clean", "unreadable: " + _tail(status.stderr)))
    elif dirty := [e.decode("utf-8", "surrogateescape") for e in status.stdout.split(b"\0") if e]:
        found.append(Difference("worktree", "clean", f"{len(dirty)} change(s): {_some(dirty)}"))
    return found


def _some(items: list[str], limit: int = 5) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" (+{len(items) - limit} more)" if len(items) > limit else "")


def _refuse(what: str, differences: list[Difference], fix: str, **data: Any) -> SandbenchError:
    return SandbenchError(f"{what}: {len(differences)} difference(s)",
                          why="; ".join(map(str, differences)), fix=fix,
                          differences=differences, **data)


# --- tree digest, snapshots and what changed -------------------------------------------------

@dataclass(frozen=True)
class Entry:
    """One path under a root, never followed if it is a symlink."""

    kind: Literal["file", "dir", "symlink", "other"]
    mode: int
    size: int
    digest: str


@dataclass(frozen=True)
class Snapshot:
    """Every path under a root (the git dir included), keyed by posix relative path."""

    entries: Mapping[str, Entry]

    def digest(self) -> str:
        """sha256 over (kind, path, mode, size, content digest) of every entry, in byte order."""
        total = hashlib.sha256()
        for path in sorted(self.entries, key=os.fsencode):
            e = self.entries[path]
            total.update(b"%s\0%s\0%o\0%d\0%s\n" % (e.kind.encode(), os.fsencode(path), e.mode,
                                                    e.size, e.digest.encode()))
        return total.hexdigest()

    def bytes_in(self, inside_git: bool) -> int:
        return sum(e.size for path, e in self.entries.items()
                   if e.kind == "file" and _in_git(path) == inside_git)


def _nofollow(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK)


def snapshot(root: Path) -> Snapshot:
    """Walk `root` without following any symlink: files by content, links by their target."""
    entries: dict[str, Entry] = {}
    pending = [(str(root), "")]
    while pending:
        directory, prefix = pending.pop()
        with os.scandir(directory) as listing:
            for item in listing:
                rel = prefix + item.name
                st = item.stat(follow_symlinks=False)
                mode = stat.S_IMODE(st.st_mode)
                if stat.S_ISLNK(st.st_mode):
                    target = os.fsencode(os.readlink(item.path))
                    entries[rel] = Entry("symlink", mode, len(target),
                                         hashlib.sha256(target).hexdigest())
                elif stat.S_ISDIR(st.st_mode):
                    entries[rel] = Entry("dir", mode, 0, "")
                    pending.append((item.path, rel + "/"))
                elif stat.S_ISREG(st.st_mode):
                    entries[rel] = _file_entry(item.path, rel, mode)
                else:
                    entries[rel] = Entry("other", mode, 0, stat.filemode(st.st_mode))
    return Snapshot(entries)


def _file_entry(path: str, rel: str, mode: int) -> Entry:
    try:
        with open(path, "rb", opener=_nofollow) as fh:
            size = os.fstat(fh.fileno()).st_size
            digest = hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError as err:
        raise SandbenchError(f"cannot read {rel} to digest it", why=err.strerror,
                             fix="make every file of the copy readable by sandbench",
                             path=path) from err
    return Entry("file", mode, size, digest)


def tree_digest(path: Path) -> str:
    """One sha256 over the worktree and the git dir: paths, modes and bytes; links as links."""
    return snapshot(path).digest()


@dataclass(frozen=True)
class Change:
    """A path an arm added, modified or removed in its copy, with its size before and after."""

    path: str
    status: Literal["added", "modified", "removed"]
    kind: str
    size_before: int
    size_after: int
    in_git: bool


def _in_git(path: str) -> bool:
    return path == GIT_DIR or path.startswith(GIT_DIR + "/")


def changes(before: Snapshot, after: Snapshot) -> list[Change]:
    """What differs between two snapshots of one copy, in path order."""
    out: list[Change] = []
    for path in sorted(before.entries.keys() | after.entries.keys(), key=os.fsencode):
        old, new = before.entries.get(path), after.entries.get(path)
        if old == new:
            continue
        status: Literal["added", "modified", "removed"] = \
            "added" if old is None else "removed" if new is None else "modified"
        kind = (new or old).kind  # type: ignore[union-attr]
        out.append(Change(path, status, kind, old.size if old else 0, new.size if new else 0,
                          _in_git(path)))
    return out


# --- the pristine store -----------------------------------------------------------------------

@dataclass(frozen=True)
class PristineInfo:
    """What fetch recorded about a pristine copy, written beside it as `<id>.json`."""

    id: str
    repo: str
    sha: str
    license: str
    source: str
    shallow: bool
    tracked_files: int
    languages: dict[str, int]
    extensions: dict[str, int]
    worktree_bytes: int
    git_bytes: int
    tree_digest: str
    fetched_at: str
    sandbench_version: str = __version__

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any, file: Path) -> PristineInfo:
        try:
            return cls(**data)
        except TypeError as err:
            raise SandbenchError(f"{file}: not a pristine-copy record", why=str(err),
                                 fix="refetch the corpus with --force", file=str(file)) from err


def corpus_dir(settings: Settings, corpus_id: str) -> Path:
    return settings.bench_root / "corpora" / corpus_id


def info_path(settings: Settings, corpus_id: str) -> Path:
    return settings.bench_root / "corpora" / f"{corpus_id}.json"


def read_info(settings: Settings, corpus_id: str) -> PristineInfo | None:
    """The recorded metadata of a fetched corpus, or None if there is none."""
    path = info_path(settings, corpus_id)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise SandbenchError(f"{path}: not valid JSON: {err}",
                             fix="refetch the corpus with --force", file=str(path)) from err
    return PristineInfo.from_json(data, path)


def fetch(pin: CorpusPin, settings: Settings, source: Path | None = None, force: bool = False,
          full_history: bool = False) -> PristineInfo:
    """Store the pinned commit as the pristine copy, verified, and record what it holds.

    From `pin.url` (the only network use), the embedded corpus for `builtin:` pins, or a local
    clone, bare mirror or bundle given as `source`. Shallow unless `full_history`. Everything
    happens in a temp dir beside the destination, renamed into place only once verified.
    """
    if pin.status != "registered" or pin.sha is None:
        raise InputError(f"corpus {pin.id!r} is {pin.status}, not pinned: it cannot be fetched",
                         fix=f"register it in {LOCK_NAME} with a full commit sha",
                         corpus=pin.id, status=pin.status)
    dest, meta = corpus_dir(settings, pin.id), info_path(settings, pin.id)
    if (dest.exists() or meta.exists()) and not force:
        raise InputError(f"corpus {pin.id!r} is already fetched at {dest}",
                         fix=f"`sandbench corpus verify {pin.id}` checks it; --force refetches, "
                         "verifies and replaces it", corpus=pin.id, path=str(dest))
    if source is not None and not source.exists():
        raise InputError(f"--from {source}: no such file or directory",
                         fix="give a local clone, a bare mirror or a git bundle",
                         path=str(source))
    origin = str(source.resolve()) if source is not None else pin.url
    depth = [] if full_history else ["--depth", "1"]
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{pin.id}.fetch-"))
    try:
        network = source is None and pin.builtin is None
        with _git(network=network) as git:
            staging = work / "staging"
            git.run("init", "-q", "--bare", "--template=", str(staging))
            if source is None and pin.builtin is not None:
                _materialise(git, staging, pin)
            else:
                _acquire(git, staging, origin, pin, depth, local=source is not None)
            repo = work / "repo"
            git.run("init", "-q", "--template=", str(repo))
            git.run("fetch", "-q", "--no-tags", "--no-write-fetch-head", *depth, str(staging),
                    pin.sha, cwd=repo)
            git.run("checkout", "-q", "--detach", pin.sha, cwd=repo)
            if found := _differences(git, repo, pin.sha):
                raise _refuse(f"fetched copy of {pin.id!r} is not a clean checkout of the pin",
                              found, "report this: the fetch produced an unexpected copy",
                              corpus=pin.id)
            info = _describe(git, repo, pin, origin)
        _install(repo, dest, meta, info, settings, pin)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    _log.info("corpus.fetched", corpus=pin.id, sha=pin.sha, source=origin, path=str(dest),
              tracked_files=info.tracked_files, shallow=info.shallow)
    return info


def _materialise(git: _Git, staging: Path, pin: CorpusPin) -> None:
    sha = _materialise_demo(git, staging)
    if sha != pin.sha:
        raise SandbenchError(
            f"the embedded demo corpus is commit {sha}, but {LOCK_NAME} pins {pin.sha}",
            why="the files under orchestrator/demo_corpus/tree/ are not the pinned ones",
            fix="restore them, or re-pin demo (and its test) to the new sha in one commit",
            corpus=pin.id, expected=pin.sha, found=sha)


def _materialise_demo(git: _Git, repo: Path) -> str:
    """Write the demo corpus's one commit into the existing repository `repo`; its sha."""
    git.run("fast-import", "--quiet", cwd=repo, stdin=demo_corpus.fast_import_stream())
    return git.out("rev-parse", "--verify", demo_corpus.BRANCH + "^{commit}", cwd=repo)


def demo_sha() -> str:
    """The sha the embedded demo corpus materialises to on this machine (pinned as `demo`)."""
    with tempfile.TemporaryDirectory(prefix="sandbench-demo-") as tmp, _git() as git:
        git.run("init", "-q", "--bare", "--template=", tmp)
        return _materialise_demo(git, Path(tmp))


def _acquire(git: _Git, staging: Path, origin: str, pin: CorpusPin, depth: list[str],
             local: bool) -> None:
    """Get the pinned commit into `staging`: by sha (shallow unless full history) where the
    source allows it, else every branch and tag; refuse if the source does not hold the sha."""
    assert pin.sha is not None
    by_sha = git.run("fetch", "-q", "--no-tags", "--no-write-fetch-head", *depth, origin,
                     pin.sha, cwd=staging, check=False)
    if by_sha.returncode != 0:
        _log.info("corpus.fetch_by_sha_refused", corpus=pin.id, source=origin,
                  stderr=_tail(by_sha.stderr))
        every = git.run("fetch", "-q", "--no-tags", "--no-write-fetch-head", origin,
                        "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*",
                        cwd=staging, check=False)
        if every.returncode != 0:
            kind = InputError if local else SandbenchError
            raise kind(f"cannot read {origin} as a git repository",
                       why=_tail(every.stderr),
                       fix="give a local clone, bare mirror or bundle" if local
                       else "check the network at set-up, or fetch with --from a local copy",
                       corpus=pin.id, source=origin)
    has = git.run("cat-file", "-e", pin.sha + "^{commit}", cwd=staging, check=False)
    if has.returncode != 0:
        raise InputError(f"{origin} does not contain commit {pin.sha} pinned for {pin.id!r}",
                         fix="fetch from a source that holds the pin, or correct the pin in "
                         f"{LOCK_NAME}", corpus=pin.id, source=origin, sha=pin.sha)


def _describe(git: _Git, repo: Path, pin: CorpusPin, origin: str) -> PristineInfo:
    assert pin.sha is not None
    listing = git.run("ls-tree", "-r", "-z", "--full-tree", pin.sha, cwd=repo).stdout
    paths = []
    for record in listing.split(b"\0"):
        if record:
            meta, _, name = record.partition(b"\t")
            if meta.split()[1] == b"blob":
                paths.append(name.decode("utf-8", "surrogateescape"))
    extensions = Counter(Path(p).suffix.lower() or "(none)" for p in paths)
    languages = Counter(LANGUAGES[ext] for ext in extensions.elements() if ext in LANGUAGES)
    snap = snapshot(repo)
    shallow = git.out("rev-parse", "--is-shallow-repository", cwd=repo) == "true"
    return PristineInfo(
        id=pin.id, repo=pin.repo, sha=pin.sha, license=pin.license, source=origin,
        shallow=shallow, tracked_files=len(paths), languages=dict(sorted(languages.items())),
        extensions=dict(sorted(extensions.items())), worktree_bytes=snap.bytes_in(False),
        git_bytes=snap.bytes_in(True), tree_digest=snap.digest(),
        fetched_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"))


def _install(repo: Path, dest: Path, meta: Path, info: PristineInfo, settings: Settings,
             pin: CorpusPin) -> None:
    """Rename the verified copy into place; an existing one is checked, reported, replaced.
    The record goes last, so a copy without one reads as incomplete, never as verified."""
    if dest.exists() or meta.exists():
        try:
            verify_pristine(pin, settings)
            _log.warning("corpus.replacing", corpus=pin.id, path=str(dest),
                         existing="verified clean")
        except SandbenchError as err:
            _log.warning("corpus.replacing", corpus=pin.id, path=str(dest),
                         existing="failed verification", why=err.why or err.what)
        meta.unlink(missing_ok=True)
        if dest.exists():
            os.rename(dest, repo.parent / "replaced")  # removed with the fetch's temp dir
    os.rename(repo, dest)
    atomic_write_json(meta, info.to_json())


def verify_pristine(pin: CorpusPin, settings: Settings) -> PristineInfo:
    """Check the pristine copy is still the pin: detached, no remotes, clean, same digest."""
    info = read_info(settings, pin.id)
    dest = corpus_dir(settings, pin.id)
    if info is None:
        state = "a copy without its record" if dest.exists() else "nothing"
        raise SandbenchError(f"corpus {pin.id!r} is not fetched: found {state} at {dest}",
                             fix=f"sandbench corpus fetch {pin.id}"
                             + (" --force" if dest.exists() else ""), corpus=pin.id)
    found: list[Difference] = []
    if info.sha != pin.sha:
        found.append(Difference("pin", f"{pin.sha} (corpus.lock)", f"{info.sha} (fetched)"))
    with _git() as git:
        found += _differences(git, dest, info.sha)
    if dest.is_dir():
        digest = tree_digest(dest)
        if digest != info.tree_digest:
            found.append(Difference("tree digest", info.tree_digest, digest))
    if found:
        raise _refuse(f"pristine copy of {pin.id!r} at {dest} failed verification", found,
                      f"refetch it: sandbench corpus fetch {pin.id} --force", corpus=pin.id)
    return info


@dataclass(frozen=True)
class CorpusState:
    """A pin and what the store holds for it: fetched, stale (another sha), incomplete, absent."""

    pin: CorpusPin
    state: Literal["fetched", "stale", "incomplete", "absent"]
    info: PristineInfo | None


def list_corpora(pins: Mapping[str, CorpusPin], settings: Settings) -> list[CorpusState]:
    """Every pinned corpus with its state in the store, from the records alone (no hashing)."""
    states = []
    for corpus_id in sorted(pins):
        pin = pins[corpus_id]
        info = read_info(settings, corpus_id)
        present = corpus_dir(settings, corpus_id).is_dir()
        if info is None and not present:
            state: Literal["fetched", "stale", "incomplete", "absent"] = "absent"
        elif info is None or not present:
            state = "incomplete"
        else:
            state = "fetched" if info.sha == pin.sha else "stale"
        states.append(CorpusState(pin, state, info))
    return states


# --- per-arm copies ---------------------------------------------------------------------------

def make_arm_copy(pristine_dir: Path, dest: Path, pin: CorpusPin) -> Path:
    """An independent copy of the pristine one for one arm, verified before it is handed over.

    A byte copy (never a clone with alternates, a worktree or hard links), so the arm owns its
    object store outright; the index is refreshed so that the arm's first git call does not
    rewrite it. `dest` is new, or an empty directory (the mount point of the arm's own file
    system); a copy that cannot be verified is removed again, so `dest` holds a clean,
    detached, remote-free checkout of the pin or nothing.
    """
    dest = Path(dest)
    existed = dest.is_dir() and not dest.is_symlink()
    if dest.is_symlink() or dest.exists() and (not existed or any(dest.iterdir())):
        raise SandbenchError(f"arm copy destination {dest} already exists",
                             fix="give each arm a fresh directory", path=str(dest))
    dest.mkdir(parents=True, exist_ok=True)
    try:
        shutil.copytree(pristine_dir, dest, symlinks=True, dirs_exist_ok=True)
        with _git() as git:
            git.run("update-index", "-q", "--refresh", cwd=dest, check=False)
            _verify_copy(git, dest, pin, shown=dest)
    except BaseException:
        for child in list(dest.iterdir()) if dest.is_dir() else []:
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink(missing_ok=True)
        if not existed:
            dest.rmdir()
        raise
    _log.info("corpus.arm_copy", corpus=pin.id, path=str(dest))
    return dest


def verify_arm_copy(copy: Path, pin: CorpusPin) -> None:
    """Refuse, naming each difference, unless `copy` is a private clean checkout of the pin.

    For a copy no arm has had yet: git reads the copy's own config, which an arm could have
    written. After an arm, list what it did with `snapshot`/`changes`, which run no git.
    """
    with _git() as git:
        _verify_copy(git, Path(copy), pin, shown=Path(copy))


def _verify_copy(git: _Git, path: Path, pin: CorpusPin, shown: Path) -> None:
    if pin.sha is None:
        raise InputError(f"corpus {pin.id!r} is proposed: it has no copies", corpus=pin.id)
    if found := _differences(git, path, pin.sha):
        raise _refuse(f"copy of {pin.id!r} for {shown} refused", found,
                      f"make a fresh copy; check the pristine: sandbench corpus verify {pin.id}",
                      corpus=pin.id, path=str(shown))

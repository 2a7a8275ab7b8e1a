"""The pristine store: fetch a pin once (verified, detached, no remote, nothing the pin cannot
reach), record what it holds, verify it later, and list the store against the lock."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from orchestrator import __version__, log
from orchestrator.corpus.git import (
    Difference,
    Git,
    clean_git,
    differences,
    materialise_demo,
    refuse,
    tail,
)
from orchestrator.corpus.lock import LOCK_NAME, CorpusPin
from orchestrator.corpus.snapshot import snapshot, tree_digest
from orchestrator.errors import InputError, SandbenchError
from orchestrator.fsutil import atomic_write_json
from orchestrator.settings import Settings

# By extension; everything else is counted under its extension only.
LANGUAGES = {
    ".cs": "C#", ".csx": "C#", ".fs": "F#", ".vb": "Visual Basic",
    ".ts": "TypeScript", ".tsx": "TypeScript", ".mts": "TypeScript", ".cts": "TypeScript",
    ".js": "JavaScript", ".jsx": "JavaScript", ".mjs": "JavaScript", ".cjs": "JavaScript",
    ".rs": "Rust", ".py": "Python", ".go": "Go", ".java": "Java", ".kt": "Kotlin",
    ".c": "C", ".h": "C", ".cc": "C++", ".cpp": "C++", ".hpp": "C++",
}

_log = log.get("corpus")



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
    if pin.sha is None:
        # A proposed substitute pinned at a sha is fetched like a registered corpus; every
        # run on it carries the substitution among its deviations (run.py).
        raise InputError(f"corpus {pin.id!r} is {pin.status}, not pinned: it cannot be fetched",
                         fix=f"pin it in {LOCK_NAME} with a full commit sha",
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
        with clean_git(network=network) as git:
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
            if found := differences(git, repo, pin.sha):
                raise refuse(f"fetched copy of {pin.id!r} is not a clean checkout of the pin",
                              found, "report this: the fetch produced an unexpected copy",
                              corpus=pin.id)
            info = _describe(git, repo, pin, origin)
        _install(repo, dest, meta, info, settings, pin)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    _log.info("corpus.fetched", corpus=pin.id, sha=pin.sha, source=origin, path=str(dest),
              tracked_files=info.tracked_files, shallow=info.shallow)
    return info


def _materialise(git: Git, staging: Path, pin: CorpusPin) -> None:
    sha = materialise_demo(git, staging)
    if sha != pin.sha:
        raise SandbenchError(
            f"the embedded demo corpus is commit {sha}, but {LOCK_NAME} pins {pin.sha}",
            why="the files under orchestrator/demo_corpus/tree/ are not the pinned ones",
            fix="restore them, or re-pin demo (and its test) to the new sha in one commit",
            corpus=pin.id, expected=pin.sha, found=sha)


def _acquire(git: Git, staging: Path, origin: str, pin: CorpusPin, depth: list[str],
             local: bool) -> None:
    """Get the pinned commit into `staging`: by sha (shallow unless full history) where the
    source allows it, else every branch and tag; refuse if the source does not hold the sha."""
    assert pin.sha is not None
    by_sha = git.run("fetch", "-q", "--no-tags", "--no-write-fetch-head", *depth, origin,
                     pin.sha, cwd=staging, check=False)
    if by_sha.returncode != 0:
        _log.info("corpus.fetch_by_sha_refused", corpus=pin.id, source=origin,
                  stderr=tail(by_sha.stderr))
        every = git.run("fetch", "-q", "--no-tags", "--no-write-fetch-head", origin,
                        "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*",
                        cwd=staging, check=False)
        if every.returncode != 0:
            kind = InputError if local else SandbenchError
            raise kind(f"cannot read {origin} as a git repository",
                       why=tail(every.stderr),
                       fix="give a local clone, bare mirror or bundle" if local
                       else "check the network at set-up, or fetch with --from a local copy",
                       corpus=pin.id, source=origin)
    has = git.run("cat-file", "-e", pin.sha + "^{commit}", cwd=staging, check=False)
    if has.returncode != 0:
        raise InputError(f"{origin} does not contain commit {pin.sha} pinned for {pin.id!r}",
                         fix="fetch from a source that holds the pin, or correct the pin in "
                         f"{LOCK_NAME}", corpus=pin.id, source=origin, sha=pin.sha)


def _describe(git: Git, repo: Path, pin: CorpusPin, origin: str) -> PristineInfo:
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
        fetched_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))


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
                             fix=pin.fetch_hint(force=dest.exists()), corpus=pin.id)
    found: list[Difference] = []
    if info.sha != pin.sha:
        found.append(Difference("pin", f"{pin.sha} (corpus.lock)", f"{info.sha} (fetched)"))
    with clean_git() as git:
        found += differences(git, dest, info.sha)
    if dest.is_dir():
        digest = tree_digest(dest)
        if digest != info.tree_digest:
            found.append(Difference("tree digest", info.tree_digest, digest))
    if found:
        raise refuse(f"pristine copy of {pin.id!r} at {dest} failed verification", found,
                      f"refetch it: {pin.fetch_hint(force=True)}", corpus=pin.id)
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


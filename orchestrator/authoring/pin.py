"""`sandbench corpus add`: a new corpus.lock table from a mirror or a URL, checked as the lock
is checked, appended atomically."""

from __future__ import annotations

import re
from pathlib import Path

from orchestrator import corpus
from orchestrator.authoring import toml_text
from orchestrator.authoring._common import bad as _bad
from orchestrator.corpus import foreign
from orchestrator.corpus.lock import parse_lock, read_lock_text, where
from orchestrator.errors import InputError
from orchestrator.fsutil import atomic_write_text

SHA = re.compile(r"[0-9a-f]{40}")
REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
SPDX = re.compile(r"[A-Za-z0-9.+-]+(?: (?:AND|OR|WITH) [A-Za-z0-9.+-]+)*")
KINDS = ("target", "held-out")
STATUSES = ("registered", "proposed")
# Where a mirror with no remote is taken to come from: the host of every corpus pinned so far,
# the repository named by the mirror's owner+name folder (or --repo); --url says otherwise.
DEFAULT_HOST = "https://github.com/"


def _repo_of_url(url: str) -> str | None:
    """owner/name from a git URL (https://host/owner/name(.git), git@host:owner/name.git)."""
    tail = re.split(r"[:/]", url.rstrip("/").removesuffix(".git"))[-2:]
    return "/".join(tail) if len(tail) == 2 and REPO.fullmatch("/".join(tail)) else None


def _repo_of_path(mirror: Path) -> str | None:
    """owner/name from where a mirror lies: a folder `owner+name` (the mirror's own name or its
    parent's, as .../owner+name/repo), or .../owner/name.git."""
    for name in (mirror.name, mirror.parent.name):
        if name.count("+") == 1 and REPO.fullmatch(name.replace("+", "/")):
            return name.replace("+", "/")
    if mirror.name.endswith(".git"):
        repo = f"{mirror.parent.name}/{mirror.name.removesuffix('.git')}"
        return repo if REPO.fullmatch(repo) else None
    return None


def _mirror_facts(mirror: Path, sha: str) -> str | None:
    """The mirror's https origin URL, if it names one; the sha must be a commit in it."""
    with foreign.opened(mirror, "--from") as repo:
        if repo.commit(sha) != sha:
            raise _bad("--sha", f"a commit of the mirror {mirror}", sha,
                       fix="pin a commit the mirror holds (git -C MIRROR log), or bring a "
                           "newer mirror")
        url = repo.config_value("remote.origin.url") or ""
    return url if url.startswith("https://") else None


def add_corpus(lock: Path, corpus_id: str, *, sha: str, license_id: str, kind: str, note: str,
               mirror: Path | None = None, url: str | None = None, repo: str | None = None,
               status: str = "registered") -> corpus.CorpusPin:
    """Check a new pin and append it to the lock at `lock`; the pin written."""
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", corpus_id):
        raise _bad("ID", "a corpus id of lower-case letters, digits and dashes", corpus_id)
    if not SHA.fullmatch(sha):
        raise _bad("--sha", "a full commit sha: 40 lower-case hex digits", sha)
    if not SPDX.fullmatch(license_id):
        raise _bad("--license", "an SPDX licence identifier (Apache-2.0, MIT, ...)", license_id)
    if kind not in KINDS:
        raise _bad("--kind", " or ".join(KINDS), kind)
    if status not in STATUSES:
        raise _bad("--status", " or ".join(STATUSES), status)
    if not note.strip():
        raise _bad("--note", "a sentence saying what the corpus is for", note)
    if mirror is None and url is None:
        raise _bad("--from/--url", "a mirror to check the sha in, or the URL (or both)", None)
    if url is not None and not url.startswith("https://"):
        raise _bad("--url", "an https:// git URL", url)
    if mirror is not None:
        origin = _mirror_facts(mirror, sha)
        url = url or origin
        repo = repo or _repo_of_path(mirror) or (_repo_of_url(url) if url else None)
        if url is None and repo is not None and REPO.fullmatch(repo):
            url = f"{DEFAULT_HOST}{repo}.git"
        if url is None:
            raise _bad("--url", f"the https:// git URL of the corpus (the mirror {mirror} "
                       "names no https remote, and its path no owner+name folder)", None,
                       fix="pass --url URL, or --repo OWNER/NAME")
    assert url is not None
    repo = repo or _repo_of_url(url)
    if repo is None or not REPO.fullmatch(repo):
        raise _bad("--repo", "owner/name (it cannot be read from the mirror's path or the URL)",
                   repo)
    pin = corpus.CorpusPin(id=corpus_id, repo=repo, url=url, sha=sha, license=license_id,
                           kind=kind, status=status, note=note)
    add_pin(lock, pin)
    return pin


def pin_table(pin: corpus.CorpusPin) -> str:
    """The pin as a corpus.lock table, its fields in the order of the lock's own tables."""
    fields = {"id": pin.id, "repo": pin.repo, "url": pin.url, "sha": pin.sha,
              "license": pin.license, "kind": pin.kind, "status": pin.status, "note": pin.note}
    return f"[{pin.id}]\n" + "".join(f"{key} = {toml_text.string(value)}\n"
                                     for key, value in fields.items() if value is not None)


def add_pin(path: Path, pin: corpus.CorpusPin) -> None:
    """Append `pin` to the lock at `path`, atomically: the lock as it is and as it would be are
    both checked as load_lock checks them, and nothing is written unless both pass."""
    text = read_lock_text(path)
    pins = parse_lock(path, text)
    if pin.id in pins:
        raise InputError.bad_value(where(path, text, pin.id, "id"), f"{pin.id}.id",
                                   "an id not yet in the lock", pin.id,
                                   fix="choose another id, or edit the existing table")
    new_text = text.rstrip("\n") + "\n\n" + pin_table(pin)
    if parse_lock(path, new_text).get(pin.id) != pin:
        raise InputError(f"{path}: the table for {pin.id!r} does not read back as written",
                         file=str(path), key=pin.id)
    atomic_write_text(path, new_text)

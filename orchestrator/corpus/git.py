"""git in a clean environment (no user, global or system config, no hooks, a scratch HOME), the
embedded demo corpus materialised as a commit, and what a checkout of a pin must be:
private, clean, detached, remote-free."""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator import demo_corpus
from orchestrator.errors import SandbenchError

GIT_DIR = ".git"

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



# What makes git read no system or global config and never prompt: on this host (clean_git)
# and in the agent that runs git on an engine's host (remote.py).
CLEAN_GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
                 "GIT_TERMINAL_PROMPT": "0"}


@dataclass(frozen=True)
class Git:
    """git with no user, global or system config, a scratch HOME and a fixed identity."""

    env: Mapping[str, str]

    def run(self, *args: str, cwd: Path | None = None, stdin: bytes | None = None,
            check: bool = True, env: Mapping[str, str] | None = None
            ) -> subprocess.CompletedProcess[bytes]:
        argv = ["git"]
        for setting in _GIT_CONFIG:
            argv += ["-c", setting]
        argv += args
        try:
            proc = subprocess.run(argv, cwd=cwd, env={**self.env, **(env or {})}, input=stdin,
                                  capture_output=True, check=False)
        except FileNotFoundError as err:
            raise SandbenchError("git is not installed or not on PATH",
                                 fix="install git (2.29 or later)") from err
        if check and proc.returncode != 0:
            raise SandbenchError(f"git {args[0]} failed (exit {proc.returncode})",
                                 why=tail(proc.stderr), argv=argv, cwd=str(cwd),
                                 returncode=proc.returncode)
        return proc

    def out(self, *args: str, cwd: Path) -> str:
        return self.run(*args, cwd=cwd).stdout.decode("utf-8", "surrogateescape").strip()


@contextlib.contextmanager
def clean_git(network: bool = False) -> Iterator[Git]:
    with tempfile.TemporaryDirectory(prefix="sandbench-git-home-") as home:
        env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": home,
               "XDG_CONFIG_HOME": str(Path(home) / ".config"), **CLEAN_GIT_ENV,
               "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", "TZ": "UTC",
               "GIT_AUTHOR_NAME": "sandbench", "GIT_AUTHOR_EMAIL": "sandbench@invalid",
               "GIT_COMMITTER_NAME": "sandbench", "GIT_COMMITTER_EMAIL": "sandbench@invalid"}
        if network:
            env.update({key: os.environ[key] for key in _NETWORK_ENV if key in os.environ})
        yield Git(env)


def tail(stderr: bytes, lines: int = 6) -> str:
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


def differences(git: Git, repo: Path, sha: str) -> list[Difference]:
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
                                f"{len(shared)} hard-linked, e.g. {some(shared)}"))
    if links:
        found.append(Difference("git dir", "no symlinks", some(links)))
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
        found.append(Difference("refs", "none besides the detached HEAD", some(refs)))
    status = git.run("status", "--porcelain=v1", "-z", "--untracked-files=all",
                     "--ignored=matching", "--no-renames", cwd=repo, check=False)
    if status.returncode != 0:
        found.append(Difference("worktree", "clean", "unreadable: " + tail(status.stderr)))
    elif dirty := [e.decode("utf-8", "surrogateescape") for e in status.stdout.split(b"\0") if e]:
        found.append(Difference("worktree", "clean", f"{len(dirty)} change(s): {some(dirty)}"))
    return found


def some(items: list[str], limit: int = 5) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" (+{len(items) - limit} more)" if len(items) > limit else "")


def refuse(what: str, found: list[Difference], fix: str, **data: Any) -> SandbenchError:
    return SandbenchError(f"{what}: {len(found)} difference(s)",
                          why="; ".join(map(str, found)), fix=fix, differences=found, **data)


def materialise_demo(git: Git, repo: Path) -> str:
    """Write the demo corpus's one commit into the existing repository `repo`; its sha."""
    git.run("fast-import", "--quiet", cwd=repo, stdin=demo_corpus.fast_import_stream())
    return git.out("rev-parse", "--verify", demo_corpus.BRANCH + "^{commit}", cwd=repo)


def demo_sha() -> str:
    """The sha the embedded demo corpus materialises to on this machine (pinned as `demo`)."""
    with tempfile.TemporaryDirectory(prefix="sandbench-demo-") as tmp, clean_git() as git:
        git.run("init", "-q", "--bare", "--template=", tmp)
        return materialise_demo(git, Path(tmp))

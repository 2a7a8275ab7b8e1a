"""`sandbench corpus`: pin a corpus (add), fetch a pinned corpus into the pristine store, list
and verify it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from orchestrator.cli._common import BenchRoot, Json, emit_json, settings, show, table
from orchestrator.cli._help import Command, Group
from orchestrator.settings import Settings
from orchestrator.untrusted.text import terminal

if TYPE_CHECKING:
    from orchestrator import corpus

app = typer.Typer(cls=Group, no_args_is_help=True,
                  help="Pinned corpora: pin, fetch at the pin, list, verify.")

Lock = typer.Option(None, "--lock", dir_okay=False, metavar="FILE",
                    help="The corpus lock (default: corpus.lock in the project root).")
CorpusId = typer.Argument(..., metavar="ID", help="A corpus id from corpus.lock.",
                          show_default=False)


def _load(bench_root: Path | None, lock: Path | None) -> tuple[Settings, Path,
                                                                dict[str, corpus.CorpusPin]]:
    from orchestrator import corpus
    cfg = settings(bench_root)
    lock = lock or corpus.lock_path(cfg)
    return cfg, lock, corpus.load_lock(lock)


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n / 1e3:.1f} kB"


def _describe(info: corpus.PristineInfo) -> str:
    langs = ", ".join(f"{name} {count:,}" for name, count in info.languages.items()) or "none"
    return (f"{info.id} @ {info.sha}: {info.tracked_files:,} tracked files ({langs}); "
            f"worktree {_size(info.worktree_bytes)}, git {_size(info.git_bytes)}"
            f"{', shallow' if info.shallow else ''}; tree digest {info.tree_digest[:16]}")


@app.command("fetch", cls=Command)
def fetch(corpus_id: str = CorpusId,
          source: Path = typer.Option(None, "--from", metavar="PATH",
                                      help="A local clone, bare mirror or git bundle to fetch "
                                           "from instead of the url (offline hosts)."),
          force: bool = typer.Option(False, "--force", help="Refetch, verify and replace an "
                                     "existing pristine copy."),
          full_history: bool = typer.Option(False, "--full-history", help="Keep the pin's "
                                            "whole ancestry, not only the pinned commit."),
          bench_root: Path = BenchRoot, lock: Path = Lock, as_json: bool = Json) -> None:
    """Fetch exactly the pinned commit into the pristine store (the only network use)."""
    from orchestrator import corpus
    cfg, lock_file, pins = _load(bench_root, lock)
    info = corpus.fetch(corpus.pin_for(pins, corpus_id, lock_file), cfg, source=source,
                        force=force, full_history=full_history)
    if as_json:
        emit_json(info.to_json())
        return
    typer.echo(f"fetched {_describe(info)}\n  into {corpus.corpus_dir(cfg, info.id)}")


@app.command("ls", cls=Command)
def ls(bench_root: Path = BenchRoot, lock: Path = Lock, as_json: bool = Json) -> None:
    """Every pinned corpus: id, pin, status, whether it is fetched, tracked file count."""
    from orchestrator import corpus
    cfg, _, pins = _load(bench_root, lock)
    rows: list[dict[str, Any]] = [
        {"id": s.pin.id, "sha": s.pin.sha, "status": s.pin.status, "kind": s.pin.kind,
         "repo": s.pin.repo, "fetched": s.state, "fetched_sha": s.info.sha if s.info else None,
         "files": s.info.tracked_files if s.info else None}
        for s in corpus.list_corpora(pins, cfg)]
    if as_json:
        emit_json(rows)
        return
    show(table([{**row, "pin": (row["sha"] or "-")[:12],
                 "fetched": f"stale: fetched {row['fetched_sha'][:12]}"
                 if row["fetched"] == "stale" else row["fetched"]} for row in rows],
               ["id", "pin", "status", "fetched", "files"]))


@app.command("verify", cls=Command)
def verify(corpus_id: str = CorpusId, bench_root: Path = BenchRoot, lock: Path = Lock,
           as_json: bool = Json) -> None:
    """Check the pristine copy: at the pin, detached, no remotes, clean, tree digest unchanged."""
    from orchestrator import corpus
    cfg, lock_file, pins = _load(bench_root, lock)
    info = corpus.verify_pristine(corpus.pin_for(pins, corpus_id, lock_file), cfg)
    if as_json:
        emit_json(info.to_json())
        return
    typer.echo(f"ok: {_describe(info)}")


@app.command("add", cls=Command)
def add(corpus_id: str = typer.Argument(..., metavar="ID", show_default=False,
                                        help="The new corpus's id (lower-case, digits, dashes)."),
        source: Path = typer.Option(None, "--from", metavar="MIRROR",
                                    help="A local clone or bare mirror: the sha is checked to "
                                         "be a commit in it, and the repo (owner+name folder, "
                                         "or its origin) and URL (its https origin) are read "
                                         "from it."),
        url: str = typer.Option(None, "--url", metavar="URL",
                                help="The https:// git URL (the one network source); without "
                                     "it, the mirror's https origin, else the repository "
                                     "(owner+name folder or --repo) on the default host."),
        sha: str = typer.Option(..., "--sha", metavar="SHA",
                                help="The full commit to pin (40 hex digits)."),
        license_id: str = typer.Option(..., "--license", metavar="SPDX",
                                       help="The corpus's licence (SPDX identifier)."),
        kind: str = typer.Option(..., "--kind", metavar="target|held-out",
                                 help="target or held-out."),
        note: str = typer.Option(..., "--note", metavar="TEXT",
                                 help="What the corpus is for (quoted in corpus ls and every "
                                      "run on it)."),
        repo: str = typer.Option(None, "--repo", metavar="OWNER/NAME",
                                 help="The repository, when neither the mirror nor the URL "
                                      "names it."),
        status: str = typer.Option("registered", "--status", metavar="registered|proposed",
                                   help="registered, or proposed (a disclosed substitute)."),
        bench_root: Path = BenchRoot, lock: Path = Lock, as_json: bool = Json) -> None:
    """Pin a corpus: check the entry as corpus.lock is checked, then append it atomically."""
    from orchestrator import authoring, corpus
    lock_file = lock or corpus.lock_path(settings(bench_root))
    pin = authoring.add_corpus(lock_file, corpus_id, sha=sha, license_id=license_id, kind=kind,
                               note=note, mirror=source, url=url, repo=repo, status=status)
    if as_json:
        emit_json({"lock": str(lock_file), "id": pin.id, "repo": pin.repo, "url": pin.url,
                   "sha": pin.sha, "license": pin.license, "kind": pin.kind,
                   "status": pin.status, "note": pin.note})
        return
    typer.echo(f"pinned {terminal(pin.id)} = {terminal(pin.repo)} @ {pin.sha} in {lock_file}")
    if source is None:
        typer.echo("the sha is not checked yet (no mirror given): `corpus fetch` checks it")
    elif url is None:
        typer.echo(f"url {terminal(pin.url)}: read from the mirror (its origin, or its "
                   "repository on the default host); pass --url if it lives elsewhere")
    typer.echo(f"next: {terminal(pin.fetch_hint())}")

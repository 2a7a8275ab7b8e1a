"""How long a per-arm copy and a tree digest take on a corpus the size of MassTransit.

Synthesises a deterministic corpus of about 5,800 tracked files and 190 MB on disk with its
history (a few commits that rewrite part of the tree), fetches it into a pristine store with
full history as `sandbench corpus fetch --from ... --full-history` would, then times
`make_arm_copy` and `tree_digest` side by side, prints the medians and writes them to
bench/benchmarks/corpus_copy.json.

    .venv/bin/python -m benchmarks.corpus_copy [--files 5800] [--reps 7] [--dir /tmp/x]
"""

from __future__ import annotations

import argparse
import base64
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from orchestrator import corpus, log
from orchestrator.fsutil import atomic_write_json
from orchestrator.settings import Settings, load_settings

EXTENSIONS = (".cs",) * 8 + (".csproj", ".json", ".md", ".ts")
ENV = {"PATH": os.environ.get("PATH", os.defpath), "HOME": os.devnull, "LC_ALL": "C",
       "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
       "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@sandbench.invalid",
       "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@sandbench.invalid"}


def _git(*args: str, cwd: Path, date: str = "2024-01-01T00:00:00Z") -> str:
    env = {**ENV, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    return subprocess.run(["git", "-c", "init.defaultBranch=main", "-c", "gc.auto=0", *args],
                          cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def _text(rng: random.Random, size: int) -> bytes:
    """Printable, line-broken, about as compressible as source code is not: it keeps the
    object store near the size the history is meant to have."""
    raw = base64.b64encode(rng.randbytes(size * 3 // 4))
    return b"\n".join(raw[i:i + 96] for i in range(0, len(raw), 96)) + b"\n"


def synthesise(root: Path, files: int, mean_kb: float, commits: int) -> tuple[Path, str]:
    """A repository of `files` files whose history rewrites a third of them per commit."""
    rng = random.Random(5800)
    work = root / "upstream"
    work.mkdir(parents=True)
    _git("init", "-q", cwd=work)
    paths = [Path(f"src/Module{i % 97:02d}/Area{i % 13:02d}/File{i:05d}{EXTENSIONS[i % 12]}")
             for i in range(files)]
    for commit in range(commits):
        touched = paths if commit == 0 else rng.sample(paths, len(paths) // 3)
        for rel in touched:
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / rel).write_bytes(_text(rng, int(rng.expovariate(1 / (mean_kb * 1024)))))
        _git("add", "-A", cwd=work)
        _git("commit", "-q", "-m", f"change {commit}", cwd=work,
             date=f"2024-01-{commit + 1:02d}T00:00:00Z")
    _git("repack", "-adq", "--window=0", cwd=work)
    return work, _git("rev-parse", "HEAD", cwd=work)


def _median(reps: int, run: Callable[[int], object],
            before: Callable[[], None] | None = None) -> list[float]:
    """Seconds per rep; `before` runs untimed ahead of each rep."""
    times = []
    for rep in range(reps):
        if before is not None:
            before()
        start = time.perf_counter()
        run(rep)
        times.append(time.perf_counter() - start)
    return times


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5800)
    parser.add_argument("--mean-kb", type=float, default=10.0, help="mean file size")
    parser.add_argument("--commits", type=int, default=6,
                        help="with 10 kB files, 6 commits make ~190 MB on disk with history")
    parser.add_argument("--reps", type=int, default=7, help="at least 5")
    parser.add_argument("--dir", type=Path, help="scratch directory (default: a temp dir)")
    args = parser.parse_args()
    if args.reps < 5:
        parser.error("--reps must be at least 5 for a median worth printing")
    log.configure(stream=sys.stderr)
    scratch = Path(tempfile.mkdtemp(prefix="sandbench-bench-", dir=args.dir))
    try:
        start = time.perf_counter()
        upstream, sha = synthesise(scratch, args.files, args.mean_kb, args.commits)
        made = time.perf_counter() - start
        pin = corpus.CorpusPin(id="synthetic", repo="sandbench/synthetic",
                               url="https://example.invalid/synthetic.git", sha=sha,
                               license="Apache-2.0", kind="target", status="registered",
                               note="benchmark")
        settings = Settings(project_root=scratch, bench_root=scratch / "bench")
        start = time.perf_counter()
        info = corpus.fetch(pin, settings, source=upstream, full_history=True)
        fetched = time.perf_counter() - start
        pristine = corpus.corpus_dir(settings, pin.id)
        print(f"corpus: {info.tracked_files:,} tracked files, {args.commits} commits; worktree "
              f"{_mb(info.worktree_bytes)} + git {_mb(info.git_bytes)} = "
              f"{_mb(info.worktree_bytes + info.git_bytes)} on disk")
        print(f"synthesised in {made:.1f} s; fetched into the pristine store in {fetched:.1f} s")
        arms = scratch / "arms"
        rows = {
            # A run copies its arms one after another: the kernel's writeback of one copy
            # is billed to the next, as it would be in a run.
            "make_arm_copy, back to back": _median(
                args.reps, lambda rep: corpus.make_arm_copy(pristine, arms / f"a{rep}", pin)),
            # The same with dirty pages flushed first (untimed): the copy's own cost.
            "make_arm_copy, after sync": _median(
                args.reps, lambda rep: corpus.make_arm_copy(pristine, arms / f"s{rep}", pin),
                before=os.sync),
            "tree_digest of the pristine": _median(
                args.reps, lambda rep: corpus.tree_digest(pristine)),
        }
        print(f"{'operation':<30}{'median':>9}{'min':>9}{'max':>9}   (n={args.reps} each)")
        for name, times in rows.items():
            print(f"{name:<30}{statistics.median(times):>8.2f}s{min(times):>8.2f}s"
                  f"{max(times):>8.2f}s")
        atomic_write_json(load_settings().bench_root / "benchmarks" / "corpus_copy.json", {
            "tracked_files": info.tracked_files, "commits": args.commits,
            "on_disk_bytes": info.worktree_bytes + info.git_bytes, "reps": args.reps,
            "median_s": {name: round(statistics.median(times), 3)
                         for name, times in rows.items()}})
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()

"""What reading a mirror only as objects (`orchestrator/corpus/foreign.py`) changes and costs: the
authoring commands run by this checkout and by the code at an earlier commit (its tree
extracted to a temporary directory, run with this virtualenv), on a corpus made here.

Attacks: each command on a fresh blob-less partial mirror whose promisor's `uploadpack` logs
that it ran, then serves as the real git-upload-pack (so git's output is normal): exit status,
wall time and how many times the program ran. `corpus add` pins a commit the remote holds and
the mirror lacks. Cost: `suite add-tasks` on the clean full mirror in alternating rounds, the
command as a whole and `authoring.add_tasks()` alone in its process; medians and the ratio.

    python -m benchmarks.foreign_git_cost [--before 47deff3] [--rounds 15] [--files 400]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from orchestrator import suite

BEFORE = "47deff3"  # main before the mirror was read as objects (issue 29, class 5)
PROJECT = Path(__file__).resolve().parents[1]
URL = "https://git.example.invalid/acme/shop.git"
GIT_ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
           "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@invalid", "GIT_COMMITTER_NAME": "a",
           "GIT_COMMITTER_EMAIL": "a@invalid"}
RECORDS = """version = 1

[[record]]
id = "price"
title = "Prices are wrong"
fix = ["FIX1", "FIX2"]
symbol = "Money"
seed = "src/Shop/Money.cs"
"""
INNER = ("import sys, time; from pathlib import Path; from orchestrator import authoring; "
         "from orchestrator.settings import load_settings; s = load_settings(); "
         "import inspect; kw = {'command': 'cmd'} if 'command' in "
         "inspect.signature(authoring.add_tasks).parameters else {}; "  # before: it took one
         "t = time.perf_counter(); authoring.add_tasks(s, 'shop-suite', Path(sys.argv[1]), "
         "Path(sys.argv[2]), today='2026-01-01', **kw); print(time.perf_counter() - t)")


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True,
                          text=True).stdout.strip()


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git("add", "-A", cwd=repo)
    git("commit", "-qm", message, cwd=repo)
    return git("rev-parse", "HEAD", cwd=repo)


class Bench:
    """One checkout's scratch project, bench root, corpus repository, mirror and suite."""

    def __init__(self, checkout: Path, root: Path, files: int) -> None:
        self.code, self.root = checkout, root
        self.upstream = root / "upstream"
        self.upstream.mkdir(parents=True)
        git("init", "-q", cwd=self.upstream)
        pin_files = {f"src/Gen/F{i:04d}.cs": f"class F{i} {{ {'Money m; ' * (i % 7 == 0)}}}\n"
                     * 20 for i in range(files)}
        pin_files.update({"src/Shop/Money.cs": "public class Money { }\n",
                          "src/Shop/Price.cs": "class Price { Money amount; }\n"})
        self.pin = commit(self.upstream, pin_files, "the pin")
        self.fixes = [commit(self.upstream, {"src/Shop/Price.cs": "class Price {\n Money a;\n}\n"},
                             "fix 1"),
                      commit(self.upstream, {"src/Shop/Money.cs": "public class Money {\n}\n"},
                             "fix 2")]
        git("config", "uploadpack.allowFilter", "true", cwd=self.upstream)
        git("config", "uploadpack.allowAnySHA1InWant", "true", cwd=self.upstream)
        self.mirror = root / "mirror.git"
        git("clone", "-q", "--mirror", str(self.upstream), str(self.mirror))
        project = root / "project"
        for part in ("arms", *suite.every_scorer_source(PROJECT), "corpus.lock"):
            (project / part).parent.mkdir(parents=True, exist_ok=True)
            if (PROJECT / part).is_dir():
                shutil.copytree(PROJECT / part, project / part)
            else:
                shutil.copy2(PROJECT / part, project / part)
        (project / "suites").mkdir()
        (project / "images").mkdir()
        self.records = root / "records.toml"
        self.records.write_text(RECORDS.replace("FIX1", self.fixes[0][:9])
                                .replace("FIX2", self.fixes[1]))
        for args in (["corpus", "add", "shop", "--from", str(self.mirror), "--url", URL, "--sha",
                      self.pin, "--license", "MIT", "--kind", "target", "--note", "bench"],
                     ["corpus", "fetch", "shop", "--from", str(self.mirror)],
                     ["suite", "new", "shop-suite", "--corpus", "shop", "--arms", "rg,ast-grep",
                      "--baseline", "rg"]):
            code, _, out = self.run(*args)
            assert code == 0, out
        self.suite = project / "suites" / "shop-suite"
        shutil.copytree(self.suite, root / "suite-before")

    def env(self) -> dict[str, str]:
        return {**os.environ, "PYTHONPATH": str(self.code),
                "SANDBENCH_PROJECT": str(self.root / "project"),
                "SANDBENCH_ROOT": str(self.root / "bench")}

    def run(self, *args: str) -> tuple[int, float, str]:
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], env=self.env(),
                              capture_output=True, text=True, cwd=self.root)
        return proc.returncode, time.perf_counter() - started, proc.stdout + proc.stderr

    def reset_suite(self) -> None:
        shutil.rmtree(self.suite)
        shutil.copytree(self.root / "suite-before", self.suite)

    def hostile(self) -> Path:
        """A fresh blob-less mirror whose promisor's uploadpack logs, then serves."""
        mirror = self.root / "hostile.git"
        shutil.rmtree(mirror, ignore_errors=True)
        git("clone", "-q", "--mirror", "--filter=blob:none", f"file://{self.upstream}",
            str(mirror))
        evil = self.root / "uploadpack.sh"
        evil.write_text(f'#!/bin/sh\necho "$*" >> {self.root / "ran"}\n'
                        'exec git-upload-pack "$@"\n')
        evil.chmod(0o755)
        git("config", "remote.origin.uploadpack", str(evil), cwd=mirror)
        (self.root / "ran").unlink(missing_ok=True)
        return mirror

    def attacks(self) -> None:
        tree = git("rev-parse", "HEAD^{tree}", cwd=self.upstream)  # a commit no ref reaches
        late = git("commit-tree", "-p", "HEAD", "-m", "late", tree, cwd=self.upstream)
        pristine = str(self.root / "bench" / "corpora" / "shop")
        lock = self.root / "lock"
        for label, args in (
                ("corpus add --from M --sha LATE", ["corpus", "add", "shop-2", "--from", "M",
                                                    "--sha", late, "--url", URL, "--license",
                                                    "MIT", "--kind", "target", "--note", "x",
                                                    "--lock", str(lock)]),
                ("truth rule fix M FIX1 FIX2", ["truth", "rule", "fix", "M", *self.fixes]),
                ("truth rule impact P SEED --mirror M", ["truth", "rule", "impact", pristine,
                                                         "src/Shop/Money.cs", "--mirror", "M",
                                                         "--fix", self.fixes[0]]),
                ("suite add-tasks --mirror M", ["suite", "add-tasks", "shop-suite", "--records",
                                                str(self.records), "--mirror", "M"])):
            shutil.copy2(self.root / "project" / "corpus.lock", lock)
            mirror = str(self.hostile())
            code, took, out = self.run(*[mirror if a == "M" else a for a in args])
            ran = self.root / "ran"
            runs = len(ran.read_text().splitlines()) if ran.exists() else 0
            print(f"  {label:36} exit {code}  {took:5.2f} s  program ran {runs}x  | "
                  f"{out.strip().splitlines()[0][:90] if out.strip() else ''}")
            self.reset_suite()

    def add_tasks(self) -> tuple[float, float]:
        """(the command's wall, add_tasks() alone) on the clean mirror."""
        code, took, out = self.run("suite", "add-tasks", "shop-suite", "--records",
                                   str(self.records), "--mirror", str(self.mirror))
        assert code == 0, out
        self.reset_suite()
        inner = subprocess.run([sys.executable, "-c", INNER, str(self.records),
                                str(self.mirror)], env=self.env(), capture_output=True,
                               text=True, check=True, cwd=self.root)
        self.reset_suite()
        return took, float(inner.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=BEFORE)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--files", type=int, default=400)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sandbench-foreign-cost-") as tmp:
        earlier = Path(tmp) / "earlier"
        earlier.mkdir()
        archive = subprocess.run(["git", "-C", str(PROJECT), "archive", args.before],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(earlier)], input=archive, check=True)
        benches = {"before": Bench(earlier, Path(tmp) / "before", args.files),
                   "now": Bench(PROJECT, Path(tmp) / "now", args.files)}
        for name, bench in benches.items():
            print(f"{name} ({args.before if name == 'before' else 'this checkout'}):")
            bench.attacks()
        walls: dict[str, list[tuple[float, float]]] = {name: [] for name in benches}
        for _ in range(args.rounds):
            for name, bench in benches.items():
                walls[name].append(bench.add_tasks())
        medians = {name: [statistics.median(t[k] for t in walls[name]) for k in (0, 1)]
                   for name in benches}
        for k, what in enumerate(("the command", "add_tasks()")):
            before, now = medians["before"][k], medians["now"][k]
            print(f"add-tasks, {what}: {before:.3f} s before, {now:.3f} s now, ratio "
                  f"{now / before:.2f} (medians of {args.rounds}, {args.files + 2} files)")


if __name__ == "__main__":
    main()

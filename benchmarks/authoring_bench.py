"""How long authoring a 50-task suite by command takes on MassTransit: `sandbench suite new`,
then `sandbench suite add-tasks` from a records file (truth computed by the declared rule on the
pristine corpus and the bare mirror), then `sandbench suite seal`, each run as the user runs it
(a fresh `sandbench` process) in a scratch copy of the project's inputs.

The records come from the mirror's commits after the pin that change .cs files tracked at the
pin: one record per changed non-test file (its commit as the fix, the first type it declares as
the symbol, the file as the seed: locate, e2e-retrieval, references, impact), one record whose
fix is two commits (unioned), then symbol-only records until the tasks number exactly 50. Each
task carries its own rg command (`commands`), and a task whose truth the suite's top-5 cut or
20-file cap cannot reach is kept disclosed (`accept_unreachable`), as an author would. The
records (a JSON records file) are chosen once, untimed, so that every one makes its tasks (a
non-empty core and graded set). Prints the median of each phase and of the whole over the reps,
and writes them to bench/benchmarks/authoring.json (or --out).

    .venv/bin/python -m benchmarks.authoring_bench --mirror PATH/MassTransit+MassTransit/repo \
        [--tasks 50] [--reps 5] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from typing import Any

from orchestrator import corpus, suite
from orchestrator.truth import rules as truth_rules, sources as truth_sources
from orchestrator.corpus import foreign
from orchestrator.fsutil import atomic_write_json
from orchestrator.settings import load_settings

CORPUS = "csharp"
ARMS = "rg,ast-grep"
KINDS_PER_FULL_RECORD = 4
TOP_K, PRECISION_CAP = 5, 20  # suite new's defaults


def _commands(body: dict[str, Any], kinds: list[str]) -> dict[str, Any]:
    """An rg command per kind the record makes, as a published task would carry it."""
    word = str(body.get("symbol") or "")
    argv = {"references": ["rg", "-n", "-w", "-g", "*.cs", "{symbol}", "{corpus}"],
            "impact": ["rg", "-l", "-w", "-g", "*.cs", word, "{corpus}"],
            "locate": ["rg", "-l", "-w", "-g", "*.cs", word, "{corpus}"],
            "e2e-retrieval": ["rg", "-l", "-w", "-g", "*.cs", word, "{corpus}"]}
    return {kind: {"rg": {"argv": argv[kind], **({} if kind == "references"
                                                  else {"output": "file-list"})}}
            for kind in kinds}


def _fix_commits(mirror: foreign.Foreign, pin: str) -> list[str]:
    """The mirror's commits after the pin (oldest first) that change a .cs file."""
    head = mirror.head()
    shas = mirror.read("rev-list", "--reverse", f"{pin}..{head}", commit=head).decode().split()
    return [sha for sha in shas if truth_rules.fix_files(mirror, [sha])]


def _usable(sources: truth_sources.Sources, symbol: str, seed: str | None,
            at_pin: set[str]) -> bool:
    """The record makes every task it names: a non-empty core (and graded set)."""
    if not truth_rules.refs(sources, symbol).core:
        return False
    return seed is None or bool(set(truth_rules.impact(sources, seed).graded) & at_pin)


def records(mirror: foreign.Foreign, pristine: foreign.Foreign, pin: str, tasks: int) -> str:
    """A JSON records file making exactly `tasks` tasks from the mirror's fixes after the pin."""
    sources = truth_sources.Sources(pristine)
    at_pin = set(sources.tracked())
    fixes = _fix_commits(mirror, pin)
    if len(fixes) < 2:
        sys.exit(f"benchmarks.authoring_bench: the mirror holds {len(fixes)} commit(s) after the "
                 f"pin changing .cs files; 2 or more are needed")
    out: list[dict[str, Any]] = []
    made, symbols = 0, set()

    def record(body: dict[str, Any]) -> None:
        kinds = ["references"]
        if "fix" in body:
            kinds = ["locate", "e2e-retrieval", "references", "impact"]
            touched = [p for p, _ in truth_rules.fix_files(mirror, body["fix"]) if p in at_pin]
            graded = [p for p in truth_rules.impact(sources, body["seed"], mirror,
                                                    body["fix"]).graded if p in at_pin]
            far = [*(["e2e-retrieval"] if len(touched) > TOP_K else []),
                   *(["impact"] if len(graded) > PRECISION_CAP else [])]
            body = {**body, **({"accept_unreachable": far} if far else {})}
        out.append({**body, "commands": _commands(body, kinds)})

    n = 0
    for sha in [*fixes, "union"]:
        shas = fixes[:2] if sha == "union" else [sha]
        subject = mirror.read("log", "-1", "--format=%s", shas[-1], commit=shas[-1]).decode(
            "utf-8", "replace").strip()
        for path, _ in truth_rules.fix_files(mirror, shas):
            if made + KINDS_PER_FULL_RECORD > tasks:
                break
            if path not in at_pin or truth_sources.is_test(path):
                continue
            types = truth_sources.declared_types(pristine.path / path)
            if not types or not _usable(sources, types[0], path, at_pin):
                continue
            n += 1
            symbols.add(types[0])
            record({"id": f"r{n:02d}", "issue": f"commit {shas[-1][:9]}", "title": subject,
                    "fix": shas, "symbol": types[0], "seed": path})
            made += KINDS_PER_FULL_RECORD
            if sha == "union":
                break
    for rel in sorted(at_pin):  # symbol-only records until the count is reached
        if made >= tasks:
            break
        if not rel.startswith("src/MassTransit/JobService/"):
            continue
        for symbol in truth_sources.declared_types(pristine.path / rel):
            if made < tasks and symbol not in symbols and _usable(sources, symbol, None, at_pin):
                n += 1
                symbols.add(symbol)
                record({"id": f"r{n:02d}", "symbol": symbol})
                made += 1
    if made != tasks:
        sys.exit(f"benchmarks.authoring_bench: the records make {made} tasks, not {tasks}")
    return json.dumps({"version": 1, "language": "csharp", "record": out}, indent=1) + "\n"


def _project(root: Path, source: Path) -> Path:
    """A scratch copy of the project's inputs (arms, the scorer's sources, the lock)."""
    project = root / "project"
    for part in ("arms", *suite.every_scorer_source(source), "corpus.lock"):
        if (source / part).is_dir():
            shutil.copytree(source / part, project / part)
        else:
            (project / part).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / part, project / part)
    (project / "suites").mkdir()
    (project / "images").mkdir()
    return project


def _run(env: dict[str, str], *args: str) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], env=env,
                          capture_output=True, text=True)
    took = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"benchmarks.authoring_bench: sandbench {' '.join(args)} failed:\n"
                 f"{done.stdout}{done.stderr}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirror", type=Path, required=True,
                        help="A bare mirror of MassTransit/MassTransit (the fixes after the pin).")
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    settings = load_settings()
    lock = corpus.lock_path(settings)
    pin = corpus.pin_for(corpus.load_lock(lock), CORPUS, lock)
    pristine = corpus.corpus_dir(settings, CORPUS)
    if not (pristine / ".git").is_dir():
        sys.exit(f"benchmarks.authoring_bench: the {CORPUS} corpus is not fetched: "
                 f"{pin.fetch_hint()}")
    assert pin.sha is not None
    with tempfile.TemporaryDirectory(prefix="sandbench-authoring-") as tmp:
        root = Path(tmp)
        with foreign.opened(args.mirror, "--mirror") as mirror, \
                foreign.opened(pristine, "the pristine copy") as checkout:
            text = records(mirror, checkout, pin.sha, args.tasks)
        records_file = root / "records.json"
        records_file.write_text(text)
        project = _project(root, settings.project_root)
        env = {**os.environ, "SANDBENCH_PROJECT": str(project),
               "SANDBENCH_ROOT": str(settings.bench_root)}
        phases: dict[str, list[float]] = {"new": [], "add_tasks": [], "seal": [], "total": []}
        for rep in range(args.reps):
            name = f"authored-{rep}"
            new = _run(env, "suite", "new", name, "--corpus", CORPUS, "--arms", ARMS,
                       "--baseline", "rg")
            add = _run(env, "suite", "add-tasks", name, "--records", str(records_file),
                       "--mirror", str(args.mirror))
            seal = _run(env, "suite", "seal", name)
            made = len(list((project / "suites" / name / "tasks").glob("*.toml")))
            if made != args.tasks:
                sys.exit(f"benchmarks.authoring_bench: {made} task files, not {args.tasks}")
            for key, took in (("new", new), ("add_tasks", add), ("seal", seal),
                              ("total", new + add + seal)):
                phases[key].append(took)
    medians = {key: statistics.median(values) for key, values in phases.items()}
    result = {"tasks": args.tasks, "reps": args.reps, "corpus": {"id": CORPUS, "sha": pin.sha},
              "median_s": medians, "runs_s": phases, "load_average": os.getloadavg(),
              "records": len(json.loads(text)["record"])}
    out = args.out or settings.bench_root / "benchmarks" / "authoring.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out, result)
    print(f"authoring a {args.tasks}-task suite from {result['records']} records "
          f"(median of {args.reps}): suite new {medians['new']:.2f} s, add-tasks "
          f"{medians['add_tasks']:.2f} s, seal {medians['seal']:.2f} s; total "
          f"{medians['total']:.2f} s  -> {out}")


if __name__ == "__main__":
    main()

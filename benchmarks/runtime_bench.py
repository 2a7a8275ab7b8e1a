"""What gVisor (runsc) costs against runc, measured side by side in one run, the two
runtimes interleaved call by call (never one absolute time):

- container start: an rg arm's hardened sandbox created, started and attached as a run
  starts it (`start_*`), and removed;
- per-call path: a plain `docker exec` of `true` into a started sandbox, host bracket
  (`exec_*`): the engine's exec path under each runtime; and a measured command, `true`
  through the resident executor with the split uids as a run sends it, host bracket
  (`call_*`);
- rg over a synthetic tree of a few thousand files on the arm's mounted /corpus, warm, by
  the same plain exec (`rg_*`);
- the demo suite's wall time with every arm under each runtime (`demo_*`), with the arms
  each refused (a ratio only when none was).

Every figure is a median with its ratio runsc / runc. Written to
bench/benchmarks/runtime.json.

Usage: python -m benchmarks.runtime_bench [--execs 40] [--files 3000] [--reps 15]
       [--starts 10] [--no-demo]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.sandbox_bench import ms, synth_corpus
from orchestrator import arms, images, log, suite
from orchestrator.sandbox import runtimes, workfs
from orchestrator.engine import Engine
from orchestrator.fsutil import atomic_write_json
from orchestrator.sandbox.container import Sandbox
from orchestrator.sandbox.spec import SandboxSpec, default_user, for_arm
from orchestrator.settings import Settings, load_settings
from orchestrator.run import pool, runner
from orchestrator.run.options import RunOptions

RUNTIMES = (runtimes.RUNC, runtimes.RUNSC)
RG_ARGV = ["rg", "-n", "-w", "-c", "ledger", "/corpus"]


def _plain_exec(box: Sandbox, argv: list[str]) -> int:
    """Host-bracketed nanoseconds of one plain exec of `argv`, its output drained."""
    began = time.monotonic_ns()
    stream = box.engine.exec(box.require_id(), argv, user=box.spec.user, timeout_s=300)
    try:
        for _ in stream.chunks():
            pass
        code = stream.exit_code()
    finally:
        stream.close()
    took = time.monotonic_ns() - began
    if stream.broken is not None or code not in (0, 1):  # rg exits 1 when nothing matched
        raise SystemExit(f"runtime_bench: {' '.join(argv)} under {box.spec.runtime} ended "
                         f"with exit {code} ({stream.broken or 'stream complete'})")
    return took


def _side_by_side(name: str, seen: dict[str, list[int]], figures: dict[str, Any]) -> None:
    """Each runtime's median (ms) and the ratio runsc / runc."""
    medians = {rt: statistics.median(values) for rt, values in seen.items()}
    for rt, value in medians.items():
        figures[f"{name}_{rt}_median_ms"] = ms(value)
    figures[f"{name}_ratio"] = round(medians[runtimes.RUNSC] / medians[runtimes.RUNC], 2)


def _starts(engine: Engine, specs: dict[str, SandboxSpec], count: int,
            figures: dict[str, Any]) -> None:
    seen: dict[str, list[int]] = {rt: [] for rt in RUNTIMES}
    for _ in range(count):
        for rt in RUNTIMES:
            box = Sandbox(engine, specs[rt])
            began = time.monotonic_ns()
            with box:
                seen[rt].append(time.monotonic_ns() - began)
    _side_by_side("start", seen, figures)
    figures["starts"] = count


def _calls(boxes: dict[str, Sandbox], execs: int, figures: dict[str, Any]) -> None:
    seen: dict[str, list[int]] = {rt: [] for rt in RUNTIMES}
    for _ in range(execs):
        for rt in RUNTIMES:
            seen[rt].append(_plain_exec(boxes[rt], ["true"]))
    _side_by_side("exec", seen, figures)
    figures["execs"] = execs


def _helper_calls(boxes: dict[str, Sandbox], calls: int, work: Path,
                  figures: dict[str, Any]) -> None:
    """`true` through the timing helper as a run measures a command, host bracket."""
    seen: dict[str, list[int]] = {rt: [] for rt in RUNTIMES}
    for i in range(calls):
        for rt in RUNTIMES:
            record = boxes[rt].exec(["true"], work / "calls" / rt / str(i), timeout_s=30,
                                    durable=False)
            if record.outcome != "ok":
                raise SystemExit(f"runtime_bench: `true` through the helper under {rt}: "
                                 f"{record.outcome} {record.helper.get('errors')}")
            seen[rt].append(record.timing["host_bracket_ns"])
    _side_by_side("call", seen, figures)


def _rg(boxes: dict[str, Sandbox], reps: int, files: int, figures: dict[str, Any]) -> None:
    for rt in RUNTIMES:  # page cache warm for both
        _plain_exec(boxes[rt], RG_ARGV)
    seen: dict[str, list[int]] = {rt: [] for rt in RUNTIMES}
    for _ in range(reps):
        for rt in RUNTIMES:
            seen[rt].append(_plain_exec(boxes[rt], RG_ARGV))
    _side_by_side("rg", seen, figures)
    figures.update({"rg_files": files, "rg_reps": reps, "rg_argv": " ".join(RG_ARGV)})


def _sealed_copy(settings: Settings, into: Path) -> Settings:
    """A private project holding the demo suite sealed as this checkout's sources are, on
    the same bench root: a checkout whose scorer changed since the committed seal still
    measures (the committed seal is the lead's to renew, never this script's)."""
    repo = settings.project_root
    for folder in ("arms", "images"):
        shutil.copytree(repo / folder, into / folder, symlinks=True)
    shutil.copytree(repo / "suites" / "demo", into / "suites" / "demo")
    shutil.copy2(repo / "corpus.lock", into / "corpus.lock")
    for source in suite.every_scorer_source(repo):
        target = into / source
        if (repo / source).is_dir():
            shutil.copytree(repo / source, target, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__"))
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(repo / source, target)
    private = Settings(project_root=into, bench_root=settings.bench_root)
    suite.seal(suite.load_suite(private.suites_dir, "demo"), private)
    return private


def _demo(engine: Engine, settings: Settings, figures: dict[str, Any]) -> None:
    """The demo suite once under each runtime, one after the other."""
    with tempfile.TemporaryDirectory(prefix="sandbench-runtime-bench-") as tmp:
        _demo_runs(engine, _sealed_copy(settings, Path(tmp)), figures)


def _demo_runs(engine: Engine, settings: Settings, figures: dict[str, Any]) -> None:
    for rt in RUNTIMES:
        began = time.monotonic()
        run_dir = Path(runner.run(settings, RunOptions("demo", runtime=rt), [pool.one(engine)]))
        figures[f"demo_{rt}_s"] = round(time.monotonic() - began, 2)
        meta = json.loads((run_dir / "run.json").read_text())
        refused = sorted(a for a, d in meta["arms"].items() if d.get("refused"))
        ran = sorted(a for a, d in meta["arms"].items()
                     if not d.get("refused") and not d.get("unavailable"))
        figures[f"demo_{rt}_arms_run"] = ran
        figures[f"demo_{rt}_arms_refused"] = refused
    refused = figures["demo_runsc_arms_refused"]
    # No ratio when runsc refused arms: their wall time is the refusal's, not a suite's.
    figures["demo_ratio"] = None if refused else round(
        figures["demo_runsc_s"] / figures["demo_runc_s"], 2)
    if refused:
        figures["demo_runsc_note"] = (
            f"arms refused under runsc ({', '.join(refused)}): its figure is not a suite's")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--execs", type=int, default=40)
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--starts", type=int, default=10)
    parser.add_argument("--no-demo", action="store_true", help="Leave out the demo suite runs.")
    args = parser.parse_args()
    log.configure(stream=open("/dev/null", "w"))  # noqa: SIM115 - the log lives as long as the process
    settings = load_settings()
    engine = Engine.connect()
    if not runtimes.engine_has(engine.info(), runtimes.RUNSC):
        sys.exit("runtime_bench: the engine has no runsc runtime: " + runtimes.REGISTER_FIX)
    lock = images.ImageLock.load(settings.images_lock)
    (arm,) = arms.load_arms(settings.arms_dir, ["rg"])
    figures: dict[str, Any] = {"runsc_args": list(runtimes.RUNSC_ARGS)}
    with tempfile.TemporaryDirectory(dir=settings.bench_root, prefix="bench-") as tmp:
        work = Path(tmp)
        sizes = workfs.sizes(arm.limits, 0)
        with workfs.mounted(work / "rg", sizes, fresh=True):
            spec = for_arm(lock, arm, "bench-runtime", work / "rg", default_user(), sizes)
            specs = {rt: dataclasses.replace(spec, runtime=rt) for rt in RUNTIMES}
            synth_corpus(work / "rg" / "corpus", args.files)
            _starts(engine, specs, args.starts, figures)
            with Sandbox(engine, specs[runtimes.RUNC]) as runc, \
                    Sandbox(engine, specs[runtimes.RUNSC]) as runsc:
                boxes = {runtimes.RUNC: runc, runtimes.RUNSC: runsc}
                _calls(boxes, args.execs, figures)
                _helper_calls(boxes, args.execs, work, figures)
                _rg(boxes, args.reps, args.files, figures)
    if not args.no_demo:
        _demo(engine, settings, figures)
    atomic_write_json(settings.bench_root / "benchmarks" / "runtime.json", figures)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()

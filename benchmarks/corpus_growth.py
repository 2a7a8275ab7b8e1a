"""What a references call costs as the corpus grows: the demo corpus (44 files) against
MassTransit (the `csharp` pin, about 5,800 files), for rg and ast-grep, measured in one run.

Each arm gets its sandbox on a private copy of each corpus, as a run gives it, and answers the
references command its arm spec renders for a few symbols that exist in that corpus: one cold
call, then warm ones. Per arm and corpus it reports the tracked files, the median in-container
wall of a warm call, the median host bracket, and the overhead per cell (bracket minus wall);
then the growth ratio csharp / demo of each. No suite is needed: the truth is not graded here.

    python -m benchmarks.corpus_growth [--warm 3]
Needs the images built and both corpora fetched (`sandbench corpus fetch csharp`, or offline
`--from` a bare mirror of MassTransit/MassTransit).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from orchestrator import arms, corpus, log
from orchestrator.sandbox import workfs
from orchestrator.engine import Engine
from orchestrator.errors import SandbenchError
from orchestrator.fsutil import atomic_write_json
from orchestrator.images import ImageLock
from orchestrator.sandbox.container import Sandbox
from orchestrator.sandbox.spec import default_user, for_arm
from orchestrator.settings import Settings, load_settings
from orchestrator.suite import LANGUAGES

ARMS = ("rg", "ast-grep")
# (symbol, language) pairs that occur in each corpus at its pin (checked with git grep -w).
SYMBOLS = {
    "demo": (("Money", "csharp"), ("OrderLine", "csharp"), ("StockLevel", "rust")),
    "csharp": (("ConsumeContext", "csharp"), ("IBus", "csharp"),
               ("IPublishEndpoint", "csharp")),
}
TIMEOUT_S = 120.0


def median_ms(values: list[int]) -> float:
    return round(statistics.median(values) / 1e6, 1)


def measure(engine: Engine, settings: Settings, lock: ImageLock, arm: arms.ArmSpec,
            pin: corpus.CorpusPin, tracked_files: int, warm: int, scratch: Path
            ) -> dict[str, Any]:
    """One arm on one corpus: its sandbox on a fresh private copy, 1 cold + `warm` calls per
    symbol."""
    pristine = corpus.corpus_dir(settings, pin.id)
    work = scratch / f"{arm.name}-{pin.id}"
    sizes = workfs.sizes(arm.limits, workfs.tree_bytes(pristine))
    cold: list[dict[str, Any]] = []
    warmed: list[dict[str, Any]] = []
    with workfs.mounted(work, sizes, fresh=True):
        corpus.make_arm_copy(pristine, work / "corpus", pin)
        spec = for_arm(lock, arm, "bench-growth", work, default_user(), sizes)
        with Sandbox(engine, spec) as box:
            box.verify(work / "guards")
            for symbol, language in SYMBOLS[pin.id]:
                argv = arm.render("references", {"symbol": symbol, "lang": language,
                                                 "ext": LANGUAGES[language]})
                for rep in range(1 + warm):
                    rec = box.exec(argv, scratch / "cells" / work.name / symbol / str(rep),
                                   timeout_s=TIMEOUT_S)
                    if rec.outcome != "ok":
                        raise SandbenchError(f"{arm.name} on {pin.id}: references {symbol!r} "
                                             f"ended {rec.outcome}",
                                             fix="pick symbols that occur in the corpus")
                    (warmed if rep else cold).append(rec.timing)
    return {
        "tracked_files": tracked_files, "symbols": [s for s, _ in SYMBOLS[pin.id]],
        "calls": len(cold) + len(warmed),
        "cold_wall_median_ms": median_ms([t["wall_ns"] for t in cold]),
        "warm_wall_median_ms": median_ms([t["wall_ns"] for t in warmed]),
        "warm_bracket_median_ms": median_ms([t["host_bracket_ns"] for t in warmed]),
        "overhead_per_cell_median_ms": median_ms(
            [t["host_bracket_ns"] - t["wall_ns"] for t in cold + warmed]),
    }


def growth(small: dict[str, Any], large: dict[str, Any]) -> dict[str, float]:
    """large / small for each figure that can grow with the corpus."""
    keys = ("tracked_files", "warm_wall_median_ms", "warm_bracket_median_ms",
            "overhead_per_cell_median_ms")
    return {key: round(large[key] / small[key], 2) for key in keys}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm", type=int, default=3, help="warm calls per symbol")
    args = parser.parse_args()
    log.configure(stream=open("/dev/null", "w"))  # noqa: SIM115 - the log lives as long as the process
    settings = load_settings()
    pins = corpus.load_lock(corpus.lock_path(settings))
    try:
        tracked = {cid: corpus.verify_pristine(pins[cid], settings).tracked_files
                   for cid in SYMBOLS}
    except SandbenchError as exc:
        sys.exit(f"corpus_growth: {exc.render()}")
    engine = Engine.connect()
    lock = ImageLock.load(settings.images_lock)
    figures: dict[str, Any] = {"warm_per_symbol": args.warm, "arms": {}}
    with tempfile.TemporaryDirectory(dir=settings.bench_root, prefix="bench-growth-") as tmp:
        for arm in arms.load_arms(settings.arms_dir, list(ARMS)):
            per_corpus = {cid: measure(engine, settings, lock, arm, pins[cid], tracked[cid],
                                       args.warm, Path(tmp)) for cid in SYMBOLS}
            figures["arms"][arm.name] = {**per_corpus, "csharp_over_demo": growth(
                per_corpus["demo"], per_corpus["csharp"])}
    atomic_write_json(settings.bench_root / "benchmarks" / "growth.json", figures)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()

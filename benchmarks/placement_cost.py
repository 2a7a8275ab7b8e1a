"""What an arm's set-up costs by placement: loop mounts made here by root (`loop-here`) against
file systems the engine makes (`engine-made`, what a member of the docker group gets on this
host's engine), on the same engine, interleaved one by one so both see the same load.

One set-up is what a run does for an arm before its first command, and takes down after its
last: the arm's three file systems made, the demo corpus copied in and verified, the sandbox
started and every guard verified, then all of it taken down. Both placements are driven by
root here; the engine-made one is chosen exactly as for a user who may not loop-mount
(`Member.mounts_here` false). Prints the median of each and their ratio, and writes
bench/benchmarks/placement_cost.json. Needs root, the built images (engine-agent included)
and the fetched demo corpus.

    python -m benchmarks.placement_cost [--arm rg] [--rounds 7]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import publish
from orchestrator import arms, corpus, placement
from orchestrator.run import rundir
from orchestrator.sandbox import one_sandbox
from orchestrator.engine import Engine
from orchestrator.sandbox.spec import default_user
from orchestrator.settings import Settings, load_settings
from orchestrator.run import pool


def _member(engine: Engine, settings: Settings, run_id: str, mounts_here: bool
            ) -> pool.Member:
    """This engine as a run's member, its placement the one asked for (engine-made as for a
    user who may not loop-mount here)."""
    one = pool.one(engine)
    one.mounts_here = mounts_here
    placement.open_engine(one, settings, run_id)
    return one


def set_up_once(one: pool.Member, settings: Settings, arm: arms.ArmSpec,
                pristine: tuple[Path, corpus.CorpusPin], run_id: str, run_dir: Path) -> float:
    """Seconds for one arm's whole set-up and take-down on `one`'s placement."""
    began = time.monotonic()
    with one_sandbox.arm_sandbox(one, settings, arm, run_id, run_dir, default_user(),
                                 pristine=pristine) as box:
        box.verify(run_dir / "guards" / arm.name)
    return time.monotonic() - began


def measure(settings: Settings, arm_name: str, rounds: int) -> dict[str, Any]:
    engine = Engine.connect()
    (arm,) = arms.load_arms(settings.arms_dir, [arm_name])
    lock_file = corpus.lock_path(settings)
    pin = corpus.pin_for(corpus.load_lock(lock_file), "demo", lock_file)
    corpus.verify_pristine(pin, settings)
    pristine = (corpus.corpus_dir(settings, pin.id), pin)
    run_id, run_dir = rundir.create(settings.runs_dir, "placement-cost")
    members = {"loop-here": _member(engine, settings, run_id, True),
               "engine-made": _member(engine, settings, run_id, False)}
    samples: dict[str, list[float]] = {name: [] for name in members}
    try:
        for i in range(rounds):
            for name, one in members.items():
                with tempfile.TemporaryDirectory(dir=run_dir, prefix=f"{name}-{i}-") as tmp:
                    samples[name].append(set_up_once(one, settings, arm, pristine, run_id,
                                                     Path(tmp)))
    finally:  # the engine-made work volume
        placement.close_engine(members["engine-made"])
    medians = {name: statistics.median(s) for name, s in samples.items()}
    return {"arm": arm_name, "rounds": rounds, "corpus": "demo",
            "median_s": {k: round(v, 3) for k, v in medians.items()},
            "samples_s": {k: [round(x, 3) for x in v] for k, v in samples.items()},
            "engine_made_over_loop_here": round(medians["engine-made"] / medians["loop-here"],
                                                2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arm", default="rg")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    publish("placement_cost", measure(load_settings(), args.arm, args.rounds))


if __name__ == "__main__":
    main()

"""The sandbox self-check: start each arm's container exactly as a run would, verify every
guard from outside and inside, optionally run one command, and remove the container."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orchestrator import arms as arms_mod, images, log
from orchestrator.run import rundir
from orchestrator.sandbox import one_sandbox, runtimes
from orchestrator.engine import Engine
from orchestrator.errors import GuardViolation
from orchestrator.images import ImageLock
from orchestrator.isolation import guards
from orchestrator.isolation.policy import GuardResult
from orchestrator.run import pool
from orchestrator.sandbox.spec import default_user
from orchestrator.settings import Settings
from orchestrator.run.transcripts import ExecRecord

logger = log.get(__name__)


@dataclass(frozen=True)
class ArmCheck:
    arm: str
    results: list[GuardResult]
    refused: str | None
    unavailable: str | None = None  # its image needs an artifact nobody supplied

    @property
    def ok(self) -> bool:
        return self.refused is None and not guards.failures(self.results)


def check(engine: Engine, settings: Settings, names: list[str],
          runtime: str = runtimes.DEFAULT) -> tuple[Path, list[ArmCheck]]:
    specs = arms_mod.load_arms(settings.arms_dir, names)
    lock = ImageLock.load(settings.images_lock)
    recipes = images.load_recipes(settings.images_dir)
    checks = []
    runnable = []
    for arm in specs:
        recipe = recipes.get(arm.image)
        if recipe is not None and recipe.artifact and arm.image not in lock.images:
            checks.append(ArmCheck(arm.name, [], None, f"needs --artifact {recipe.artifact}="
                                   f"PATH to build image {arm.image!r}"))
            continue
        lock.image_id(arm.image)  # every other image exists before any container starts
        runnable.append(arm)
    run_id, run_dir = rundir.create(settings.runs_dir, "check")
    log.configure(run_dir / "log.jsonl")
    if runnable:
        with one_sandbox.member(engine, settings, run_id, default_user()) as one:
            checks += [_check_arm(one, settings, arm, run_id, run_dir, runtime)
                       for arm in runnable]
    return run_dir, checks


def _check_arm(one: pool.Member, settings: Settings, arm: arms_mod.ArmSpec,
               run_id: str, run_dir: Path, runtime: str) -> ArmCheck:
    with one_sandbox.arm_sandbox(one, settings, arm, run_id, run_dir, default_user(),
                                 runtime=runtime) as box:
        try:
            return ArmCheck(arm.name, box.verify(run_dir / "guards" / arm.name), None)
        except GuardViolation as exc:
            stored = guards.audit(run_dir)
            results = next(a.results for a in stored if a.arm == arm.name)
            return ArmCheck(arm.name, results, exc.what)


def exec_once(engine: Engine, settings: Settings, name: str, argv: list[str],
              timeout_s: float, runtime: str = runtimes.DEFAULT) -> tuple[Path, ExecRecord]:
    """Start one arm's sandbox, verify it, run `argv` once and keep its transcript."""
    (arm,) = arms_mod.load_arms(settings.arms_dir, [name])
    ImageLock.load(settings.images_lock).image_id(arm.image)
    run_id, run_dir = rundir.create(settings.runs_dir, "exec")
    log.configure(run_dir / "log.jsonl")
    user = default_user()
    with one_sandbox.member(engine, settings, run_id, user) as one, \
            one_sandbox.arm_sandbox(one, settings, arm, run_id, run_dir, user,
                                    runtime=runtime) as box:
        box.verify(run_dir / "guards" / arm.name)
        record = box.exec(argv, run_dir / "cells" / arm.name / "exec", timeout_s=timeout_s)
    return run_dir, record

"""Every reason a run could not start, collected at once: the one pre-flight of `sandbench
run` (which stops at them, listing them all) and `sandbench run --dry-run` (which prints them
all instead of running). It makes the run's plan and connects its engines: the run uses
both, so the suite is planned once.

What it checks is what a run needs before its first container: the run directory to resume,
the engines, the suite and its arms, their images, the corpus, the seal, and each arm's
container runtime on every engine of the run.
Which placement each engine gets, and what that placement needs there (root here, or the
engine agent's image and loop devices there), is checked when the engine is made ready
(`run.ready.prepare`), in a pre-flight sandbox, on the local engine too."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from orchestrator import suite
from orchestrator.run import document as run_document
from orchestrator.sandbox import runtimes
from orchestrator.engine import Engine
from orchestrator.errors import InputError, SandbenchError
from orchestrator.run import pool
from orchestrator.run.options import RunOptions
from orchestrator.run.plan import Plan, plan
from orchestrator.settings import Settings

T = TypeVar("T")


@dataclass(frozen=True)
class Problem:
    text: str
    exit_code: int  # 2: an input is wrong; 1: something the run needs is missing
    error: SandbenchError | None = None  # what the run itself would raise, when it is one

    @classmethod
    def of(cls, err: SandbenchError) -> Problem:
        return cls(err.what + (f" (fix: {err.fix})" if err.fix else ""), err.exit_code, err)


def attempt(problems: list[Problem], step: Callable[[], T]) -> T | None:
    """The step's result, or None with its error added to the problems."""
    try:
        return step()
    except SandbenchError as err:
        problems.append(Problem.of(err))
        return None


@dataclass(frozen=True)
class Preflight:
    """What the pre-flight found: the plan (None when the suite could not be planned), the
    engines it connected, and every problem."""

    plan: Plan | None
    members: tuple[pool.Member, ...]
    problems: tuple[Problem, ...]

    def ready(self) -> tuple[Plan, tuple[pool.Member, ...]]:
        """The plan and engines to run, or the error listing every problem."""
        if self.problems or self.plan is None:
            raise could_not_start(list(self.problems))
        return self.plan, self.members


def check(settings: Settings, options: RunOptions,
          members: Sequence[pool.Member] | None = None) -> Preflight:
    """Every problem of the run `options` asks for, on `members` (the engines of
    `options.engine_urls`, connected here, when None)."""
    problems = resume_problems(options)
    if members is None:
        members = attempt(problems, lambda: pool.connect(options.engine_urls,
                                                         options.insecure_engine)) or []
    engine = members[0].engine if members else None
    the_plan = attempt(problems, lambda: plan(settings, options.suite, list(options.arms),
                                              engine))
    if the_plan is not None:
        problems += plan_problems(the_plan, settings, options.runtime,
                                  [m.engine for m in members])
    return Preflight(the_plan, tuple(members), tuple(problems))


def resume_problems(options: RunOptions) -> list[Problem]:
    """A run directory to resume that is not one."""
    if options.resume is not None and not run_document.path(options.resume).is_file():
        return [Problem.of(InputError(f"--resume {options.resume}: no run.json: not a run "
                                      "directory to resume", file=str(options.resume)))]
    return []


def plan_problems(the_plan: Plan, settings: Settings, runtime: str | None,
                  engines: Sequence[Engine]) -> list[Problem]:
    """What the plan lacks (images, artifacts, the corpus), a seal the suite's files no
    longer match, and each arm's runtime that an engine of the run does not have."""
    problems = [Problem(item, 1) for item in the_plan.missing]
    problems += _seal_problems(the_plan, settings)
    problems += runtime_problems(the_plan, runtime, engines)
    return problems


def _seal_problems(the_plan: Plan, settings: Settings) -> list[Problem]:
    problems: list[Problem] = []
    name = the_plan.suite.name
    diffs = attempt(problems, lambda: suite.verify_seal(the_plan.suite, settings)) or []
    return problems + [Problem.of(InputError(
        f"suite {name!r}: {d.file} changed since the seal (sealed {d.expected}, now {d.found})",
        fix=f"review the change, then: sandbench suite seal {name}", file=d.file))
        for d in diffs]


def runtime_problems(the_plan: Plan, override: str | None, engines: Sequence[Engine]
                     ) -> list[Problem]:
    """Each arm whose container runtime an engine of the run lacks (the run refuses it)."""
    problems: list[Problem] = []
    for a in the_plan.available:
        wanted = the_plan.suite.runtime.of(a.name, override)
        if wanted == runtimes.RUNC:
            continue
        for e in engines:
            info = attempt(problems, e.info)
            if info is not None and not runtimes.engine_has(info, wanted):
                problems.append(Problem(f"arm {a.name!r} asks for the container runtime "
                                        f"{wanted!r}, which the engine {e.address} does not "
                                        f"have (fix: {runtimes.REGISTER_FIX})", 1))
    return problems


def could_not_start(problems: list[Problem]) -> SandbenchError:
    """One problem: the run's own error for it, as the run would print it. Several: one
    error listing them, exit 2 when any is bad input, else 1."""
    kind = InputError if any(p.exit_code == 2 for p in problems) else SandbenchError
    if len(problems) == 1:
        return problems[0].error or kind(f"the run could not start: {problems[0].text}")
    listed = "; ".join(f"({i}) {p.text}" for i, p in enumerate(problems, 1))
    return kind(f"the run could not start: {len(problems)} problems", why=listed,
                problems=[p.text for p in problems])

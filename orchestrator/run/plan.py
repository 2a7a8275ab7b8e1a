"""The plan of a run: which arms of the suite answer which tasks, with which locked image,
and what is missing for them, read without starting anything. A run plans once: its
pre-flight (`run.preflight`) makes the plan the run then follows."""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator import arms, corpus, images, suite
from orchestrator.engine import Engine
from orchestrator.errors import InputError
from orchestrator.images import ImageLock
from orchestrator.settings import Settings


@dataclass(frozen=True)
class ArmPlan:
    name: str
    spec: arms.ArmSpec
    image_id: str | None
    tool_version: str
    unavailable: str | None
    cells: tuple[tuple[str, int], ...]  # (task id, rep) in execution order


@dataclass(frozen=True)
class Plan:
    suite: suite.Suite
    arms: tuple[ArmPlan, ...]
    missing: tuple[str, ...]  # what stops the run: images not built or stale, corpus absent

    @property
    def available(self) -> list[ArmPlan]:
        return [a for a in self.arms if a.unavailable is None]

    @property
    def total_cells(self) -> int:
        return sum(len(a.cells) for a in self.available)


def _cells(spec: arms.ArmSpec, the_suite: suite.Suite) -> tuple[tuple[str, int], ...]:
    return tuple((task.id, rep) for task in the_suite.tasks if task.kind in spec.tasks
                 for rep in range(the_suite.reps + 1))


def suite_images(settings: Settings, suite_name: str) -> list[str]:
    """The images a run of the suite starts: each of its arms' image, in the suite's order.
    An oracle's image is not among them: `sandbench truth build` runs it, and the truth it
    made is sealed with the suite, so a run never needs it."""
    the_suite = suite.load_suite(settings.suites_dir, suite_name)
    wanted = [spec.image for spec in arms.load_arms(settings.arms_dir, list(the_suite.arms))]
    return list(dict.fromkeys(wanted))


def plan(settings: Settings, suite_name: str, only: list[str] | None = None,
         engine: Engine | None = None) -> Plan:
    """What a run would do, and what is missing, without starting anything."""
    the_suite = suite.load_suite(settings.suites_dir, suite_name)
    names = list(the_suite.arms)
    if only:
        unknown = [n for n in only if n not in names]
        if unknown:
            raise InputError(f"arm {unknown[0]!r} is not in suite {suite_name!r}",
                             fix=f"the suite's arms: {', '.join(names)}")
        names = [n for n in names if n in only]
    specs = arms.load_arms(settings.arms_dir, names)
    if oracles := [s for s in specs if s.kind == "oracle"]:
        raise InputError.bad_value(the_suite.path / "suite.toml", "arms",
                                   "arms that answer tasks (an oracle is named in [oracle] and "
                                   "run by sandbench truth build)", oracles[0].name)
    for task in the_suite.tasks:
        for spec in specs:
            if task.kind not in spec.tasks and task.kind not in spec.not_attempted:
                raise InputError.bad_value(spec.path, f"tasks.{task.kind}",
                                           "an argv, or a [not_attempted." + task.kind + "] "
                                           f"entry (suite {suite_name!r} has {task.kind} "
                                           "tasks)", None)
    recipes = images.load_recipes(settings.images_dir)
    lock = ImageLock.load(settings.images_lock)
    checks = {c.name: c for c in images.verify(engine, settings)} if engine else {}
    missing: list[str] = []
    planned = []
    for spec in specs:
        recipe = recipes.get(spec.image)
        if recipe is None:
            raise InputError.bad_value(spec.path, "image", f"one of {sorted(recipes)}",
                                       spec.image)
        entry = lock.images.get(spec.image)
        unavailable = None
        if recipe.artifact and entry is None:
            unavailable = (f"no {recipe.artifact} binary was supplied: build its image with "
                           f"`sandbench images build {spec.image} --artifact "
                           f"{recipe.artifact}=PATH`")
        elif entry is None:
            missing.append(f"image {spec.image!r} is not built (sandbench images build)")
        elif spec.image in checks and checks[spec.image].status != "ok":
            missing.append(f"image {spec.image!r} is {checks[spec.image].status}: "
                           f"{checks[spec.image].detail}")
        planned.append(ArmPlan(spec.name, spec, entry["image_id"] if entry else None,
                               entry.get("tool_version", "") if entry else "", unavailable,
                               _cells(spec, the_suite)))
    if corpus.read_info(settings, the_suite.corpus) is None:
        missing.append(f"corpus {the_suite.corpus!r} is not fetched: "
                       f"{corpus.fetch_hint(settings, the_suite.corpus)}")
    return Plan(the_suite, tuple(planned), tuple(missing))

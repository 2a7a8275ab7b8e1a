"""Integration fixtures: the real images, built once from the recipes into the project's
bench root (a rebuild happens only when a recipe changed), on the real engine (the `engine`
fixture of tests/conftest.py). Containers a test starts are removed by their recorded id."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from benchmarks.second_engine import SecondEngine, second_dockerd
from orchestrator import images
from orchestrator.engine import Engine
from orchestrator.score import scorer
from orchestrator.settings import Settings, load_settings
from orchestrator.suite import every_scorer_source


@pytest.fixture(scope="session")
def built(engine: Engine) -> Settings:
    """Every image built and locked under the default bench root."""
    settings = load_settings()
    images.build(engine, settings)
    return settings


@contextmanager
def _private_engine(**options: bool) -> Iterator[SecondEngine]:
    """A dockerd of this test's own (benchmarks/second_engine.py) with `options`: the only
    engine a test may stop, kill or restart; the shared engine is never signalled."""
    if os.geteuid() != 0 or shutil.which("dockerd") is None:
        if os.environ.get("CI"):
            pytest.fail("CI runs as root with Debian's docker.io (dockerd)")
        pytest.skip("starting a second dockerd needs root and dockerd")
    shared_bridge = Path("/sys/class/net/docker0")
    had_bridge = shared_bridge.exists()
    with second_dockerd(**options) as daemon:
        yield daemon
    # A dockerd started with --bridge=none deletes docker0: the shared engine's, not its own.
    assert shared_bridge.exists() or not had_bridge, "the second engine removed docker0"


@pytest.fixture
def second_engine(engine: Engine) -> Iterator[SecondEngine]:
    with _private_engine() as daemon:
        yield daemon


@pytest.fixture
def remapped_engine(engine: Engine) -> Iterator[SecondEngine]:
    """A second engine whose containers' ids are remapped (`--userns-remap`)."""
    with _private_engine(userns_remap=True) as daemon:
        yield daemon


@pytest.fixture
def bench(built: Settings, tmp_path: Path) -> Iterator[Settings]:
    """The built images' lock with a private bench root for this test's runs."""
    private = Settings(project_root=built.project_root, bench_root=tmp_path / "bench")
    images.share_lock(built, private.bench_root)
    yield private


PROJECT_INPUTS = ("images", "arms", "suites", "corpus.lock",
                  *every_scorer_source(Path(__file__).resolve().parents[2]))


def project_copy(built: Settings, root: Path) -> Settings:
    """A private copy of the project's inputs (recipes, arms, suites, corpus lock, scorer
    sources) with the built images' lock and the demo corpus fetched, for tests that add
    arms or change a suite without touching the checkout."""
    import shutil

    from orchestrator import corpus
    project = root / "project"
    for part in PROJECT_INPUTS:
        source = built.project_root / part
        if source.is_dir():
            shutil.copytree(source, project / part)
        else:
            (project / part).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, project / part)
    settings = Settings(project_root=project, bench_root=root / "bench")
    images.share_lock(built, settings.bench_root)
    corpus.fetch(corpus.load_lock(project / "corpus.lock")["demo"], settings)
    return settings


def grades_and_bytes(run_dir: Path, settings: Settings) -> dict[tuple[str, str], tuple]:
    """(arm, task) -> verdict, failure, recall, precision and cold payload bytes: what two
    runs of the demo suite must share wherever their cells ran."""
    scores = scorer.score_run(run_dir, settings.suite_dir("demo"), update=True)
    return {(c["arm"], c["task"]): (c["verdict"], c["failure"],
                                    (c["grade"] or {}).get("recall"),
                                    (c["grade"] or {}).get("precision"),
                                    (c["cost"] or {}).get("stdout_bytes"))
            for c in scores["cells"]}

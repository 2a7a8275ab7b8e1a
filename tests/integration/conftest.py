"""Integration fixtures: the real engine and the real images, built once from the recipes
into the project's bench root (a rebuild happens only when a recipe changed). Containers a
test starts are removed by their recorded id."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator import images
from orchestrator.engine import Engine
from orchestrator.settings import Settings, load_settings


@pytest.fixture(scope="session")
def engine() -> Engine:
    return Engine.connect()


@pytest.fixture(scope="session")
def built(engine: Engine) -> Settings:
    """Every image built and locked under the default bench root."""
    settings = load_settings()
    images.build(engine, settings)
    return settings


@pytest.fixture
def bench(built: Settings, tmp_path: Path) -> Iterator[Settings]:
    """The built images' lock with a private bench root for this test's runs."""
    private = Settings(project_root=built.project_root, bench_root=tmp_path / "bench")
    private.bench_root.mkdir()
    (private.bench_root / "images.lock").write_bytes(built.images_lock.read_bytes())
    yield private

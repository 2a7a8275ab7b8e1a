"""Where things live. Every location can be overridden from the environment, never guessed."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def _project_root() -> Path:
    """The checkout holding images/, arms/, suites/: the package's parent in an editable
    install, else the working directory; SANDBENCH_PROJECT overrides both."""
    if env := os.environ.get("SANDBENCH_PROJECT"):
        return Path(env).resolve()
    if (PACKAGE_DIR.parent / "images").is_dir():
        return PACKAGE_DIR.parent
    return Path.cwd()


@dataclass(frozen=True)
class Settings:
    project_root: Path
    bench_root: Path

    @property
    def images_dir(self) -> Path:
        return self.project_root / "images"

    @property
    def arms_dir(self) -> Path:
        return self.project_root / "arms"

    @property
    def suites_dir(self) -> Path:
        return self.project_root / "suites"

    def suite_dir(self, name: str) -> Path:
        """The folder of suite NAME: suites/NAME in the project."""
        return self.suites_dir / name

    @property
    def images_lock(self) -> Path:
        """Host state: image ids are per host, so the lock lives under the bench root."""
        return self.bench_root / "images.lock"

    @property
    def runs_dir(self) -> Path:
        return self.bench_root / "runs"


def load_settings(bench_root: Path | None = None) -> Settings:
    project = _project_root()
    root = bench_root or Path(os.environ.get("SANDBENCH_ROOT", project / "bench"))
    return Settings(project_root=project, bench_root=Path(root).resolve())

"""The two runs `sandbench compare` reads, and whether they may stand side by side.

A run directory is untrusted: run.json and scores.json are read only through their own readers
(`run_document.read`, `report.scores.load_scores`), and only once each is known to be a regular
file inside the run directory (no symlink out of it) no larger than `MAX_DOCUMENT_BYTES`.

Two runs are comparable when they were made with the same sealed suite (the same
`manifest_sha256`), or when one run's suite declares the other's seal in its sealed suite.toml:

    comparable_with = ["demo@57f72cddb9f5dc90b344fe4dad0ab8daf9d5de6cc15f3ff7dd69aff98538a031"]

(`SUITE@MANIFEST_SHA256`: the other suite's name and the sha256 of its manifest.json). The
declaration is read from suites/NAME of the project and trusted only if that suite.toml is the
one the declaring run's seal holds. Anything else is refused with one error naming both seals.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.run import document as run_document
from orchestrator.errors import InputError
from orchestrator.fsutil import read_json, read_toml
from orchestrator.report.scores import load_scores
from orchestrator.run.document import RunDoc
from orchestrator.score.scorer import SCORES_NAME
from orchestrator.suite.model import (COMPARABLE_KEY, COMPARABLE_SHAPE, MANIFEST,
                                      comparable_seals)
from orchestrator.untrusted import limits

# run.json and scores.json are the host's own writing; bigger than this they are not.
MAX_DOCUMENT_BYTES = limits.JSON_MAX_CHARS


@dataclass(frozen=True)
class ScoredRun:
    """One side of a comparison: its run.json and its checked scores.json."""

    run_dir: Path
    run: RunDoc
    scores: dict[str, Any]

    @property
    def seal(self) -> str:
        return self.run.suite.manifest_sha256

    @property
    def label(self) -> str:
        """`SUITE@SEAL12`, the form errors and documents name a run's suite by."""
        return f"{self.run.suite.name}@{self.seal[:12]}"


def _bounded(run_dir: Path, name: str, fix: str) -> Path:
    """RUN_DIR/NAME if it is a regular file of the run directory itself, within the size
    bound; one InputError naming it otherwise."""
    file = run_dir / name
    try:
        info = os.lstat(file)
    except FileNotFoundError:
        raise InputError(f"{file} is missing", fix=fix, file=str(file)) from None
    except OSError as exc:
        raise InputError(f"{file} cannot be read: {exc.strerror}", file=str(file)) from None
    if not stat.S_ISREG(info.st_mode):
        raise InputError.bad_value(file, "(file type)", "a regular file inside the run "
                                   "directory (not a link)", stat.filemode(info.st_mode))
    if info.st_size > MAX_DOCUMENT_BYTES:
        raise InputError.bad_value(file, "(size)", f"at most {MAX_DOCUMENT_BYTES} bytes",
                                   info.st_size)
    return file


def read_scored_run(run_dir: Path) -> ScoredRun:
    """A finished, scored run: its run.json and scores.json, which must name the same run and
    seal."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir() or run_dir.is_symlink():
        raise InputError(f"{run_dir} is not a run directory", fix="give a run directory "
                         "(bench/runs/RUN_ID) that exists", file=str(run_dir))
    _bounded(run_dir, run_document.RUN_JSON, "give a run directory (bench/runs/RUN_ID)")
    run = run_document.read(run_dir)
    if run.status not in run_document.FINISHED:
        raise InputError.bad_value(run_document.path(run_dir), "status", " or ".join(
            repr(s) for s in run_document.FINISHED), run.status,
            fix=f"finish the run, then score it: sandbench run SUITE --resume {run_dir}")
    scores_file = _bounded(run_dir, SCORES_NAME, f"score the run first: sandbench score "
                           f"{run_dir}")
    scores = load_scores(scores_file)
    for key, found, expected in (("run.run_id", scores["run"]["run_id"], run.run_id),
                                 ("suite.manifest_sha256", scores["suite"]["manifest_sha256"],
                                  run.suite.manifest_sha256)):
        if found != expected:
            raise InputError.bad_value(scores_file, key, f"{expected!r} (run.json)", found,
                                       fix=f"score the run again: sandbench score {run_dir} "
                                           "--update")
    return ScoredRun(run_dir, run, scores)


def _declared(suite_dir: Path, run: ScoredRun) -> tuple[str, ...]:
    """The seals suite.toml of `run`'s suite declares comparable, if that suite.toml is the
    sealed one of the run; () when the suite is not in the project."""
    toml_file = suite_dir / "suite.toml"
    manifest_file = suite_dir / MANIFEST
    if not toml_file.is_file() or not manifest_file.is_file():
        return ()
    if hashlib.sha256(manifest_file.read_bytes()).hexdigest() != run.seal:
        return ()  # the project's suite is not the one this run sealed: its word is not the run's
    manifest = read_json(manifest_file)
    inputs = manifest.get("inputs") if isinstance(manifest, dict) else None
    key = f"suites/{run.run.suite.name}/suite.toml"
    sealed = inputs.get(key) if isinstance(inputs, dict) else None
    if sealed != hashlib.sha256(toml_file.read_bytes()).hexdigest():
        raise InputError(f"{toml_file}: differs from the seal of suite {run.label}",
                         fix="restore the suite as it was sealed", file=str(toml_file), key=key)
    value = read_toml(toml_file).get(COMPARABLE_KEY, [])
    seals = comparable_seals(value)
    if seals is None:
        raise InputError.bad_value(toml_file, COMPARABLE_KEY, COMPARABLE_SHAPE, value)
    return seals


def comparability(a: ScoredRun, b: ScoredRun, suites_dir: Path) -> str:
    """How the two runs may be compared (a sentence for the document), or one InputError
    naming both seals."""
    if a.seal == b.seal:
        return f"both runs were made with the same sealed suite {a.label}"
    for declaring, other in ((b, a), (a, b)):
        wanted = f"{other.run.suite.name}@{other.seal}"
        if wanted in _declared(suites_dir / declaring.run.suite.name, declaring):
            return (f"suite {declaring.label} declares itself comparable with suite "
                    f"{other.label} ({COMPARABLE_KEY} in its sealed suite.toml)")
    raise InputError(f"the runs were made with different suites that are not declared "
                     f"comparable: {a.label} ({a.seal}) and {b.label} ({b.seal})",
                     why=f"{a.run_dir} and {b.run_dir}",
                     fix=f'compare two runs of one sealed suite, or declare {COMPARABLE_KEY} '
                         f'= ["{a.run.suite.name}@{a.seal}"] in the suite.toml of '
                         f"{b.run.suite.name} and seal it",
                     key=COMPARABLE_KEY, expected=a.seal, found=b.seal)

"""The seal of a suite: a manifest that hashes every input that decides a number (the suite's
files, its arms' specs, the scorer's own sources and its arms' parser modules, the corpus pin)
before any arm runs, and the check that they are still what was sealed."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from orchestrator import corpus, importgraph, parsers
from orchestrator.errors import InputError
from orchestrator.predictions.model import PREDICTIONS
from orchestrator.fsutil import atomic_write_json, read_json, read_toml, sha256_file
from orchestrator.settings import Settings
from orchestrator.suite.model import (COMMAND_OUTPUTS, MANIFEST, PARSERS_PACKAGE,
                                      PREREGISTRATION, RECORDS_DIR, SCORER_ENTRY, Suite)


def _is_tool_parser(module: str) -> bool:
    """A per-tool parser module (orchestrator.parsers.rg, ...), not the parsers' shared core
    nor one of its `_` helpers."""
    package, _, name = module.rpartition(".")
    return package == PARSERS_PACKAGE and not name.startswith("_")


def parser_module(root: Path, parser: str) -> Path:
    """The source of the parser named `parser` under the project root `root`."""
    return root.joinpath(*PARSERS_PACKAGE.split("."), parsers.module_name(parser) + ".py")


def scorer_sources(root: Path, parser_names: Iterable[str]) -> list[Path]:
    """The scorer's sources under `root`: the modules its entry imports, per-tool parsers
    left out, and the modules of the named parsers with what they import (a name whose module
    is missing adds nothing; the seal checks the arms' names first)."""
    files = set(importgraph.module_files(root, SCORER_ENTRY, stop=_is_tool_parser))
    for name in sorted(set(parser_names)):
        if parser_module(root, name).is_file():
            module = f"{PARSERS_PACKAGE}.{parsers.module_name(name)}"
            files.update(importgraph.module_files(root, module))
    return sorted(files)


def every_scorer_source(root: Path) -> list[str]:
    """What the seal of some suite may cover: the scorer's core and every parser module,
    relative to `root` (for copies of the project's inputs)."""
    package = root.joinpath(*PARSERS_PACKAGE.split("."))
    names = [p.stem for p in package.glob("*.py") if _is_tool_parser(f"{PARSERS_PACKAGE}.{p.stem}")]
    return [p.relative_to(root).as_posix() for p in scorer_sources(root, names)]


def _arm_parser(spec: Path, root: Path) -> str | None:
    """The parser an arm spec names, checked to have its module; None for an oracle arm."""
    data = read_toml(spec)
    name = data.get("parser")
    if name is None and data.get("kind") == "oracle":
        return None
    if not isinstance(name, str) or not parser_module(root, name).is_file():
        raise InputError.bad_value(spec, "parser", f"the name of a parser module in "
                   f"{parser_module(root, 'NAME').parent}", name)
    return name


def sealed_inputs(suite: Suite, settings: Settings) -> dict[str, str]:
    """Every input that decides a number, relative to the project root -> its sha256: the
    suite's files, its arms' specs, the scorer's core and the parser modules of its arms."""
    root = settings.project_root
    files = [suite.path / "suite.toml", suite.path / PREREGISTRATION,
             *(t.path for t in suite.tasks),
             *sorted(p for p in (suite.path / RECORDS_DIR).glob("*") if p.is_file()),
             *(settings.arms_dir / f"{arm}.toml" for arm in suite.arms)]
    if (predictions := suite.path / PREDICTIONS).is_file():
        files.append(predictions)  # the suite's registered predictions, when it has them
    if (truth := suite.truth_file()) is not None:
        # The compiler truth and the oracle that made it: sealed only once it is built.
        if not truth.is_file():
            raise InputError(f"suite {suite.name!r} has no compiler truth yet: {truth} is "
                             "missing", fix=f"sandbench truth build {suite.name}",
                             file=str(truth))
        assert suite.oracle is not None
        files += [truth, settings.arms_dir / f"{suite.oracle.arm}.toml"]
    specs = (settings.arms_dir / f"{arm}.toml" for arm in suite.arms)
    names = [name for spec in specs if spec.is_file()
             and (name := _arm_parser(spec, root)) is not None]
    names += [command.output for task in suite.tasks for command in task.commands.values()
              if command.output not in COMMAND_OUTPUTS]  # a task's own parser (rg-heading)
    files += scorer_sources(root, names)
    digests = {}
    for file in files:
        if not file.is_file():
            raise InputError(f"{file} is missing: it is an input of suite {suite.name!r}",
                             file=str(file))
        digests[file.relative_to(root).as_posix()] = sha256_file(file)
    return digests


def corpus_pin(suite: Suite, settings: Settings) -> dict[str, str]:
    lock = corpus.lock_path(settings)
    pin = corpus.pin_for(corpus.load_lock(lock), suite.corpus, lock)
    if pin.sha is None:
        raise InputError.bad_value(suite.path / "suite.toml", "corpus",
                                   "a registered (pinned) corpus", suite.corpus)
    return {"id": pin.id, "repo": pin.repo, "sha": pin.sha}


def seal(suite: Suite, settings: Settings) -> Path:
    manifest = {"version": 1, "suite": suite.name, "corpus": corpus_pin(suite, settings),
                "inputs": sealed_inputs(suite, settings)}
    path = suite.path / MANIFEST
    atomic_write_json(path, manifest)
    return path


@dataclass(frozen=True)
class SealDifference:
    file: str
    expected: str | None
    found: str | None


def verify_seal(suite: Suite, settings: Settings) -> list[SealDifference]:
    """What differs between the manifest and the inputs now; empty when the seal holds."""
    path = suite.path / MANIFEST
    if not path.is_file():
        raise InputError(f"suite {suite.name!r} is not sealed: {path} is missing",
                         fix=f"sandbench suite seal {suite.name}", file=str(path))
    manifest = read_json(path)
    sealed = manifest.get("inputs", {})
    now = sealed_inputs(suite, settings)
    diffs = [SealDifference(f, sealed.get(f), now.get(f)) for f in sorted(set(sealed) | set(now))
             if sealed.get(f) != now.get(f)]
    pin = corpus_pin(suite, settings)
    if manifest.get("corpus") != pin:
        diffs.append(SealDifference("corpus.lock", json.dumps(manifest.get("corpus")),
                                    json.dumps(pin)))
    return diffs


def manifest_sha256(suite: Suite) -> str:
    return hashlib.sha256((suite.path / MANIFEST).read_bytes()).hexdigest()

"""Image recipes: a folder under images/ with a Dockerfile and a recipe.toml, read and
checked, ordered parents first, and hashed.

A recipe's hash covers every file of its folder, the build arguments and the parent image
id, so an unchanged hash with the image present means the image is exactly what the recipe
makes here, and is not rebuilt.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from orchestrator.errors import InputError
from orchestrator.fsutil import canonical_json, read_toml, sha256_bytes, sha256_file

REPOSITORY = "sandbench"
RECIPE_KEYS = {"description", "parent", "tool_version", "bootstrap", "artifact", "target",
               "helper"}
BOOTSTRAP_KEYS = {"suite", "variant", "source_date_epoch"}
HELPER_KEYS = {"stage", "path"}


@dataclass(frozen=True)
class Bootstrap:
    """What mmdebstrap is given. `source_date_epoch` is every timestamp in the tree and the
    image's `created`: a recipe input, so every host that builds the recipe uses the same
    one (a clock, or the mirror's Release date, differs between hosts and hours)."""

    suite: str
    variant: str
    source_date_epoch: int


@dataclass(frozen=True)
class HelperBuild:
    """The timing helper a recipe builds: the Dockerfile stage holding it, and its path."""

    stage: str
    path: str


@dataclass(frozen=True)
class Recipe:
    name: str
    path: Path
    description: str
    parent: str | None
    tool_version: tuple[str, ...]
    bootstrap: Bootstrap | None
    artifact: str | None = None  # a file the user supplies (--artifact NAME=PATH)
    target: str | None = None  # the Dockerfile stage that is the image (default: the last)
    helper: HelperBuild | None = None

    def files_digest(self) -> str:
        """sha256 over (relative path, mode bit for executables, bytes) of every file."""
        parts = []
        for file in sorted(p for p in self.path.rglob("*") if p.is_file()):
            rel = file.relative_to(self.path).as_posix()
            executable = "x" if os.access(file, os.X_OK) else "-"
            parts.append(f"{rel}\0{executable}\0{sha256_file(file)}\n")
        return sha256_bytes("".join(parts).encode())


def _require(cond: bool, file: Path, key: str, expected: str, found: object) -> None:
    if not cond:
        raise InputError.bad_value(file, key, expected, found)


def load_recipe(path: Path) -> Recipe:
    name = path.name
    if not (path / "Dockerfile").is_file():
        raise InputError(f"recipe {name!r} at {path} has no Dockerfile",
                         fix="every folder under images/ is a recipe: add its Dockerfile",
                         file=str(path / "Dockerfile"))
    toml_path = path / "recipe.toml"
    data = read_toml(toml_path)
    unknown = sorted(set(data) - RECIPE_KEYS)
    _require(not unknown, toml_path, unknown[0] if unknown else "", f"one of {sorted(RECIPE_KEYS)}",
             unknown[0] if unknown else None)
    description = data.get("description", "")
    _require(isinstance(description, str), toml_path, "description", "a string", description)
    parent = data.get("parent")
    _require(parent is None or isinstance(parent, str), toml_path, "parent", "a recipe name",
             parent)
    version = data.get("tool_version")
    _require(isinstance(version, list) and bool(version) and all(isinstance(v, str)
             for v in version), toml_path, "tool_version", "a non-empty list of strings",
             version)
    assert isinstance(version, list)  # _require raised otherwise
    bootstrap = None
    if "bootstrap" in data:
        table = data["bootstrap"]
        _require(isinstance(table, dict) and set(table) == BOOTSTRAP_KEYS, toml_path,
                 "bootstrap", f"a table with exactly {sorted(BOOTSTRAP_KEYS)}", table)
        for key in ("suite", "variant"):
            _require(isinstance(table[key], str) and re.fullmatch(r"[a-z0-9-]+", table[key])
                     is not None, toml_path, f"bootstrap.{key}", "a Debian name", table[key])
        epoch = table["source_date_epoch"]
        _require(type(epoch) is int and 0 < epoch < 2**32, toml_path,
                 "bootstrap.source_date_epoch", "seconds since 1970 (a positive integer)", epoch)
        bootstrap = Bootstrap(suite=table["suite"], variant=table["variant"],
                              source_date_epoch=epoch)
    _require((parent is None) == (bootstrap is not None), toml_path, "parent",
             "a parent recipe, or a [bootstrap] table for the root image", parent)
    artifact = data.get("artifact")
    _require(artifact is None or isinstance(artifact, str) and re.fullmatch(r"[a-z0-9-]+",
             artifact) is not None, toml_path, "artifact", "a file name ([a-z0-9-])", artifact)
    target = data.get("target")
    _require(target is None or isinstance(target, str) and re.fullmatch(r"[a-z0-9-]+", target)
             is not None, toml_path, "target", "a Dockerfile stage name", target)
    helper = None
    if "helper" in data:
        table = data["helper"]
        _require(isinstance(table, dict) and set(table) == HELPER_KEYS, toml_path, "helper",
                 f"a table with exactly {sorted(HELPER_KEYS)}", table)
        _require(isinstance(table["stage"], str) and re.fullmatch(r"[a-z0-9-]+", table["stage"])
                 is not None, toml_path, "helper.stage", "a Dockerfile stage name",
                 table["stage"])
        _require(isinstance(table["path"], str) and table["path"].startswith("/"), toml_path,
                 "helper.path", "an absolute path in that stage", table["path"])
        helper = HelperBuild(stage=table["stage"], path=table["path"])
    return Recipe(name=name, path=path, description=description, parent=parent,
                  tool_version=tuple(version), bootstrap=bootstrap, artifact=artifact,
                  target=target, helper=helper)


def load_recipes(images_dir: Path) -> dict[str, Recipe]:
    """Every recipe, in build order (parents first)."""
    found = {p.name: load_recipe(p) for p in sorted(images_dir.iterdir())
             if p.is_dir() and not p.name.startswith(".")}
    ordered: dict[str, Recipe] = {}

    def visit(name: str, chain: tuple[str, ...]) -> None:
        if name in ordered:
            return
        if name in chain:
            raise InputError.bad_value(found[chain[-1]].path / "recipe.toml", "parent",
                                       "a recipe that is not its own ancestor",
                                       " -> ".join(chain + (name,)))
        recipe = found[name]
        if recipe.parent is not None:
            if recipe.parent not in found:
                raise InputError.bad_value(recipe.path / "recipe.toml", "parent",
                                           f"one of {sorted(found)}", recipe.parent)
            visit(recipe.parent, chain + (name,))
        ordered[name] = recipe

    for name in found:
        visit(name, ())
    return ordered


def select(recipes: dict[str, Recipe], names: Iterable[str]) -> list[Recipe]:
    """The named recipes with their ancestors, in build order; an unknown name is an error."""
    wanted: set[str] = set()
    for name in names:
        if name not in recipes:
            raise InputError(f"unknown image {name!r}", fix=f"known images: "
                             f"{', '.join(recipes)}", name=name)
        ancestor: str | None = name
        while ancestor is not None:
            wanted.add(ancestor)
            ancestor = recipes[ancestor].parent
    return [r for n, r in recipes.items() if n in wanted] if wanted else list(recipes.values())


def recipe_hash(recipe: Recipe, build_args: dict[str, str], parent_id: str) -> str:
    payload = canonical_json({"files": recipe.files_digest(), "build_args": build_args,
                              "parent_id": parent_id})
    return sha256_bytes(payload.encode())


def tag_for(name: str, rhash: str) -> str:
    return f"{REPOSITORY}/{name}:{rhash[:12]}"

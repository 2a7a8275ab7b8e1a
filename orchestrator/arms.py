"""Arm specs: an arm is data, not code. One TOML per arm under arms/."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.errors import InputError
from orchestrator.sandbox import GIB, MIB, Limits

ARM_KEYS = {"description", "image", "env", "limits"}
LIMIT_KEYS = {"memory_mib", "pids", "cpus", "tmp_mib"}
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class ArmSpec:
    name: str
    path: Path
    image: str
    description: str
    env: dict[str, str]
    limits: Limits = field(default_factory=Limits)


def _bad(path: Path, key: str, expected: str, found: Any) -> InputError:
    return InputError.bad_value(path, key, expected, found)


def load_arm(path: Path) -> ArmSpec:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: arm spec is missing", file=str(path)) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: does not parse: {exc}", file=str(path)) from exc
    if unknown := sorted(set(data) - ARM_KEYS):
        raise _bad(path, unknown[0], f"one of {sorted(ARM_KEYS)}", unknown[0])
    image = data.get("image")
    if not isinstance(image, str) or not image:
        raise _bad(path, "image", "an image recipe name", image)
    description = data.get("description", "")
    if not isinstance(description, str):
        raise _bad(path, "description", "a string", description)
    env = data.get("env", {})
    if not isinstance(env, dict):
        raise _bad(path, "env", "a table of NAME = \"value\"", env)
    for key, value in env.items():
        if not ENV_NAME.match(key) or not isinstance(value, str):
            raise _bad(path, f"env.{key}", "NAME = \"string\"", value)
    return ArmSpec(name=path.stem, path=path, image=image, description=description,
                   env=dict(env), limits=_limits(path, data.get("limits", {})))


def _limits(path: Path, table: Any) -> Limits:
    if not isinstance(table, dict):
        raise _bad(path, "limits", "a table", table)
    if unknown := sorted(set(table) - LIMIT_KEYS):
        raise _bad(path, f"limits.{unknown[0]}", f"one of {sorted(LIMIT_KEYS)}", unknown[0])
    defaults = Limits()
    values = {"memory_mib": defaults.memory_bytes // MIB, "pids": defaults.pids,
              "cpus": defaults.cpus, "tmp_mib": defaults.tmp_bytes // MIB, **table}
    for key in ("memory_mib", "pids", "tmp_mib"):
        if not isinstance(values[key], int) or isinstance(values[key], bool) or values[key] <= 0:
            raise _bad(path, f"limits.{key}", "a positive integer", values[key])
    if not isinstance(values["cpus"], int | float) or values["cpus"] <= 0:
        raise _bad(path, "limits.cpus", "a positive number", values["cpus"])
    return Limits(memory_bytes=values["memory_mib"] * MIB, pids=values["pids"],
                  cpus=float(values["cpus"]), tmp_bytes=values["tmp_mib"] * MIB)


def load_arms(arms_dir: Path, names: list[str] | None = None) -> list[ArmSpec]:
    """The named arms (all when none), each from arms/<name>.toml."""
    available = {p.stem: p for p in sorted(arms_dir.glob("*.toml"))}
    if not names:
        return [load_arm(p) for p in available.values()]
    unknown = [n for n in names if n not in available]
    if unknown:
        raise InputError(f"unknown arm {unknown[0]!r}",
                         fix=f"known arms: {', '.join(available) or '(none)'}", name=unknown[0])
    return [load_arm(available[n]) for n in names]


__all__ = ["ArmSpec", "load_arm", "load_arms", "GIB"]

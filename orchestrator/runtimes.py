"""Which container runtime an arm runs under: `runc` (the host's kernel, the default) or
`runsc` (gVisor: a user-space kernel between the tool and the host's).

A suite declares a default and per-arm choices in its `[runtime]` table, and `sandbench run
--runtime` overrides every arm's for one run. The choice lives with the suite, not the arm:
the same tool is measured under either kernel by the suite that asks, and a suite's runtimes
are sealed with it. Nothing here talks to the engine.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

RUNC = "runc"
RUNSC = "runsc"
RUNTIMES = (RUNC, RUNSC)
DEFAULT = RUNC
# How the engine runs runsc: ptrace (this gVisor has no systrap, and kvm needs virtualisation
# extensions), no network stack of its own (it refuses to start in the root network
# namespace otherwise), and the engine's seccomp profile applied inside the sandbox kernel
# too, so the tool's system calls meet the same filter they meet under runc.
RUNSC_ARGS = ("--platform=ptrace", "--network=none", "--oci-seccomp")
RUNSC_PATH = "/usr/bin/runsc"
REGISTER_FIX = (
    "install Debian's runsc package and register it in the engine's /etc/docker/daemon.json "
    'as "runtimes": ' + json.dumps({RUNSC: {"path": RUNSC_PATH, "runtimeArgs": RUNSC_ARGS}})
    + ", then reload the engine (SIGHUP to dockerd; scripts/ensure-docker does both when it "
    "starts the engine itself), or run the arm under runc (sandbench run --runtime runc)")


@dataclass(frozen=True)
class Choice:
    """A suite's runtimes: its default and the arms that differ from it."""

    default: str = DEFAULT
    arms: dict[str, str] = field(default_factory=dict)

    def of(self, arm: str, override: str | None = None) -> str:
        """The runtime `arm` runs under; a run's override wins over the suite."""
        return override or self.arms.get(arm, self.default)


def problem(table: Any, arms: tuple[str, ...] | list[str]) -> tuple[str, str, Any] | None:
    """Why a suite's `[runtime]` table is wrong, as (key, expected, found), or None."""
    if not isinstance(table, dict):
        return "runtime", "a table with `default` and/or `arms`", table
    if unknown := sorted(set(table) - {"default", "arms"}):
        return f"runtime.{unknown[0]}", "one of ['arms', 'default']", unknown[0]
    if table.get("default", DEFAULT) not in RUNTIMES:
        return "runtime.default", f"one of {list(RUNTIMES)}", table.get("default")
    per_arm = table.get("arms", {})
    if not isinstance(per_arm, dict):
        return "runtime.arms", "a table of arm = runtime", per_arm
    for arm, runtime in per_arm.items():
        if arm not in arms:
            return f"runtime.arms.{arm}", f"one of the suite's arms {list(arms)}", arm
        if runtime not in RUNTIMES:
            return f"runtime.arms.{arm}", f"one of {list(RUNTIMES)}", runtime
    return None


def choice(table: Mapping[str, Any] | None) -> Choice:
    """The Choice of a table `problem` found nothing wrong with (None: every arm runc)."""
    if table is None:
        return Choice()
    return Choice(table.get("default", DEFAULT), dict(table.get("arms", {})))


def engine_has(info: Mapping[str, Any], runtime: str) -> bool:
    """Whether an engine (its `docker info`) has `runtime` registered."""
    return runtime in (info.get("Runtimes") or {})

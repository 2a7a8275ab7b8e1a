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
# How the engine runs runsc: ptrace (systrap, the trixie build's default, measured slower
# here: an exec of `true` 55-62 ms against 32 ms), and no network stack of its own (it refuses
# to start in the root network namespace otherwise). Not --oci-seccomp: this build turns every
# errno rule of the engine's profile into EPERM (it never reads errnoRet: gVisor issue 14688),
# so clone3, which the profile answers ENOSYS for glibc to fall back to clone, fails with
# EPERM and no glibc program can start a thread (measured: rg panics "failed to spawn scoped
# thread", Python "can't start new thread"; without the flag both run). The tool's system
# calls are served by gVisor's sentry, itself held by its own seccomp filter on the host, so
# under runsc the `seccomp` guard reads 0 where runc's reads 2.
RUNSC_ARGS = ("--platform=ptrace", "--network=none")
# Debian's runsc of the trixie suite, pinned by version, kept by scripts/ensure-docker at a
# path of ours that names the build (the script declares the same three; a unit test holds
# them equal).
RUNSC_SUITE = "trixie"
RUNSC_VERSION = "0.0~20240729.0-4+b7"
RUNSC_PATH = f"/usr/local/lib/sandbench/runsc-{RUNSC_VERSION}/runsc"
REGISTER_FIX = (
    f"install runsc {RUNSC_VERSION} (Debian's {RUNSC_SUITE} build: its usr/bin/runsc at "
    f"{RUNSC_PATH}) and register it in the engine's /etc/docker/daemon.json as "
    '"runtimes": ' + json.dumps({RUNSC: {"path": RUNSC_PATH, "runtimeArgs": RUNSC_ARGS}})
    + ", then reload the engine (SIGHUP to dockerd; scripts/ensure-docker does all of it for "
    "an engine it started), or run the arm under runc (sandbench run --runtime runc)")

# Under runsc the container's pids cgroup counts gVisor's own host threads and processes
# besides the tool's: the sentry's, the gofer's, and under ptrace a stub thread and a tracer
# thread per task, which the sentry keeps for reuse after the task ends. Measured with the
# pinned build (ptrace, 2 cores) by reading the cgroup's pids.current from the host, one
# fresh sandbox per count: 39-42 before any exec, 64 after an empty command, and with K live
# `sleep` processes under one shell 95 (K=4), 192 (16), 327 (32), 564 (64), 883 (100), up to
# 1,087 once they ended (100): at most 10.5 host pids per task of the tool
# (`python -m benchmarks.runsc_pids` measures it again). So the engine is asked for the
# arm's own pids plus this overhead (runc counts only the tool's).
RUNSC_PIDS_IDLE = 64  # the sandbox itself, before and just after its first command
RUNSC_PIDS_PER_TASK = 11  # gVisor's host pids for each task of the tool's, beyond the task


def engine_pids(runtime: str, pids: int) -> int:
    """The pids limit the engine is asked for so an arm keeps `pids` of its own."""
    if runtime == RUNC:
        return pids
    return pids + runsc_pids_overhead(pids)


def runsc_pids_overhead(pids: int) -> int:
    """gVisor's own host pids in a sandbox whose tool has up to `pids` tasks."""
    return RUNSC_PIDS_IDLE + RUNSC_PIDS_PER_TASK * pids


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

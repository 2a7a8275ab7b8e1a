"""Whether an engine enforces the limits an arm declares (memory, pids, CPU). A rootless
engine on cgroup v1, or on cgroup v2 without the memory, pids and cpu controllers delegated
to its user, accepts `--memory 64m --pids-limit 8` without a word and enforces neither; its
own `docker info` says so (CgroupDriver `none`; MemoryLimit, PidsLimit or CpuCfsQuota
false; a warning). Such an engine's arms are refused by name, with the fix, unless the user
accepts unbounded limits (`--accept-unbounded-limits`): then run.json's deviations and the
disclosure say that the arms ran without them.

This is the engine's own account, read before any container starts; the sandbox's inside
checks read the limits its cgroup applies."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from orchestrator.untrusted.text import terminal

GUARD = "engine_limits"
ACCEPT_OPTION = "--accept-unbounded-limits"
NO_CGROUPS = "none"  # the cgroup driver of a rootless engine that has no cgroup of its own
# Each limit an arm declares, and the `docker info` boolean saying the engine enforces it.
CONTROLS = (("memory", "MemoryLimit"), ("pids", "PidsLimit"), ("cpu", "CpuCfsQuota"))
# Warnings of `docker info` kept with the facts: those about cgroups and these limits,
# each cut to a line's length, a bounded number of them.
WARNING_WORDS = ("cgroup", "memory limit", "pids limit", "cpu cfs")
WARNINGS_KEPT, WARNING_CHARS = 8, 300
EXPECTED = "memory, pids and cpu limits enforced by the engine's cgroups"
FIX = ("a rootful engine, or cgroup v2 (boot with systemd.unified_cgroup_hierarchy=1) with "
       "the memory pids cpu controllers delegated to the engine's user (systemd: a drop-in "
       "for user@.service with Delegate=memory pids cpu), then restart the engine; or run "
       f"with {ACCEPT_OPTION}, and the disclosure says the arms ran without limits")


def facts(info: Mapping[str, Any]) -> dict[str, Any]:
    """What the engine says of its cgroups and the limits it can enforce."""
    warnings = [str(w)[:WARNING_CHARS] for w in info.get("Warnings") or []
                if any(word in str(w).lower() for word in WARNING_WORDS)]
    return {"cgroup_version": str(info.get("CgroupVersion") or ""),
            "cgroup_driver": str(info.get("CgroupDriver") or ""),
            **{name: bool(info.get(key)) for name, key in CONTROLS},
            "warnings": warnings[:WARNINGS_KEPT]}


def unenforced(limits: Mapping[str, Any]) -> list[str]:
    """The limits the engine does not enforce (all of them without a cgroup driver). An
    engine recorded before its limits were has none listed."""
    if not limits:
        return []
    if limits.get("cgroup_driver") == NO_CGROUPS:
        return [name for name, _ in CONTROLS]
    return [name for name, _ in CONTROLS if not limits.get(name)]


def _found(engine: Mapping[str, Any], missing: Iterable[str]) -> str:
    limits = engine.get("limits") or {}
    kind = "rootless" if engine.get("rootless") else "rootful"
    said = "; ".join(limits.get("warnings") or [])
    return (f"a {kind} engine on cgroup v{limits.get('cgroup_version') or '?'} with cgroup "
            f"driver {limits.get('cgroup_driver') or '?'} that enforces no "
            + ", ".join(missing) + " limit" + (f" ({said})" if said else ""))


def refusal(engine: Mapping[str, Any], accepted: bool) -> str | None:
    """Why an arm on the engine of these facts is refused (the guard, expected, found and
    the fix, in one line), or None when it enforces every limit or the user accepted."""
    missing = unenforced(engine.get("limits") or {})
    if not missing or accepted:
        return None
    return terminal(f"{GUARD}: expected {EXPECTED}, found {_found(engine, missing)}; "
                    f"fix: {FIX}")


def note_accepted(deviations: list[str], engines: Iterable[Mapping[str, Any]]) -> None:
    """Add to a run's `deviations` one line per engine whose arms run, accepted, without the
    limits it cannot enforce (once: a resume adds none twice)."""
    for engine in engines:
        if missing := unenforced(engine.get("limits") or {}):
            line = (f"engine {engine.get('id')} is {_found(engine, missing)}: the user "
                    f"accepted unbounded limits ({ACCEPT_OPTION}), so its arms ran without "
                    "their declared " + ", ".join(missing) + " limits")
            if line not in deviations:
                deviations.append(line)

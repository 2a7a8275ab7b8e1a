"""The limits a sandbox's cgroup applies, and the tool's own writes, proved from inside.

The engine's inspect says what it was asked for, not what it does: an engine may accept
`--memory 64m --pids-limit 8` and enforce neither (a rootless engine on cgroup v1), and
an engine whose uid mapping gives /state to another uid still reports the mount as asked.
So the probe, as the tool's uid, reads the limit files of its own cgroup and creates a
file where the tool must write (images/base/sandbench-exec.c, probe_cgroup and
probe_writable), and these guards fail when a limit is absent or looser than the policy's,
or a place is not the tool's to write: an outside guard alone never proves a limit.

Runs recorded before these guards carry no `tool_writable` in their policy and are judged
without them. A sandbox on an engine that cannot enforce limits, run because the user
accepted that (`--accept-unbounded-limits`, engine_limits), has its limits read and shown but
not refused: the run's disclosure says its arms ran unbounded.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from orchestrator.isolation.values import UNBOUNDED_ACCEPTED, Check

WRITE_PROBE = ".sandbench-probe-writable"  # the file the probe creates and removes
_NUMBER = re.compile(r"\d{1,20}")
_CPU_LIST = re.compile(r"\d{1,5}(?:-\d{1,5})?(?:,\d{1,5}(?:-\d{1,5})?){0,255}")
NANO = 1_000_000_000
KIB = 1024

# What each guard means under gVisor (runsc), beside inside.UNDER_GVISOR. The probe there
# reads the sandbox kernel's own cgroupfs, which shows no limit of the host's cgroup.
UNDER_GVISOR = {
    "memory_in_force": "gVisor's cgroupfs shows no memory limit; what stands for it is "
                       "MemTotal in the sandbox kernel's /proc/meminfo, which runsc sets from "
                       "the container's memory limit when the sandbox starts (2024-07 build: "
                       "256 MiB asked, 262144 kB shown; without a limit, the host's memory). "
                       "It is the sandbox's view at its start, not a read of the host "
                       "cgroup's file: a limit lifted from that cgroup later would not show",
    "pids_in_force": "NOT proved inside: gVisor's cgroupfs shows pids.max `max`, and the "
                     "host cgroup whose pids.max (`engine_pids`) counts gVisor's own threads "
                     "is out of the sandbox's sight. The guard checks that the probe talked "
                     "to gVisor's kernel and read its pids controller; the limit itself rests "
                     "on the outside pids_limit guard",
    "cpus_in_force": "gVisor's cgroupfs has no CFS quota (-1): what bounds the tool is "
                     "the cpuset the sandbox kernel reports, its CPUs (as many as runsc gave "
                     "it at start), so a policy asking fewer CPUs than that is refused under "
                     "runsc; the quota itself is applied only outside its sight",
    "tool_writable": "as under runc: the tool's uid creates and removes a file in each place "
                     "through gVisor's gofer",
}


def _number(text: Any) -> int | None:
    """A limit file's decimal value; None for `max`, -1, or anything else (no limit)."""
    return int(text) if isinstance(text, str) and _NUMBER.fullmatch(text) else None


def cpu_count(cpus: Any) -> int | None:
    """How many CPUs a cpuset list (`0-1,4`) names; None when it is not one."""
    if not isinstance(cpus, str) or not _CPU_LIST.fullmatch(cpus):
        return None
    count = 0
    for part in cpus.split(","):
        low, _, high = part.partition("-")
        first, last = int(low), int(high or low)
        if last < first:
            return None
        count += last - first + 1
    return count


def _quota(cgroup: dict[str, Any]) -> tuple[int | None, int | None]:
    """The CFS quota and period in microseconds (v1's two files, or v2's cpu.max)."""
    if cgroup.get("version") == "v2":
        quota, _, period = str(cgroup.get("cpu_max") or "").partition(" ")
        return _number(quota), _number(period)
    return _number(cgroup.get("cpu_quota")), _number(cgroup.get("cpu_period"))


def cpus_in_force(cgroup: dict[str, Any]) -> tuple[float | None, str]:
    """The CPUs the tool can use at most (the lower of its CFS quota and its cpuset), and
    how it was read; None when neither bounds it."""
    quota, period = _quota(cgroup)
    cpuset = cgroup.get("cpuset") or cgroup.get("cpuset_cpus")
    bounds = [quota / period] if quota and period else []
    count = cpu_count(cpuset)
    bounds += [count] if count else []
    how = f"quota {quota}/{period} us, cpuset {cpuset!r}"
    return (min(bounds) if bounds else None), how


def _memory(memory_bytes: int, cgroup: dict[str, Any], gvisor: bool) -> Check:
    expected = f"<= {memory_bytes} bytes"
    if gvisor:  # see UNDER_GVISOR
        kb = cgroup.get("meminfo_total_kb")
        total = kb * KIB if isinstance(kb, int) and not isinstance(kb, bool) else None
        return ("memory_in_force", f"MemTotal {expected}",
                f"MemTotal {kb} kB (gVisor's cgroupfs: {cgroup.get('memory_max')})",
                total is not None and 0 < total <= memory_bytes)
    found = _number(cgroup.get("memory_max"))
    return ("memory_in_force", expected, cgroup.get("memory_max"),
            found is not None and 0 < found <= memory_bytes)


def _pids(pids: int, cgroup: dict[str, Any], gvisor: bool, kernel_is_gvisor: bool) -> Check:
    if gvisor:  # see UNDER_GVISOR: not proved inside
        return ("pids_in_force", "gVisor's kernel, its pids controller read (the host "
                "cgroup's pids.max is out of sight)",
                f"pids.max {cgroup.get('pids_max')!r}, "
                f"{'gVisor' if kernel_is_gvisor else 'not gVisor'}'s kernel",
                kernel_is_gvisor and cgroup.get("pids_max") is not None)
    found = _number(cgroup.get("pids_max"))
    return ("pids_in_force", f"<= {pids}", cgroup.get("pids_max"),
            found is not None and 0 < found <= pids)


def _cpus(nano_cpus: int, cgroup: dict[str, Any]) -> Check:
    found, how = cpus_in_force(cgroup)
    return ("cpus_in_force", f"<= {nano_cpus / NANO:g} CPUs",
            f"{found:g} CPUs ({how})" if found is not None else f"no bound ({how})",
            found is not None and found * NANO <= nano_cpus)


def _writable(dirs: list[str], facts: dict[str, Any]) -> Check:
    tried = facts.get("writable")
    by_path = {t.get("path"): t for t in tried if isinstance(t, dict)} \
        if isinstance(tried, list) else {}
    missed = {}
    for directory in dirs:
        entry = by_path.get(f"{directory.rstrip('/')}/{WRITE_PROBE}") or {}
        if entry.get("ok") is not True or entry.get("error") is not None:
            missed[directory] = entry.get("error") or "not tried"
    return ("tool_writable", f"the tool's uid creates and removes a file in {dirs}",
            missed or f"written in {dirs}", not missed)


def _judged(values: dict[str, Any], facts: dict[str, Any], check: Callable[
        [dict[str, Any]], Check]) -> list[Check]:
    """One limit's check of the cgroup the probe read; none for a run recorded before these
    guards (no `tool_writable` in its policy). Read and shown, not refused, when the user
    accepted an engine that cannot enforce limits (see UNBOUNDED_ACCEPTED)."""
    if values.get("tool_writable") is None:
        return []
    cgroup = facts.get("cgroup")
    guard, expected, found, ok = check(cgroup if isinstance(cgroup, dict) else {})
    if values.get(UNBOUNDED_ACCEPTED) is True:
        return [(guard, f"{expected}, or unbounded as the user accepted "
                 f"(--accept-unbounded-limits)", found, True)]
    return [(guard, expected, found, ok)]


def memory(values: dict[str, Any], facts: dict[str, Any], gvisor: bool) -> list[Check]:
    return _judged(values, facts, lambda cgroup: _memory(values["memory_bytes"], cgroup, gvisor))


def pids(values: dict[str, Any], facts: dict[str, Any], gvisor: bool,
         kernel_is_gvisor: bool) -> list[Check]:
    return _judged(values, facts,
                   lambda cgroup: _pids(values["pids"], cgroup, gvisor, kernel_is_gvisor))


def cpus(values: dict[str, Any], facts: dict[str, Any]) -> list[Check]:
    return _judged(values, facts, lambda cgroup: _cpus(values["nano_cpus"], cgroup))


def writable(values: dict[str, Any], facts: dict[str, Any]) -> list[Check]:
    """The tool's writes where it must write; none for a run recorded before them."""
    dirs = values.get("tool_writable")
    return [] if dirs is None else [_writable(list(dirs), facts)]

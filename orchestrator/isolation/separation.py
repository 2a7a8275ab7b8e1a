"""The executor and the tool under two uids, proved from the tool's side.

In every sandbox PID 1 (the executor) is the container's uid 0 holding only CAP_SETUID and
CAP_SETGID, and each command runs as the run's non-root uid with no capability
(images/base/sandbench-exec.c, "Two uids"). The probe takes the tool's uid before it looks,
so each fact here is what a tool could do: read PID 1's ids and capability sets, signal it,
read its environment, open its descriptors. Under runc the dumpable flag would also keep a
same-uid tool out; gVisor ignores that flag, so these guards hold under either runtime only
because the uids differ. Runs recorded before the split carry no `executor_user` in their
policy and none of these guards.
"""

from __future__ import annotations

import re
from typing import Any

from orchestrator.isolation.values import EXECUTOR_CAP_MASK, Check

TOOL_SETS = ("CapInh", "CapPrm", "CapEff")
EXECUTOR_SETS = ("CapPrm", "CapEff", "CapBnd")
_ZERO_ENVIRON = re.compile(r"\d+ bytes read, 0 not zero")

# What each guard means under gVisor (runsc), beside inside.UNDER_GVISOR.
UNDER_GVISOR = {
    "tool_capabilities": "the sets the sandbox kernel keeps for the tool: 0 (gVisor 2022-12 "
                         "prints no CapAmb line; the ambient set is a subset of CapPrm)",
    "executor_uid": "PID 1's uids as the sandbox kernel keeps them: 0, and not the tool's",
    "executor_capabilities": "PID 1's sets as the sandbox kernel keeps them: SETUID and "
                             "SETGID only",
    "executor_signal": "the sandbox kernel refuses the tool's signal to PID 1: its uids "
                       "differ (gVisor would deliver a same-uid SIGKILL and end the sandbox)",
    "executor_environ": "gVisor lets another uid read /proc/1/environ: PID 1 zeroed it at "
                        "start, so it reads back as zeros",
    "executor_fds": "gVisor ignores PR_SET_DUMPABLE: PID 1's descriptors stay closed to the "
                    "tool because their files are PID 1's (uid 0, mode 0600)",
}


def _hex(value: Any) -> int | None:
    try:
        return int(str(value), 16)
    except ValueError:
        return None


def _ids(status: dict[str, Any], key: str) -> list[str]:
    return str(status.get(key) or "").split()


def _pid1(facts: dict[str, Any]) -> dict[str, Any]:
    return facts.get("pid1_status") or {}


def capability_checks(executor_user: str | None, facts: dict[str, Any]) -> list[Check]:
    """The tool's capability sets, and PID 1's: only the executor's two."""
    if executor_user is None:
        return []
    mine, pid1 = facts.get("status") or {}, _pid1(facts)
    amb = mine.get("CapAmb")
    tool_sets = {k: mine.get(k) for k in (*TOOL_SETS, "CapAmb")}
    executor_sets = {k: pid1.get(k) for k in (*EXECUTOR_SETS, "CapInh", "CapAmb")}
    mask = f"{EXECUTOR_CAP_MASK:016x}"
    return [
        ("tool_capabilities", "CapInh, CapPrm, CapEff 0; CapAmb 0 or no line", tool_sets,
         all(_hex(mine.get(k)) == 0 for k in TOOL_SETS) and (amb is None or _hex(amb) == 0)),
        ("executor_capabilities", f"PID 1's CapPrm, CapEff, CapBnd {mask}; CapInh 0; CapAmb 0 "
         "or no line", executor_sets,
         all(_hex(pid1.get(k)) == EXECUTOR_CAP_MASK for k in EXECUTOR_SETS)
         and _hex(pid1.get("CapInh")) == 0
         and (pid1.get("CapAmb") is None or _hex(pid1.get("CapAmb")) == 0)),
    ]


def executor_checks(executor_user: str | None, tool_uid: int, facts: dict[str, Any]
                    ) -> list[Check]:
    """What the tool's uid can do to PID 1: read its ids, signal it, read its environment,
    open its descriptors."""
    if executor_user is None:
        return []
    executor_uid = executor_user.split(":")[0]
    uids = _ids(_pid1(facts), "Uid")
    fd_opens = facts.get("pid1_fd_opens")
    fd_opens = fd_opens if isinstance(fd_opens, dict) else {}
    opened = fd_opens.get("opened")
    return [
        ("executor_uid", f"PID 1's uids all {executor_uid}, the tool's {tool_uid}",
         {"pid1": " ".join(uids) or None, "tool": facts.get("uid")},
         uids == [executor_uid] * 4 and facts.get("uid") == tool_uid
         and str(tool_uid) != executor_uid),
        ("executor_signal", "kill(1, 0) refused: EPERM", facts.get("pid1_signal"),
         str(facts.get("pid1_signal")).startswith("kill: EPERM")),
        ("executor_environ", "/proc/1/environ refused, or only zeros",
         facts.get("pid1_environ"),
         str(facts.get("pid1_environ")).startswith("open: E")
         or _ZERO_ENVIRON.fullmatch(str(facts.get("pid1_environ"))) is not None),
        ("executor_fds", "none of PID 1's descriptors opens",
         opened or (f"none of {fd_opens.get('tried')} opened ({fd_opens.get('listing')})"
                    if opened == [] else "not probed"),
         opened == [] and isinstance(fd_opens.get("tried"), int) and fd_opens["tried"] > 0),
    ]

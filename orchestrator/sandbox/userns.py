"""An engine that remaps its containers' ids (`dockerd --userns-remap`, or a rootless engine,
whose containers live in its user's namespace): container uid U is a host uid of its range,
so what sandbench makes on this host for a container user (the corpus copy, the writable
mounts, a HOME) must be owned by the host's ids of that user, while the container still
sees its own.

`docker info` says whether an engine remaps (`name=userns` or `name=rootless` among its
security options); the mapping itself is read where the kernel keeps it, from a probe
container the engine started (`/proc/PID/uid_map` and `gid_map` of its PID 1 on this host),
never guessed from /etc/subuid or daemon.json. It is decided once per engine and recorded in
run.json's engine entry (`userns`; `rootless` beside it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from orchestrator import labels as lb
from orchestrator.engine import Engine
from orchestrator.errors import SandbenchError

SECURITY_OPTION, ROOTLESS_OPTION = "name=userns", "name=rootless"
# The kernel holds at most 340 lines per map (user_namespaces(7)), each under 40 bytes.
MAP_LINES, MAP_BYTES = 340, 16 << 10
PROBE_SECONDS = 30

Range = tuple[int, int, int]  # (first id inside, first id on the host, how many)


def remaps(info: Mapping[str, Any]) -> bool:
    """Whether `docker info` says the engine runs its containers in a user namespace."""
    return SECURITY_OPTION in (info.get("SecurityOptions") or []) or rootless(info)


def rootless(info: Mapping[str, Any]) -> bool:
    """Whether `docker info` says the engine runs as an unprivileged user (rootless)."""
    return ROOTLESS_OPTION in (info.get("SecurityOptions") or [])


def parse(text: str, where: str) -> tuple[Range, ...]:
    """The ranges of one /proc/PID/{uid,gid}_map, refused unless each line is three ids."""
    ranges = []
    lines = text.splitlines()
    if not lines or len(lines) > MAP_LINES:
        raise SandbenchError(f"{where}: expected 1 to {MAP_LINES} lines, found {len(lines)}",
                             path=where)
    for line in lines:
        fields = line.split()
        if len(fields) != 3 or not all(f.isdigit() for f in fields):
            raise SandbenchError(f"{where}: expected 'INSIDE OUTSIDE COUNT', found {line!r}",
                                 path=where)
        inside, outside, count = (int(f) for f in fields)
        ranges.append((inside, outside, count))
    return tuple(sorted(ranges))


@dataclass(frozen=True)
class IdMap:
    """How an engine's containers' uids and gids are the host's."""

    uids: tuple[Range, ...]
    gids: tuple[Range, ...]

    @classmethod
    def of(cls, facts: Mapping[str, Any]) -> IdMap | None:
        """The mapping an engine's facts record; None when it does not remap."""
        found = facts.get("userns") or {}
        if not found.get("remap"):
            return None
        if "uid_map" not in found:
            raise SandbenchError(f"engine {facts.get('url')} remaps its containers' ids and "
                                 "its mapping was not read", why="files made for its "
                                 "containers would be owned by ids they cannot write",
                                 fix="run.pool.learn_ids before its arms' files are made")
        return cls(_ranges(found["uid_map"]), _ranges(found["gid_map"]))

    def to_json(self) -> dict[str, Any]:
        return {"uid_map": [list(r) for r in self.uids], "gid_map": [list(r) for r in self.gids]}

    def base(self) -> tuple[int, int]:
        """The host uid and gid of the container's uid 0 and gid 0."""
        return _on_host(self.uids, 0, "uid"), _on_host(self.gids, 0, "gid")

    def on_host(self, owner: str) -> str:
        """`uid:gid` as the container sees it -> the same user's `uid:gid` on the host."""
        uid, gid = (int(x) for x in owner.split(":"))
        return f"{_on_host(self.uids, uid, 'uid')}:{_on_host(self.gids, gid, 'gid')}"


def host_owner(owner: str, ids: IdMap | None) -> str:
    """The host's `uid:gid` of the container user `owner` (itself on an engine that does not
    remap)."""
    return owner if ids is None else ids.on_host(owner)


def _ranges(rows: Sequence[Sequence[int]]) -> tuple[Range, ...]:
    return tuple((int(a), int(b), int(c)) for a, b, c in rows)


def _on_host(ranges: Sequence[Range], inside: int, what: str) -> int:
    for first, outside, count in ranges:
        if first <= inside < first + count:
            return outside + inside - first
    raise SandbenchError(f"container {what} {inside} has no {what} on the host",
                         why=f"the engine's user namespace maps only {list(ranges)}",
                         fix="run as a user inside the remapped range (SANDBENCH_USER), or "
                             "widen the engine's subordinate range (/etc/subuid, /etc/subgid)")


def read(pid: int) -> IdMap:
    """The mapping in force for process `pid` of this host, read from the kernel."""
    maps = []
    for name in ("uid_map", "gid_map"):
        where = f"/proc/{pid}/{name}"
        fd = os.open(where, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            raw = os.read(fd, MAP_BYTES)
        finally:
            os.close(fd)
        maps.append(parse(raw.decode("ascii", errors="replace"), where))
    return IdMap(maps[0], maps[1])


def probe(engine: Engine, image_id: str, user: str, run_id: str) -> IdMap:
    """The mapping the kernel applies to the engine's containers, read from a short-lived
    container of `image_id` (no network, no capability) while it runs; refused when that
    container is not in a user namespace of its own, or is not running as it was read."""
    spec = {"image": image_id, "command": ["sleep", str(PROBE_SECONDS)], "user": user,
            "network_mode": "none", "cap_drop": ["ALL"], "read_only": True,
            "security_opt": ["no-new-privileges"], "pids_limit": 8, "mem_limit": 64 << 20,
            "labels": lb.base_labels(**{lb.LABEL_RUN: run_id, lb.LABEL_TEMPORARY: "true"})}
    container = engine.create_container(spec, what="create the user-namespace probe")
    try:
        engine.start(container)
        pid = int(engine.inspect_container(container)["State"]["Pid"])
        own = os.stat(f"/proc/{pid}/ns/user").st_ino != os.stat("/proc/self/ns/user").st_ino
        ids = read(pid)
        state = engine.inspect_container(container)["State"]
    finally:
        engine.remove_container(container)
    if not state.get("Running") or int(state.get("Pid") or 0) != pid:
        raise SandbenchError("the user-namespace probe stopped while its mapping was read",
                             why=f"process {pid} may no longer be the probe's",
                             fix="run again; check the engine's log")
    if not own:
        raise SandbenchError("the engine says userns-remap or rootless, but its container runs "
                             "in this host's user namespace",
                             why=f"/proc/{pid}/ns/user is the host's",
                             fix="check the engine's --userns-remap setting")
    return ids

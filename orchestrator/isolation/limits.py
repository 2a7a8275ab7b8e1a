"""An arm's resource limits: a leaf every module that sizes or bounds a container shares (the
arm files, the sandbox spec, the work file systems, the MCP client's bounds)."""

from __future__ import annotations

from dataclasses import dataclass

GIB = 1 << 30
MIB = 1 << 20


@dataclass(frozen=True)
class Limits:
    memory_bytes: int = 4 * GIB
    pids: int = 512
    cpus: float = 2.0
    tmp_bytes: int = 512 * MIB
    # The writable mounts' own file systems (orchestrator/sandbox/workfs.py); sparse, so a generous
    # bound costs nothing until a tool writes.
    state_bytes: int = 4 * GIB
    out_bytes: int = 1 * GIB
    corpus_margin_bytes: int = 1 * GIB

    @property
    def nano_cpus(self) -> int:
        return int(self.cpus * 1e9)

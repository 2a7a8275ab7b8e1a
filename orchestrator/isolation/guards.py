"""The isolation guards: what a sandbox must look like, checked from outside (the engine's
inspect, and the host's hash of the helper file it mounts) and from inside (the helper's
probe), and re-checked offline by `audit`.

The policy (isolation/policy.py) is plain data stored with the run, and the checks are pure
functions of the policy and the two snapshots, every one folded from the isolation table
(isolation/folds.py), so an auditor on another machine recomputes every verdict from the run
directory alone. Fail closed: a guard that cannot be read is a failed guard.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from orchestrator.errors import InputError
from orchestrator.fsutil import atomic_write_json, read_json
from orchestrator.isolation import folds
from orchestrator.isolation.policy import GuardPolicy, GuardResult
from orchestrator.isolation.values import Check
from orchestrator.sandbox.shared_checks import check_schema


def _results(side: str, checks: list[Check]) -> list[GuardResult]:
    """Each check as a verdict; ok None meaning expected == found."""
    return [GuardResult(guard, side, expected, found, expected == found if ok is None else ok)
            for guard, expected, found, ok in checks]


def helper_facts(path: Path, sha256: str | None, error: str | None) -> dict[str, Any]:
    """The host-side snapshot: the helper file the sandbox mounted, as hashed on the host."""
    return {"helper": {"path": str(path), "sha256": sha256, "error": error}}


def check_outside(policy: GuardPolicy, inspect: dict[str, Any], host_facts: dict[str, Any]
                  ) -> list[GuardResult]:
    """Guards read from the engine's view of the container, and the host's own snapshot of
    the helper file it mounted: every isolation setting's outside checks, in the table's
    order."""
    return _results("outside", folds.outside_checks(policy, inspect, host_facts))


def check_inside(policy: GuardPolicy, probe: dict[str, Any]) -> list[GuardResult]:
    """Guards read from the helper's probe inside the container, plus what the host-side
    loopback canary saw while the probe ran: every isolation setting's inside checks."""
    return _results("inside", folds.inside_checks(policy, probe))


def failures(results: list[GuardResult]) -> list[GuardResult]:
    return [r for r in results if not r.ok]


# -- snapshots on disk ------------------------------------------------------------------------

def store(folder: Path, policy: GuardPolicy, inspect: dict[str, Any], host_snapshot: dict[str, Any],
          probe: dict[str, Any] | None, results: list[GuardResult]) -> None:
    """The snapshots and the verdict, so `audit` can recompute it without an engine."""
    atomic_write_json(folder / "policy.json", policy.to_json())
    atomic_write_json(folder / "inspect.json", inspect)
    atomic_write_json(folder / "host.json", host_snapshot)
    if probe is not None:
        atomic_write_json(folder / "probe.json", probe)
    atomic_write_json(folder / "verdict.json", [asdict(r) for r in results])


@dataclass(frozen=True)
class AuditedArm:
    arm: str
    folder: Path
    results: list[GuardResult]
    matches_stored: bool
    probed: bool

    @property
    def ok(self) -> bool:
        return self.probed and self.matches_stored and not failures(self.results)


def audit(run_dir: Path) -> list[AuditedArm]:
    """Recompute every arm's guards from the stored snapshots, offline."""
    root = run_dir / "guards"
    if not root.is_dir():
        raise InputError(f"{run_dir}: no guards/ folder: not a sandbench run directory",
                         file=str(run_dir))
    audited = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        policy = GuardPolicy.from_json(read_json(folder / "policy.json"), folder / "policy.json")
        inspect = check_schema(folder / "inspect.json", read_json(folder / "inspect.json"),
                               "guard-inspect.schema.json")
        host_snapshot = check_schema(folder / "host.json", read_json(folder / "host.json"),
                                     "guard-host.schema.json")
        results = check_outside(policy, inspect, host_snapshot)
        probed = (folder / "probe.json").exists()
        if probed:
            probe = check_schema(folder / "probe.json", read_json(folder / "probe.json"),
                                 "guard-probe.schema.json")
            results += check_inside(policy, probe)
        stored = read_json(folder / "verdict.json")
        recomputed = json.loads(json.dumps([asdict(r) for r in results]))
        audited.append(AuditedArm(folder.name, folder, results, recomputed == stored, probed))
    return audited

"""The resolver-precision family (methodology, "Resolver precision"): an arm's member-use edges
scored against a compiler oracle's member-access records. The Roslyn oracle cannot run on this
machine, so no suite attempts the family (each C# suite declares it not attempted, with the
reason); this is the audit path a run would be scored by, exercised on fixtures.

Inputs are plain records (the oracle's refs.jsonl and units.jsonl, the graph's defs and
edges), so the scorer never calls the oracle. The join rule is the methodology's: an oracle
record and an edge are the same site when (file, startLine) match, startLine being the line
the whole member-access node starts on.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.errors import InputError
from orchestrator.untrusted import decode as untrusted
from orchestrator.untrusted.errors import HostileInput

TIERS = ("precise", "ext", "guess", "heuristic")
RECALL_TIERS = {"precise": ("precise",), "precise+ext": ("precise", "ext"), "all": TIERS}
HEADLINE_SHAPE = "access"  # conditional (?.) and bare shapes are reported on their own


@dataclass(frozen=True)
class OracleRecord:
    file: str
    line: int
    shape: str  # access | conditional | bare
    external: bool
    target: str
    receiver: str  # ident | qualified | this | base | call


@dataclass(frozen=True)
class Edge:
    file: str
    line: int
    target: str
    tier: str


@dataclass(frozen=True)
class Unit:
    name: str
    ok: bool
    files: frozenset[str]
    references: frozenset[str]


def _ratio(hit: int, total: int) -> float | None:
    return None if total == 0 else round(hit / total, 4)


def _closure(unit: str, units: Mapping[str, Unit]) -> set[str]:
    seen, todo = set(), [unit]
    while todo:
        name = todo.pop()
        if name in seen or name not in units:
            continue
        seen.add(name)
        todo += units[name].references
    return seen


def audit(records: Iterable[OracleRecord], edges: Iterable[Edge], defs: Mapping[str, str],
          units: Mapping[str, Unit] | None = None) -> dict[str, Any]:
    """The family's figures. `defs` maps every target id the graph defines to its unit ('' when
    unknown); `units` (optional) drops failed units' files from both sides and decides
    structural impossibility."""
    units = units or {}
    failed = {f for u in units.values() if not u.ok for f in u.files}
    unit_of = {f: u.name for u in units.values() for f in u.files}
    records = [r for r in records if r.file not in failed]
    edges = [e for e in edges if e.file not in failed]
    by_site: dict[tuple[str, int], list[OracleRecord]] = defaultdict(list)
    for r in records:
        by_site[(r.file, r.line)].append(r)
    edges_at: dict[tuple[str, int], list[Edge]] = defaultdict(list)
    for e in edges:
        edges_at[(e.file, e.line)].append(e)

    def true_edge(e: Edge) -> bool:
        return any(r.target == e.target for r in by_site.get((e.file, e.line), []))

    precision = {}
    for tier in TIERS:
        mine = [e for e in edges if e.tier == tier]
        hits = sum(true_edge(e) for e in mine)
        precision[tier] = {"edges": len(mine), "true": hits, "false": len(mine) - hits,
                           "precision": _ratio(hits, len(mine))}

    def found(r: OracleRecord, tiers: tuple[str, ...]) -> bool:
        return any(e.target == r.target and e.tier in tiers
                   for e in edges_at.get((r.file, r.line), []))

    def recall_over(population: list[OracleRecord]) -> dict[str, Any]:
        return {name: {"sites": len(population), "found": sum(found(r, t) for r in population),
                       "recall": _ratio(sum(found(r, t) for r in population), len(population))}
                for name, t in RECALL_TIERS.items()}

    in_tree = [r for r in records if not r.external and r.target in defs]
    headline = [r for r in in_tree if r.shape == HEADLINE_SHAPE]
    receivers = sorted({r.receiver for r in headline})
    external_sites = [site for site, rs in by_site.items() if all(r.external for r in rs)]
    leaks = sorted(site for site in external_sites if edges_at.get(site))
    fan = Counter(min(len({e.target for e in es}), 4) for es in edges_at.values())
    impossible = []
    for e in edges:
        source, target = unit_of.get(e.file), defs.get(e.target, "")
        if source and target and target not in _closure(source, units):
            impossible.append([e.file, e.line, e.target, e.tier])
    false_targets = Counter(e.target.rsplit(".", 1)[-1] for e in edges if not true_edge(e))
    missed = Counter(r.target for r in headline if not found(r, TIERS))
    return {
        "precision": precision,
        "recall": recall_over(headline),
        "recall_by_receiver": {k: recall_over([r for r in headline if r.receiver == k])["all"]
                               for k in receivers},
        "other_shapes": {shape: recall_over([r for r in in_tree if r.shape == shape])["all"]
                         for shape in ("conditional", "bare")},
        "external": {"sites": len(external_sites), "silent": len(external_sites) - len(leaks),
                     "leak": len(leaks), "leaks": [list(s) for s in leaks]},
        "structurally_impossible": sorted(impossible),
        "fan_out": {"1": fan[1], "2": fan[2], "3": fan[3], "4+": fan[4]},
        "top_false_positive_targets": sorted(false_targets.items(),
                                             key=lambda kv: (-kv[1], kv[0]))[:10],
        "top_missed_targets": sorted(missed.items(), key=lambda kv: (-kv[1], kv[0]))[:10],
        "excluded_files": sorted(failed),
    }


# -- reading the inputs (JSON lines), each bad line named -----------------------------------

def _rows(path: Any, need: dict[str, type]) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = untrusted.loads(line, what=f"{path}:{number}")
        except HostileInput as exc:
            raise InputError(f"{path}:{number}: not JSON: {exc.message}", file=str(path),
                             guard=exc.kind) from exc
        for key, kind in need.items():
            if not isinstance(row, dict) or not isinstance(row.get(key), kind) or (
                    kind is int and isinstance(row.get(key), bool)):
                raise InputError.bad_value(f"{path}:{number}", key, f"a {kind.__name__}",
                                           row.get(key) if isinstance(row, dict) else row)
        rows.append(row)
    return rows


def load_records(path: Any) -> list[OracleRecord]:
    """The oracle's refs.jsonl: file, startLine, shape, external, target, receiverKind."""
    return [OracleRecord(r["file"], r["startLine"], r["shape"], r["external"], r["target"],
                         r["receiverKind"])
            for r in _rows(path, {"file": str, "startLine": int, "shape": str, "external": bool,
                                  "target": str, "receiverKind": str})]


def load_edges(path: Any) -> list[Edge]:
    """The arm's member-use edges: file, line, target, tier."""
    edges = [Edge(r["file"], r["line"], r["target"], r["tier"])
             for r in _rows(path, {"file": str, "line": int, "target": str, "tier": str})]
    if bad := next((e for e in edges if e.tier not in TIERS), None):
        raise InputError.bad_value(path, "tier", f"one of {list(TIERS)}", bad.tier)
    return edges


def load_defs(path: Any) -> dict[str, str]:
    """The graph's definitions: id and the unit that defines it."""
    return {r["id"]: r.get("unit", "") for r in _rows(path, {"id": str})}


def load_units(path: Any) -> dict[str, Unit]:
    """The oracle's units.jsonl: unit, status, files, references."""
    return {r["unit"]: Unit(r["unit"], r["status"] == "ok", frozenset(r["files"]),
                            frozenset(r.get("references", [])))
            for r in _rows(path, {"unit": str, "status": str, "files": list})}

"""benchmarks/run_bench.py's accounting on the golden demo run: an MCP arm's per-call records
are cells, but their time is their session's, counted once."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import run_bench

RUN = Path(__file__).resolve().parents[1] / "golden" / "demo-run"


def test_mcp_calls_are_cells_whose_time_is_their_sessions() -> None:
    records = {p: json.loads(p.read_text()) for p in (RUN / "cells").rglob("record.json")}
    derived = [r for r in records.values() if r.get("mcp")]
    sessions = [r for p, r in records.items() if p.parent.name == "session"]
    assert derived and sessions  # the golden run has an MCP arm
    began = min(run_bench._started(r) for r in records.values())
    figures = run_bench.where_time_went(RUN, 100.0, began, 1)

    reps = [p for p in records if p.parent.name.isdigit()]
    assert figures["cells"] == len(reps) == 252
    execs = [r for r in records.values() if not r.get("mcp")]
    assert figures["tool_wall_s"] == round(sum(r["timing"]["wall_ns"] for r in execs) / 1e9, 2)
    # Counting the derived records too would count every MCP call twice.
    both = sum(r["timing"]["wall_ns"] or 0 for r in records.values()) / 1e9
    assert figures["tool_wall_s"] < round(both, 2)
    assert figures["before_first_command_s"] == 0.0
    # Each arm's first start to last end, less its tools' time: the MCP session's once.
    span = 0.0
    for arm in {r["arm"] for r in execs}:
        mine = [r for r in execs if r["arm"] == arm]
        starts = [run_bench._started(r).timestamp() for r in mine]
        span += max(s + r["timing"]["host_bracket_ns"] / 1e9
                    for s, r in zip(starts, mine, strict=True)) - min(starts)
    tool = sum(r["timing"]["wall_ns"] for r in execs) / 1e9
    assert figures["orchestration_per_cell_ms"] == round((span - tool) / 252 * 1000, 1) > 0


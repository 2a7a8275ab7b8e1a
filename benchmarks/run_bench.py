"""The whole demo suite, timed: every shipped arm, 1 cold + N warm per task, on this host.

Reports the run's wall time beside the tools' own time (the in-container wall of every exec,
the index builds included) and the orchestration overhead per cell (host bracket minus
in-container wall, median), measured in one run. Needs the images built and the demo corpus
fetched (scripts/demo does both).

    python -m benchmarks.run_bench
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

from orchestrator import log, run
from orchestrator.engine import Engine
from orchestrator.fsutil import atomic_write_json
from orchestrator.settings import load_settings


def main() -> None:
    log.configure(stream=open("/dev/null", "w"))
    settings = load_settings()
    engine = Engine.connect()
    began = time.monotonic()
    run_dir = run.execute(engine, settings, "demo")
    total = time.monotonic() - began
    records = [json.loads(p.read_text()) for p in Path(run_dir, "cells").glob("*/*/*/record.json")]
    setups = [json.loads(p.read_text()) for p in Path(run_dir, "cells").glob("*/_setup/record.json")]
    tool_s = sum(r["timing"]["wall_ns"] for r in records + setups) / 1e9
    overhead = [r["timing"]["host_bracket_ns"] - r["timing"]["wall_ns"] for r in records]
    figures = {
        "run_dir": str(run_dir), "cells": len(records), "arms": sorted({r["arm"] for r in records}),
        "run_wall_s": round(total, 2), "tool_wall_s": round(tool_s, 2),
        "orchestration_s": round(total - tool_s, 2),
        "overhead_per_cell_median_ms": round(statistics.median(overhead) / 1e6, 1),
        "orchestration_per_cell_ms": round((total - tool_s) / len(records) * 1000, 1),
    }
    atomic_write_json(settings.bench_root / "benchmarks" / "run.json", figures)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()

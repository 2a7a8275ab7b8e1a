"""What the security tests read back from a run they made: an arm's state.json, each cell's
rows, and this process's own memory figures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def arm_state(run_dir: Path, arm: str) -> dict[str, Any]:
    """arms/ARM/state.json, decoded strictly as UTF-8 (every name in it was made portable)."""
    raw = (run_dir / "arms" / arm / "state.json").read_bytes()
    return json.loads(raw.decode("utf-8"))


def arm_rows(run_dir: Path, arm: str) -> dict[str, list[bytes]]:
    """Each cell's rows, sorted (rg prints them in the order its threads find them)."""
    cells = run_dir / "cells" / arm
    return {str(p.parent.relative_to(cells)): sorted(p.read_bytes().splitlines())
            for p in sorted(cells.glob("*/*/stdout"))}


def status_kib(field_name: str) -> int:
    """A KiB figure of this process from /proc/self/status (VmRSS, VmHWM)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1])
    raise KeyError(field_name)

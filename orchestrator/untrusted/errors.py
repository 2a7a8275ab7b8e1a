"""The failure of one piece of hostile input: classified, and confined to the cell, the arm
or the oracle whose bytes it was."""

from __future__ import annotations

from typing import Any


class HostileInput(Exception):
    """Tool-produced input the host refuses to process further. `kind` classifies it (e.g.
    `path-escape`, `too-deep`, `too-large`, `bad-integer`) for the cell's failure record;
    it is never fatal to a run, a resume or the scorer as a whole."""

    def __init__(self, kind: str, message: str, **data: Any) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.data = data

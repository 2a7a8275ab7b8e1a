"""Every bound the host puts on what a sandboxed tool produced, declared once.

Each section belongs to one module of `orchestrator.untrusted`; a bound is named for what it
caps, and its docstring comment says why the number is safe and still large enough for any
real tool's output.
"""

from __future__ import annotations

# -- names and paths (paths.py) ---------------------------------------------------------------

# -- walks and reads of state, out and corpus copies (walk.py) ------------------------------

# -- decoding: JSON, integers, frames (decode.py) ---------------------------------------------

# -- text shown to a person: Markdown, terminal (text.py) --------------------------------------

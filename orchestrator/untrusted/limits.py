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

# One tool-derived field on a terminal (a path, a version, a found value in an error): past
# this it is cut, with the count of what was left out. A real path is at most 4,096 bytes.
TERMINAL_FIELD_CHARS = 4096
# One line of a message printed on a terminal (an error, a line of a diff): a stderr tail the
# host quotes is already capped where it is read; this keeps one hostile line from filling
# the screen.
TERMINAL_LINE_CHARS = 16384

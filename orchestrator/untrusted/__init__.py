"""The one gate for hostile bytes: **every byte an arm, peer or oracle produced is hostile
input to the host.**

What a sandboxed tool leaves behind (its corpus copy, `.git` included; `/state`; `/out`; its
stdout and stderr; its MCP frames; an oracle's index) is read by code that runs as root. It
reaches that code only through this package, which bounds it:

- `limits`: every bound in one place (depth, entries, bytes, digits, time), so a reader can
  see what a tool can cost the host at most.
- `paths`: names a tool chose are resolved inside their root, never through a link, `..`
  or an absolute path.
- `walk`: iterative walks and reads capped in depth, entries and bytes; sparse files hashed
  by their allocated extents.
- `decode`: JSON and integers with depth, length and digit limits; any failure is a
  `HostileInput` for that cell or that oracle, never for the run.
- `text`: every tool-derived string escaped for where it is shown (Markdown, terminal).

No program runs on tool-written data on the host (no `git`, no tool with a configuration of
its own): what the host needs from the corpus at the pin comes from the pristine copy.
"""

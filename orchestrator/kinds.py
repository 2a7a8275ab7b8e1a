"""The methodology's task kinds, in the order every table shows them. A leaf module: the arm
specs, the suite, the output parsers, the scorer and the report all name kinds, and none of
them should have to import another for it."""

from __future__ import annotations

import re

KINDS = ("locate", "references", "impact", "e2e-retrieval")
# The Rust edges family (the methodology's "Rust edges"): the arm prints its call graph
# (call-edges) or its test-to-function edges (test-edges) for the whole corpus, graded against
# the oracle's references, not against files. An arm declares them only for a suite that has
# such tasks, so every other suite's arms and tables are unchanged.
EDGE_KINDS = ("call-edges", "test-edges")
ALL_KINDS = (*KINDS, *EDGE_KINDS)
# The one input each kind of task gives the tool: the name of its key in a task's [input]
# table and of the {placeholder} an arm's argv (or MCP call) puts it in.
INPUT_KEY = {"locate": "ticket", "e2e-retrieval": "ticket", "references": "symbol",
             "impact": "seed", "call-edges": "project", "test-edges": "project"}
# The placeholders every kind's argv (or a task's own command) may use besides its input key:
# the extension and name of the task's language.
COMMON_PLACEHOLDERS = frozenset({"ext", "lang"})
# A {placeholder} in an argv or MCP call template.
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")

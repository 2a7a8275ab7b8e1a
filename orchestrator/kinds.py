"""The methodology's task kinds, in the order every table shows them. A leaf module: the arm
specs, the suite, the output parsers, the scorer and the report all name kinds, and none of
them should have to import another for it."""

from __future__ import annotations

KINDS = ("locate", "references", "impact", "e2e-retrieval")

"""The mechanical truth rules of the C# and TypeScript suites, run on the pristine corpus (the
pin) and the corpus's bare mirror (the fix commits after it). Every task file of suites/csharp
and suites/csharp-held-out quotes the rule it used and the command that printed its sets;
rerunning the command prints the same sets. The rules live in orchestrator/truth/rules.py (its
docstring states them; `sandbench truth rule fix|refs|impact ... --json` prints them as JSON);
this script is their original command line, kept so that every quoted command still runs.

    python3 suites/tools/text_truth.py fix     MIRROR FIX_SHA [FIX_SHA...]
    python3 suites/tools/text_truth.py refs    PRISTINE NAME [ts]
    python3 suites/tools/text_truth.py impact  PRISTINE SEED [MIRROR FIX_SHA [FIX_SHA...]]

Rules:
- fix: the .cs files the fix commit changed (git diff --name-only FIX^ FIX), ordered by lines
  changed (added + deleted), most first; the primary fix file is the first non-test one.
  Several fix commits: their files unioned, their changed lines summed.
- refs: core = every tracked .cs file (.ts with `ts`) naming NAME as a whole word in code
  (outside comments, string and character literals; the holes of an interpolated string or a
  template literal are code);
  admissible = every other tracked .cs file naming it as a word only in comments or strings
  (a text search may list them without penalty; no arm is credited for them).
- impact: graded = (the fix's .cs files other than SEED) union (every tracked .cs file other
  than SEED naming, in code, a type SEED declares: one hop, dependents only).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout's orchestrator

from orchestrator.truth.csharp import code_and_rest  # noqa: E402
from orchestrator.truth.rules import main  # noqa: E402
from orchestrator.truth.sources import declared_types  # noqa: E402
from orchestrator.truth.typescript import code_and_rest as ts_code_and_rest  # noqa: E402

__all__ = ["code_and_rest", "declared_types", "main", "ts_code_and_rest"]

if __name__ == "__main__":
    main(sys.argv[1:])

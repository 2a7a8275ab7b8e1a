"""Truth sets from a decoded compiler index, by rules stated once here and quoted in every
truth file, so a reader can check each set against the index it came from.

- references: the symbols of the task's name are the global symbols defined in a file of the
  task's language whose last descriptor is that name (a parameter never is); the core set is
  every file of the language holding an occurrence of one of them, the defining files
  included (the text truth's convention: the definition file names the symbol too).
- impact: the graded set is every file but the seed holding a non-definition occurrence of a
  global symbol defined in the seed: one hop, dependents only (the demo suite's rule, here
  resolved by the compiler instead of by reading).
- edges: every non-definition occurrence of a global symbol defined in the corpus (parameters
  excluded: the indexers name them globally, but they are scoped to their function), as
  (file, 1-based line, name, defining file, 1-based line of its first definition).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from orchestrator.oracle import scip
from orchestrator.untrusted.errors import HostileInput

RULES = {
    "references": "core = every file of the task's language holding an occurrence (definition "
                  "or reference) of a global symbol that is defined in a file of that language "
                  "and whose last descriptor is the task's symbol (parameters excluded)",
    "impact": "graded = every file other than the seed holding a non-definition occurrence of "
              "a global symbol defined in the seed (one hop, dependents only)",
    "edges": "every non-definition occurrence of a global symbol defined in the corpus, "
             "parameters excluded: [file, line, name, defining file, line of its first "
             "definition], lines 1-based",
}


class EmptyTruth(ValueError):
    """A rule gave no file: a truth set that satisfies every band vacuously."""


@dataclass(frozen=True)
class Definitions:
    """Where each symbol defined in the corpus is first defined, and by which name."""

    at: dict[str, tuple[str, int]]  # symbol -> (path, 0-based line)

    @classmethod
    def of(cls, index: scip.Index) -> Definitions:
        at: dict[str, tuple[str, int]] = {}
        for doc in index.documents:
            for occ in doc.occurrences:
                if occ.is_definition and occ.symbol and not scip.is_local(occ.symbol):
                    at.setdefault(occ.symbol, (doc.path, occ.line))
        return cls(at)


def references(index: scip.Index, defs: Definitions, name: str, ext: str
               ) -> tuple[list[str], list[str]]:
    """(core files, the symbols they were taken from) for a references task."""
    suffix = f".{ext}"
    symbols = sorted(s for s, (path, _) in defs.at.items()
                     if path.endswith(suffix) and scip.short_name(s) == name)
    if not symbols:
        raise EmptyTruth(f"no symbol named {name!r} is defined in a .{ext} file of the index")
    wanted = set(symbols)
    core = sorted({doc.path for doc in index.documents if doc.path.endswith(suffix)
                   and any(o.symbol in wanted for o in doc.occurrences)})
    return core, symbols


def dependents(index: scip.Index, defs: Definitions, seed: str) -> tuple[list[str], int]:
    """(graded files, how many symbols the seed defines) for an impact task."""
    defined = {s for s, (path, _) in defs.at.items() if path == seed}
    if not defined:
        raise EmptyTruth(f"the index defines no global symbol in {seed}")
    graded = sorted({doc.path for doc in index.documents if doc.path != seed
                     and any(o.symbol in defined and not o.is_definition
                             for o in doc.occurrences)})
    if not graded:
        raise EmptyTruth(f"no file beyond {seed} references the {len(defined)} symbols it "
                         "defines")
    return graded, len(defined)


def edges(index: scip.Index, defs: Definitions) -> list[list[Any]]:
    out = set()
    for doc in index.documents:
        for occ in doc.occurrences:
            if occ.is_definition or occ.symbol not in defs.at:
                continue
            if (name := scip.short_name(occ.symbol)) is None:
                continue
            path, line = defs.at[occ.symbol]
            out.add((doc.path, occ.line + 1, name, path, line + 1))
    return [list(e) for e in sorted(out)]


def resolution(index: scip.Index, defs: Definitions) -> dict[str, int]:
    """What the oracle resolved without the corpus's dependencies: occurrences of symbols
    defined in the corpus, of symbols defined outside it (standard library, declaration
    files, dependencies found on disk), and of locals."""
    counts: dict[str, int] = defaultdict(int)
    for doc in index.documents:
        for occ in doc.occurrences:
            if not occ.symbol:
                counts["without_symbol"] += 1
            elif scip.is_local(occ.symbol):
                counts["local"] += 1
            elif occ.symbol in defs.at:
                counts["defined_in_corpus"] += 1
            else:
                counts["defined_outside"] += 1
    return {"documents": len(index.documents),
            "occurrences": sum(len(d.occurrences) for d in index.documents),
            "symbols_defined_in_corpus": len(defs.at),
            **{k: counts[k] for k in ("defined_in_corpus", "defined_outside", "local",
                                      "without_symbol")}}


# -- the Rust edges family ------------------------------------------------------------------

RUST_EDGES_RULES = {
    "sites": "every non-definition occurrence with a symbol in a document of the index (the "
             "universe: the files of the package's targets), as [file, line, character, name, "
             "context, shape, target class, defining file, definition line]; context and shape "
             "from orchestrator/oracle/rust_sites.py's lexer at the occurrence's position; "
             "target class: fn (a global symbol defined in the corpus whose last descriptor is "
             "a method `().`), type (a `#` descriptor not nested in a type or function), other "
             "(every other global item defined in the corpus, not nested in a type or "
             "function), not-recorded (a local, or an item nested in a type or a function: a "
             "field, a variant, an associated item that is not a fn), external (a global "
             "symbol defined outside the corpus); lines 1-based, character a 0-based UTF-8 "
             "column; defining file and line null unless the target is defined in the corpus",
    "tests": "every function carrying #[test] (or a cfg_attr whose last item is test, the "
             "predicate unevaluated) in a document of the index, by the lexer's scan: [file, "
             "name, line of its name, line of its body's closing brace, active]; active when "
             "the index defines a symbol on the line of its name (a test behind a cfg the "
             "oracle leaves off, such as cfg(loom), is in no crate the compiler builds: the "
             "index has no occurrence in it)",
    "unindexed": "every fn with a body (the lexer's scan) on whose name's line the index "
                 "defines nothing: code the oracle never compiled (behind a cfg it leaves "
                 "off, such as cfg(loom), or a macro_rules! template), as [file, name, line "
                 "of its name, line of its closing brace]; an arm edge inside one is set "
                 "apart, neither confirmed nor refuted",
    "population": "call edges: sites of shape path-call in context plain or macro-argument "
                  "whose target class is fn; test edges: (test, target) pairs of a test and "
                  "the fn a population site inside the test's span calls",
}


def target_class(symbol: str, defs: Definitions) -> str:
    """What a reference's target is, in the methodology's classes."""
    if scip.is_local(symbol):
        return "not-recorded"
    if symbol not in defs.at:
        return "external"
    names = scip.descriptor_names(symbol)
    if not names:
        return "not-recorded"
    outer = [suffix for _, suffix in names[:-1]]
    last = names[-1][1]
    if last == "().":
        return "fn" if "()." not in outer else "not-recorded"
    if "#" in outer or "()." in outer or last in ("[", "("):
        return "not-recorded"
    return "type" if last == "#" else "other"


def rust_sites(index: scip.Index, defs: Definitions, read: Callable[[str], str]
               ) -> dict[str, Any]:
    """The sites, the tests and the universe of the Rust edges family. `read(path)` gives a
    document's source text at the pin (orchestrator/oracle/sources.py: never a file outside
    the pinned tree), or a HostileInput, which is told the document it was for."""
    from orchestrator.oracle import rust_sites as lexer

    sites: list[list[Any]] = []
    tests: list[list[Any]] = []
    unindexed: list[list[Any]] = []
    for doc in sorted(index.documents, key=lambda d: d.path):
        try:
            src = lexer.Source.of(read(doc.path))
        except HostileInput as exc:
            exc.data.setdefault("document", doc.path)
            raise
        for occ in doc.occurrences:
            if occ.is_definition or not occ.symbol:
                continue
            context, shape, lexed = lexer.classify(src, occ.line, occ.character)
            cls = target_class(occ.symbol, defs)
            name = (scip.short_name(occ.symbol) if not scip.is_local(occ.symbol) else None
                    ) or lexed
            where = defs.at.get(occ.symbol)
            sites.append([doc.path, occ.line + 1, occ.character, name, context, shape, cls,
                          None if where is None else where[0],
                          None if where is None else where[1] + 1])
        defined_lines = {o.line + 1 for o in doc.occurrences if o.is_definition}
        tests += [[doc.path, t.name, t.line, t.end_line, t.line in defined_lines]
                  for t in lexer.tests(src)]
        unindexed += [[doc.path, f.name, f.line, f.end_line] for f in lexer.fn_items(src)
                      if f.line not in defined_lines]
    sites.sort(key=lambda s: (s[0], s[1], s[2], s[3]))
    return {"rules": RUST_EDGES_RULES, "universe": sorted(d.path for d in index.documents),
            "sites": sites, "tests": sorted(tests), "unindexed": sorted(unindexed)}

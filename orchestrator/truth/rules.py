"""The mechanical text truth rules (fix, refs, impact), run on a corpus's pristine copy (the pin)
and its bare mirror (the fix commits after the pin): pinned inputs, never an arm's output, both
read as objects through `orchestrator.corpus.foreign` (git never runs in either). Every
task a suite builds from a record quotes the rule it used and the command that prints its sets
(`sandbench truth rule ...`, or `python3 suites/tools/text_truth.py ...`, the same rules with the
same output, which the C# and TypeScript suites' task files quote).

Rules (`text-v1`):
- fix: the files of the language the fix commits changed (`git diff --numstat FIX^ FIX`, one
  commit or several unioned, their changed lines summed), ordered by lines changed (added +
  deleted), most first; the primary fix file is the first one that is not a test file.
- refs: core = every tracked file of the language naming NAME as a whole word in code (outside
  comments, string and character literals; the holes of an interpolated string or a template
  literal are code); admissible = every other tracked file naming it as a word only in comments
  or strings (a text search may list them without penalty; no arm is credited for them).
- impact: graded = (the fix's files other than SEED) union (every tracked .cs file other than
  SEED naming, in code, a type SEED declares: one hop, dependents only).

- declares (for a published task whose question is a search term, not an issue): the tracked
  files of the language that are not test files and whose code declares what the term names:
  `type`, a type whose name contains TERM (as the command's case rule says); `member`, a line
  of a declaration (one starting with an access modifier) containing TERM as written, string
  literals included (a constant's value is what such a term asks for). In path order; for a
  locate task the primary is the first.

`text-v1-declaring-admissible` is `text-v1` with one change to refs: a file that declares NAME
(a class, interface, struct, record, enum or delegate of that name in its code) is admissible,
not core: a reference set of uses, as some publications count it.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.corpus.foreign import Foreign, opened
from orchestrator.errors import InputError, SandbenchError
from orchestrator.truth import csharp
from orchestrator.truth.languages import EXTENSIONS, declared_names
from orchestrator.truth.sources import Sources, declares, inside, is_test, mentions

# The rules a suite may declare (suite.toml `truth_rule`): name -> what it means.
RULES = {
    "text-v1": "fix, refs and impact as suites/tools/text_truth.py states them; the file "
               "declaring a references symbol is core",
    "text-v1-declaring-admissible": "text-v1, except that references puts the files declaring "
                                    "the symbol in admissible, not core",
}
DEFAULT_RULE = "text-v1"
# The version of the rules' reading of sources, which every rule above shares: a suite records
# the version its truth was made by (suite.toml `truth_rule_version`, written by `suite new`,
# required by `suite add-tasks`), and a run's disclosure states it. 1: a C# type's name was
# the first capitalised word after its keyword, across lines (a generic type whose `where`
# clause stood on the next line declared its type parameter); a TypeScript `import type X`
# declared X and `function*` nothing; Rust was not read. 2: a name is the identifier right
# after its keyword (the declared_names of csharp.py, typescript.py, rust.py), and Rust sources
# are read with their own lexer (rust.code_and_rest).
VERSION = 2
# A commit is named by hex digits only (4 to 40): nothing git could read as an option or a
# revision expression.
COMMIT = re.compile(r"[0-9a-f]{4,40}")


def commit(value: str, what: str = "FIX_SHA") -> str:
    """A commit named by hex digits, or an InputError."""
    if not COMMIT.fullmatch(value):
        raise InputError.bad_value("the command line", what, "a commit: 4 to 40 lower-case hex "
                                   "digits", value)
    return value


def fix_files(mirror: Foreign, shas: Sequence[str], ext: str = "cs"
              ) -> list[tuple[str, int]]:
    """(path, lines changed) of every file of `ext` the fix commits changed, their changes
    summed over the commits, most changed first."""
    lines: dict[str, int] = {}
    for sha in shas:
        out = mirror.diff_to_parent(commit(sha), "--numstat")
        for row in out.decode("utf-8", "surrogateescape").splitlines():
            added, deleted, path = row.split("\t", 2)
            if path.endswith(f".{ext}"):
                changed = sum(int(n) for n in (added, deleted) if n.isdigit())  # binary: "-"
                lines[path] = lines.get(path, 0) + changed
    return sorted(lines.items(), key=lambda r: (-r[1], r[0]))


# -- the three rules ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Refs:
    symbol: str
    ext: str
    rule: str
    core: list[str]
    admissible: list[str]
    declaring: list[str]  # the files declaring the symbol (in core under text-v1)

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "rules_version": VERSION, "verb": "refs",
                "symbol": self.symbol, "ext": self.ext,
                "core": self.core, "admissible": self.admissible, "declaring": self.declaring}


@dataclass(frozen=True)
class Impact:
    seed: str
    fixes: list[str]
    types: list[str]
    fix_beyond_seed: list[str]
    graded: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"rule": DEFAULT_RULE, "rules_version": VERSION, "verb": "impact",
                "seed": self.seed, "fixes": self.fixes,
                "types": self.types, "fix_beyond_seed": self.fix_beyond_seed,
                "graded": self.graded}


def rule_name(rule: str) -> str:
    if rule not in RULES:
        raise InputError.bad_value("the command line", "--rule", f"one of {sorted(RULES)}",
                                   rule)
    return rule


def refs(sources: Sources, symbol: str, ext: str = "cs", rule: str = DEFAULT_RULE) -> Refs:
    if ext not in EXTENSIONS:
        raise InputError.bad_value("the command line", "ext", f"one of {list(EXTENSIONS)}", ext)
    if not re.fullmatch(r"[A-Za-z_$][\w$]*", symbol):
        raise InputError.bad_value("the command line", "NAME", "an identifier", symbol)
    core, admissible = mentions(sources, [symbol], ext)
    declaring = [rel for rel in core if declares(sources, rel, symbol, ext)]
    if rule_name(rule) == "text-v1-declaring-admissible":
        core = [rel for rel in core if rel not in declaring]
        admissible = sorted(admissible + declaring)
    return Refs(symbol, ext, rule, core, admissible, declaring)


def impact(sources: Sources, seed: str, mirror: Foreign | None = None,
           fixes: Sequence[str] = ()) -> Impact:
    inside(sources.pristine, seed)
    types = csharp.declared_names(sources.split(seed)[0])
    fixed = [p for p, _ in fix_files(mirror, fixes)] \
        if mirror is not None and fixes else []
    dependents, _ = mentions(sources, types) if types else ([], [])
    graded = sorted((set(fixed) | set(dependents)) - {seed})
    return Impact(seed, list(fixes), types, [p for p in fixed if p != seed], graded)


@dataclass(frozen=True)
class Declarations:
    term: str
    what: str
    ignore_case: bool
    ext: str
    files: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"rule": DEFAULT_RULE, "rules_version": VERSION, "verb": "declares",
                "term": self.term, "what": self.what,
                "ignore_case": self.ignore_case, "ext": self.ext, "files": self.files,
                "primary": self.files[0] if self.files else None}


DECLARES = ("type", "member")
# A line of code that declares a member: it starts with an access modifier.
MEMBER_LINE = re.compile(r"^[ \t]*(?:public|internal|protected|private)\b.*$", re.M)


def declarations(sources: Sources, term: str, what: str, ext: str = "cs",
                 ignore_case: bool = False) -> Declarations:
    """The `declares` rule: non-test files whose code declares what TERM names."""
    if what not in DECLARES:
        raise InputError.bad_value("the command line", "--what", f"one of {list(DECLARES)}",
                                   what)
    if not term or "\n" in term:
        raise InputError.bad_value("the command line", "TERM", "one line of text", term)
    needle = term.lower() if ignore_case else term
    files = []
    for rel in sources.tracked(ext):
        if is_test(rel):
            continue
        text = sources.text(rel)
        if needle not in (text.lower() if ignore_case else text):
            continue
        code, _ = sources.split(rel, ext)
        if what == "type":
            found = any(needle in (n.lower() if ignore_case else n)
                        for n in declared_names(code, ext))
        else:  # the declaration's line as written (its literals kept), found from the code
            found = any(needle in (line.lower() if ignore_case else line)
                        for m in MEMBER_LINE.finditer(code)
                        for line in [text[m.start():m.end()]])
        if found:
            files.append(rel)
    return Declarations(term, what, ignore_case, ext, files)


def declarations_lines(result: Declarations) -> list[str]:
    return ["\n  ".join([f"declares {result.what}", str(len(result.files)), *result.files])]


# -- output: the human lines text_truth.py has always printed, or JSON -----------------------

def fix_lines(rows: Sequence[tuple[str, int]]) -> list[str]:
    return [f"{lines}\t{path}" for path, lines in rows]


def refs_lines(result: Refs) -> list[str]:
    return ["\n  ".join(["core", str(len(result.core)), *result.core]),
            "\n  ".join(["admissible", str(len(result.admissible)), *result.admissible])]


def impact_lines(result: Impact) -> list[str]:
    return [" ".join(["types", *result.types]),
            " ".join(["fix beyond seed", *result.fix_beyond_seed]),
            "\n  ".join(["graded", str(len(result.graded)), *result.graded])]


def fix_json(shas: Sequence[str], rows: Sequence[tuple[str, int]], ext: str) -> dict[str, Any]:
    primary = next((path for path, _ in rows if not is_test(path)), None)
    return {"rule": DEFAULT_RULE, "rules_version": VERSION, "verb": "fix", "fixes": list(shas),
            "ext": ext,
            "files": [{"path": path, "lines": lines} for path, lines in rows],
            "primary": primary}


def main(argv: list[str]) -> None:
    """suites/tools/text_truth.py's command line (FIX_SHA may be several commits)."""
    verb = argv[0] if argv else ""
    if verb not in ("fix", "refs", "impact"):
        sys.exit(f"unknown verb {verb!r}: fix, refs or impact")
    try:
        with contextlib.ExitStack() as stack:
            def repo(arg: str, what: str) -> Foreign:
                return stack.enter_context(opened(Path(arg), what))

            if verb == "fix":
                lines = fix_lines(fix_files(repo(argv[1], "MIRROR"), argv[2:]))
            elif verb == "refs":
                ext = argv[3] if len(argv) > 3 else "cs"
                lines = refs_lines(refs(Sources(repo(argv[1], "PRISTINE")), argv[2], ext))
            else:
                mirror = repo(argv[3], "MIRROR") if len(argv) > 4 else None
                lines = impact_lines(impact(Sources(repo(argv[1], "PRISTINE")), argv[2],
                                            mirror, argv[4:]))
    except SandbenchError as err:
        sys.exit(err.render())
    for line in lines:
        print(line)

"""The mechanical truth rules of the C# suites, standard-library Python, run on the pristine
corpus (the pin) and the corpus's bare mirror (the fix commits after it). Every task file of
suites/csharp and suites/csharp-held-out quotes the rule it used and the command that printed
its sets; rerunning the command prints the same sets.

    python3 suites/tools/text_truth.py fix     MIRROR FIX_SHA
    python3 suites/tools/text_truth.py refs    PRISTINE NAME [ts]
    python3 suites/tools/text_truth.py impact  PRISTINE SEED [MIRROR FIX_SHA]

Rules:
- fix: the .cs files the fix commit changed (git diff --name-only FIX^ FIX), ordered by lines
  changed (added + deleted), most first; the primary fix file is the first non-test one.
- refs: core = every tracked .cs file (.ts with `ts`) naming NAME as a whole word in code
  (outside comments, string and character literals; the holes of an interpolated string or a
  template literal are code);
  admissible = every other tracked .cs file naming it as a word only in comments or strings
  (a text search may list them without penalty; no arm is credited for them).
- impact: graded = (the fix's .cs files other than SEED) union (every tracked .cs file other
  than SEED naming, in code, a type SEED declares: one hop, dependents only).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DECLARATION = re.compile(r"\b(?:class|interface|struct|record|enum|delegate)\s+(?:[\w<>,\s.]*?\s)?"
                         r"(?P<name>[A-Z]\w*)\s*(?:<|\(|:|\{|where\b|$)", re.M)


def blank(start: int, end: int, where: list[str]) -> None:
    """Spaces over where[start:end], its line breaks kept (positions and lines stay put)."""
    for k in range(start, end):
        if where[k] != "\n":
            where[k] = " "


def _comment_end(text: str, i: int) -> int | None:
    """Where the // or /* */ comment starting at i ends (C# and TypeScript alike), or None."""
    if text.startswith("//", i):
        j = text.find("\n", i)
        return len(text) if j == -1 else j
    if text.startswith("/*", i):
        j = text.find("*/", i + 2)
        return len(text) if j == -1 else j + 2
    return None


def code_and_rest(text: str) -> tuple[str, str]:
    """The source split in two same-length strings: code (comments and literals blanked) and
    the comments and literals (code blanked), so a word is found in exactly one of them."""
    code, rest = list(text), list(text)
    i, n = 0, len(text)
    interp: list[int] = []  # brace depth of each open interpolated-string hole

    while i < n:
        c = text[i]
        if (j := _comment_end(text, i)) is not None:
            blank(i, j, code)
            i = j
            continue
        m = re.match(r'(\$+)?(@)?(\$+)?("""+|")', text[i:i + 8])
        at_word_start = i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")
        if m and (m.group(4) or "") and at_word_start:
            dollar = bool(m.group(1) or m.group(3))
            verbatim = bool(m.group(2))
            quotes = m.group(4)
            j = i + len(m.group(0))
            start = i
            while j < n:
                if len(quotes) >= 3 and text.startswith(quotes, j):
                    j += len(quotes)
                    break
                ch = text[j]
                if len(quotes) == 1 and not verbatim and ch == "\\":
                    j += 2
                    continue
                if len(quotes) == 1 and ch == '"':
                    if verbatim and text.startswith('""', j):
                        j += 2
                        continue
                    j += 1
                    break
                if dollar and ch == "{" and not text.startswith("{{", j):
                    blank(start, j + 1, code)
                    depth, k = 1, j + 1
                    while k < n and depth:
                        depth += {"{": 1, "}": -1}.get(text[k], 0)
                        k += 1
                    blank(j + 1, k - 1, rest)  # the hole is code
                    start = j = k - 1
                    continue
                if dollar and text.startswith("{{", j):
                    j += 2
                    continue
                if len(quotes) == 1 and not verbatim and ch == "\n":
                    break
                j += 1
            blank(start, j, code)
            i = j
            continue
        if c == "'" and re.match(r"'(\\.[^']*|[^'\\\n])'", text[i:i + 12]):
            j = i + re.match(r"'(\\.[^']*|[^'\\\n])'", text[i:i + 12]).end()
            blank(i, j, code)
            i = j
            continue
        rest[i] = " " if c != "\n" else "\n"
        i += 1
    del interp
    return "".join(code), "".join(rest)


def ts_code_and_rest(text: str) -> tuple[str, str]:
    """code_and_rest for TypeScript: '...', "..." and `...${hole}...` literals."""
    code, rest = list(text), list(text)
    i, n = 0, len(text)

    while i < n:
        if (j := _comment_end(text, i)) is not None:
            blank(i, j, code)
            i = j
            continue
        c = text[i]
        if c in "'\"`":
            j, start = i + 1, i
            while j < n and text[j] != c:
                if text[j] == "\\":
                    j += 2
                    continue
                if c != "`" and text[j] == "\n":
                    break
                if c == "`" and text.startswith("${", j):
                    blank(start, j + 2, code)
                    depth, k = 1, j + 2
                    while k < n and depth:
                        depth += {"{": 1, "}": -1}.get(text[k], 0)
                        k += 1
                    blank(j + 2, k - 1, rest)
                    start = j = k - 1
                    j += 1
                    continue
                j += 1
            j = min(j + 1, n)
            blank(start, j, code)
            i = j
            continue
        rest[i] = " " if c != "\n" else "\n"
        i += 1
    return "".join(code), "".join(rest)


def tracked_cs(pristine: Path, ext: str = "cs") -> list[str]:
    out = subprocess.run(["git", "-C", str(pristine), "ls-files", "-z", "--", f"*.{ext}"],
                         capture_output=True, check=True).stdout.decode()
    return sorted(p for p in out.split("\0") if p)


def mentions(pristine: Path, names: list[str], ext: str = "cs") -> tuple[list[str], list[str]]:
    """(files naming one of `names` in code, files naming one only in comments/strings)."""
    pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, names)) + r")\b")
    split = ts_code_and_rest if ext == "ts" else code_and_rest
    in_code, elsewhere = [], []
    for rel in tracked_cs(pristine, ext):
        text = (pristine / rel).read_text(encoding="utf-8-sig", errors="replace")
        if not pattern.search(text):
            continue
        code, rest = split(text)
        if pattern.search(code):
            in_code.append(rel)
        elif pattern.search(rest):
            elsewhere.append(rel)
    return in_code, elsewhere


def fix_files(mirror: Path, sha: str) -> list[tuple[str, int]]:
    out = subprocess.run(["git", "-C", str(mirror), "diff", "--numstat", f"{sha}^", sha],
                         capture_output=True, check=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        added, deleted, path = line.split("\t", 2)
        if path.endswith(".cs"):
            rows.append((path, int(added) + int(deleted)))
    return sorted(rows, key=lambda r: (-r[1], r[0]))


def declared_types(path: Path) -> list[str]:
    code, _ = code_and_rest(path.read_text(encoding="utf-8-sig", errors="replace"))
    return sorted({m.group("name") for m in DECLARATION.finditer(code)})


def main(argv: list[str]) -> None:
    verb = argv[0]
    if verb == "fix":
        for path, lines in fix_files(Path(argv[1]), argv[2]):
            print(f"{lines}\t{path}")
    elif verb == "refs":
        core, admissible = mentions(Path(argv[1]), [argv[2]], argv[3] if len(argv) > 3 else "cs")
        print("core", len(core), *core, sep="\n  ")
        print("admissible", len(admissible), *admissible, sep="\n  ")
    elif verb == "impact":
        pristine, seed = Path(argv[1]), argv[2]
        types = declared_types(pristine / seed)
        fixed = [p for p, _ in fix_files(Path(argv[3]), argv[4])] if len(argv) > 4 else []
        dependents, _ = mentions(pristine, types) if types else ([], [])
        graded = sorted((set(fixed) | set(dependents)) - {seed})
        print("types", *types)
        print("fix beyond seed", *[p for p in fixed if p != seed])
        print("graded", len(graded), *graded, sep="\n  ")
    else:
        sys.exit(f"unknown verb {verb!r}: fix, refs or impact")


if __name__ == "__main__":
    main(sys.argv[1:])

"""A pinned corpus's tracked sources as the text truth rules read them: listed from the tree of
the pristine checkout's HEAD (read as objects through `orchestrator.corpus.foreign`, git never
runs in it), each read at most once with a bound on its size, split into code and the rest by
its language's lexer, and searched for a name in code or only in comments and literals."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from orchestrator.corpus.foreign import Foreign
from orchestrator.errors import InputError
from orchestrator.truth import csharp
from orchestrator.truth.languages import code_and_rest, declared_names
from orchestrator.truth.lexing import WORD

# A source file is read whole to be lexed: the largest .cs file of MassTransit is ~150 kB and
# generated sources rarely pass a few MB, so a file above this is refused, named, not lexed.
MAX_SOURCE_BYTES = 16 * 1024 * 1024
# A test file: under a directory named test(s) / spec(s) or *.Tests / *.Specs, or a file whose
# name ends in Test(s) / Spec(s) as a word (FooTests.cs, Foo_Specs.cs, foo.test.ts; not
# Latest.cs): MassTransit's tests/MassTransit.Tests/..., xunit's FooTests.cs, jest's *.test.ts.
TEST_DIR = re.compile(r"(?:^|/)(?:[^/]*\.)?(?:tests?|specs?)/", re.I)
TEST_NAME = re.compile(r"(?:(?:^|/|[._-])(?:[Tt]ests?|[Ss]pecs?)|Tests?|Specs?)\.[^./]+$")


def inside(pristine: Path, rel: str, what: str = "SEED") -> Path:
    """`pristine / rel` for a repo-relative `rel` that cannot leave the checkout."""
    if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in rel.split("/")):
        raise InputError.bad_value("the command line", what, "a repo-relative path (no '..', "
                                   "not absolute, normalised)", rel)
    return pristine / rel


def read_source(path: Path) -> str:
    """A source file as text (a BOM dropped, bad bytes replaced, line ends made \\n, as text
    mode reads it), refused above MAX_SOURCE_BYTES."""
    try:
        with path.open("rb") as stream:
            data = stream.read(MAX_SOURCE_BYTES + 1)
    except OSError as err:
        raise InputError(f"{path}: cannot read the source file", why=err.strerror,
                         file=str(path)) from err
    if len(data) > MAX_SOURCE_BYTES:
        raise InputError(f"{path}: larger than {MAX_SOURCE_BYTES} bytes, the most a truth rule "
                         "lexes", file=str(path), expected=f"<= {MAX_SOURCE_BYTES} bytes",
                         found=f"more than {MAX_SOURCE_BYTES} bytes")
    return data.decode("utf-8-sig", "replace").replace("\r\n", "\n").replace("\r", "\n")


def tracked(pristine: Foreign, ext: str = "cs") -> list[str]:
    """The files of the extension in the tree of the checkout's HEAD (the pin), sorted."""
    head = pristine.head()
    out = pristine.read("ls-tree", "-r", "-z", "--name-only", "--full-tree", head, commit=head)
    return sorted(p for p in out.decode("utf-8", "surrogateescape").split("\0")
                  if p.endswith(f".{ext}"))


class Sources:
    """A pristine corpus's tracked sources for one run of the rules: each file listed, read
    and split into code and the rest at most once, so that making many tasks reads the corpus
    once (the pin does not change under a run)."""

    def __init__(self, checkout: Foreign) -> None:
        self.checkout, self.pristine = checkout, checkout.path
        self._tracked: dict[str, list[str]] = {}
        self._text: dict[str, str] = {}
        self._split: dict[str, tuple[str, str]] = {}
        self._words: dict[str, dict[str, list[str]]] = {}  # ext -> word -> files naming it
        self._scans = 0

    def tracked(self, ext: str = "cs") -> list[str]:
        if ext not in self._tracked:
            self._tracked[ext] = tracked(self.checkout, ext)
        return self._tracked[ext]

    def text(self, rel: str) -> str:
        if rel not in self._text:
            self._text[rel] = read_source(self.pristine / rel)
        return self._text[rel]

    def naming(self, names: Sequence[str], ext: str = "cs") -> list[str]:
        """The tracked files whose text names one of `names` as a whole word, in tracked
        order. A word (`\\b` on both sides) of word characters only is a maximal run of word
        characters, so one index of each file's runs answers every later name at once (built
        on the second call: a single rule run scans once, which costs less than indexing)."""
        self._scans += 1
        if self._scans == 1 or not all(WORD.fullmatch(name) for name in names):
            pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, names)) + r")\b")
            return [rel for rel in self.tracked(ext) if pattern.search(self.text(rel))]
        if ext not in self._words:
            index: dict[str, list[str]] = {}
            for rel in self.tracked(ext):
                for word in set(WORD.findall(self.text(rel))):
                    index.setdefault(word, []).append(rel)
            self._words[ext] = index
        found = {rel for name in names for rel in self._words[ext].get(name, ())}
        return [rel for rel in self.tracked(ext) if rel in found]

    def split(self, rel: str, ext: str = "cs") -> tuple[str, str]:
        """(code, comments and literals) of the file, as code_and_rest splits it."""
        if rel not in self._split:
            self._split[rel] = code_and_rest(self.text(rel), ext)
        return self._split[rel]


def mentions(sources: Sources, names: Sequence[str], ext: str = "cs"
             ) -> tuple[list[str], list[str]]:
    """(files naming one of `names` in code, files naming one only in comments/strings)."""
    pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, names)) + r")\b")
    in_code, elsewhere = [], []
    for rel in sources.naming(names, ext):
        code, rest = sources.split(rel, ext)
        if pattern.search(code):
            in_code.append(rel)
        elif pattern.search(rest):
            elsewhere.append(rel)
    return in_code, elsewhere


def is_test(path: str) -> bool:
    return bool(TEST_DIR.search(path) or TEST_NAME.search(path))


def declared_types(path: Path) -> list[str]:
    """The C# types the file declares in code."""
    return csharp.declared_names(csharp.code_and_rest(read_source(path))[0])


def declares(sources: Sources, rel: str, name: str, ext: str) -> bool:
    """Whether the file declares `name` in its code (a C# type; a TypeScript class,
    interface, type alias, enum, function or namespace; a Rust item)."""
    return name in declared_names(sources.split(rel, ext)[0], ext)


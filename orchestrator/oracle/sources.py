"""The source text a truth reads (the Rust edges' site classes and #[test] scan), taken from the
pristine copy at the pin, never from the oracle's copy: the pristine copy is trusted (verified
just before the oracle ran), the oracle's copy is whatever the oracle left. Only a file git
tracks at the pin as a regular file is read, and it is opened without following any link, so
an index naming `../..`, `/proc/self/environ` or a tracked symbolic link reads nothing."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

from orchestrator.corpus.git import clean_git
from orchestrator.untrusted import limits, paths
from orchestrator.untrusted.errors import HostileInput

# git ls-tree modes of a regular file (a link is 120000, a submodule 160000).
REGULAR_MODES = (b"100644", b"100755")


@dataclass(frozen=True)
class PinnedSources:
    root: Path
    regular: frozenset[str]  # regular files tracked at the pin
    other: frozenset[str]  # links and submodules tracked at the pin: never read

    @classmethod
    def at_pin(cls, pristine: Path, sha: str) -> PinnedSources:
        """The regular files git tracks at `sha` in the pristine copy."""
        with clean_git() as git:
            listing = git.run("ls-tree", "-r", "-z", "--full-tree", sha, cwd=pristine).stdout
        regular: set[str] = set()
        other: set[str] = set()
        for record in filter(None, listing.split(b"\0")):
            meta, _, name = record.partition(b"\t")
            mode = meta.split()[0]
            (regular if mode in REGULAR_MODES else other).add(
                name.decode("utf-8", "surrogateescape"))
        return cls(pristine, frozenset(regular), frozenset(other))

    def read(self, rel: str) -> str:
        """A document's text at the pin, or a HostileInput naming it."""
        paths.relative(rel)
        if rel in self.other:
            raise HostileInput("path-escape", f"the index names {rel!r}, a symbolic link or a "
                               "submodule at the pin: never followed", document=rel)
        if rel not in self.regular:
            raise HostileInput("not-at-pin", f"the index names {rel!r}, which is not a regular "
                               "file git tracks at the pin", document=rel)
        data = paths.read_bytes(self.root, rel, limits.PINNED_SOURCE_MAX_BYTES)
        # As a text file reads (universal newlines), which the lexer's positions assume.
        return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace").read()

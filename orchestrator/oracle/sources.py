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
from orchestrator.oracle import paths
from orchestrator.untrusted.errors import HostileInput

# git ls-tree modes of a regular file (a link is 120000, a submodule 160000).
REGULAR_MODES = (b"100644", b"100755")


@dataclass(frozen=True)
class PinnedSources:
    root: Path
    regular: frozenset[str]

    @classmethod
    def at_pin(cls, pristine: Path, sha: str) -> PinnedSources:
        """The regular files git tracks at `sha` in the pristine copy."""
        with clean_git() as git:
            listing = git.run("ls-tree", "-r", "-z", "--full-tree", sha, cwd=pristine).stdout
        regular = set()
        for record in listing.split(b"\0"):
            meta, _, name = record.partition(b"\t")
            if meta.split()[:1] and meta.split()[0] in REGULAR_MODES:
                regular.add(name.decode("utf-8", "surrogateescape"))
        return cls(pristine, frozenset(regular))

    def read(self, rel: str) -> str:
        """A document's text at the pin, or a HostileInput naming it."""
        paths.relative(rel)
        if rel not in self.regular:
            raise HostileInput("not-at-pin", f"the index names {rel!r}, which is not a regular "
                               "file git tracks at the pin", document=rel)
        data = paths.read_confined(self.root, rel)
        # As a text file reads (universal newlines), which the lexer's positions assume.
        return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace").read()

"""The embedded demo corpus as a `git fast-import` stream.

The stream names the author, committer, dates, message, branch and every file mode, and
carries each file's bytes with line endings normalised to LF, so the commit it produces has
the same sha on every machine, whatever the checkout's autocrlf, umask or file system did to
the files under `demo_corpus/tree/`. No git config can change a fast-import commit.
"""

from __future__ import annotations

import re
from pathlib import Path

from orchestrator.settings import PACKAGE_DIR

TREE = PACKAGE_DIR / "demo_corpus" / "tree"
BRANCH = "refs/heads/main"
IDENT = "sandbench demo <demo@sandbench.invalid> 1704067200 +0000"  # 2024-01-01T00:00:00Z
MESSAGE = b"acme-shop: ordering, storefront and inventory\n"
FILE_MODE = "100644"

# Paths fast-import can take unquoted, and that no file system or archive mangles.
_SAFE_PATH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)*")


def files(tree: Path = TREE) -> list[tuple[str, bytes]]:
    """Every regular file under `tree`, as (posix path, LF-normalised bytes), sorted by path."""
    found: list[tuple[str, bytes]] = []
    for path in tree.rglob("*"):
        rel = path.relative_to(tree).as_posix()
        if path.is_symlink() or not (path.is_file() or path.is_dir()):
            raise ValueError(f"demo corpus: {rel} is not a regular file or directory")
        if path.is_dir():
            continue
        if not _SAFE_PATH.fullmatch(rel):
            raise ValueError(f"demo corpus: path {rel!r} needs quoting; rename it")
        found.append((rel, path.read_bytes().replace(b"\r\n", b"\n")))
    return sorted(found, key=lambda item: item[0].encode())


def fast_import_stream(tree: Path = TREE) -> bytes:
    """One commit on `BRANCH` holding every file of `tree` at mode 100644."""
    out = [f"commit {BRANCH}\nauthor {IDENT}\ncommitter {IDENT}\n".encode(),
           b"data %d\n%s\n" % (len(MESSAGE), MESSAGE)]
    for rel, data in files(tree):
        out.append(b"M %s inline %s\ndata %d\n%s\n" % (FILE_MODE.encode(), rel.encode(),
                                                        len(data), data))
    out.append(b"done\n")
    return b"".join(out)

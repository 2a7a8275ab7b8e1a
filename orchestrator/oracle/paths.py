"""Paths an oracle's index names, confined to the corpus: a document's relative path and the
project root's file URI are checked lexically (no `..`, `.`, empty or absolute component, no
NUL), and a file the host reads because the index named it is opened component by component
from a trusted root without following any link. Anything else is a `HostileInput` of kind
`path-escape`.

The resolver here is the oracle's own; it is to be merged with `orchestrator/untrusted/paths.py`
(written in parallel) once both exist.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from urllib.parse import unquote_to_bytes

from orchestrator.untrusted import limits
from orchestrator.untrusted.errors import HostileInput

FILE_SCHEME = "file://"


def _escape(message: str, **data: object) -> HostileInput:
    return HostileInput("path-escape", message, **data)


def _parts(path: str, what: str | None = None) -> list[str]:
    """The components of a relative path, or why it could leave its root (`what` names the
    path in the message: the path itself unless told)."""
    what = what or f"the path {path!r}"
    if len(path.encode("utf-8", "surrogatepass")) > limits.SCIP_PATH_MAX_BYTES:
        raise _escape(f"a path of {len(path)} characters is longer than "
                      f"{limits.SCIP_PATH_MAX_BYTES} bytes (PATH_MAX)")
    if "\0" in path:
        raise _escape(f"{what} holds a NUL byte")
    if path.startswith("/"):
        raise _escape(f"{what} is absolute, not relative to the corpus")
    parts = path.split("/")
    if bad := [p for p in parts if p in ("", ".", "..")]:
        raise _escape(f"{what} has a component {bad[0]!r}: only plain names stay inside the "
                      "corpus")
    return parts


def relative(path: str) -> str:
    """`path` if it names a file inside its root by plain names only."""
    _parts(path)
    return path


def root_under(uri: str, mount: str) -> str:
    """The directory a project root URI (`file:///...`, percent-encoded) names, relative to
    `mount` ('' for the mount itself); refused unless it is `mount` or a directory under it
    by plain names."""
    if not uri.startswith(FILE_SCHEME + "/"):
        raise _escape(f"the project root {uri[:200]!r} is not a file URI without a host",
                      root=uri[:200])
    try:
        path = unquote_to_bytes(uri[len(FILE_SCHEME):]).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _escape(f"the project root {uri[:200]!r} is not UTF-8 once percent-decoded",
                      root=uri[:200]) from exc
    relative_root = path.rstrip("/").removeprefix("/")
    parts = _parts(relative_root, f"the project root {uri[:200]!r}") if relative_root else []
    mount_parts = mount.strip("/").split("/")
    if parts[:len(mount_parts)] != mount_parts:
        raise _escape(f"the index's project root {uri[:200]!r} is not the corpus ({mount}) or a "
                      "directory under it", root=uri)
    return "/".join(parts[len(mount_parts):])


def read_confined(root: Path, path: str) -> bytes:
    """The bytes of the regular file `path` under the trusted directory `root`, each component
    opened without following a link (so `..`, an absolute path, a symbolic link anywhere on
    the way, a FIFO or a device never reach a read)."""
    parts = _parts(path)
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW
    fd = os.open(root, os.O_RDONLY | os.O_CLOEXEC | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            inner = os.open(part, flags | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        inner = os.open(parts[-1], flags | os.O_NONBLOCK | os.O_NOCTTY, dir_fd=fd)
    except OSError as exc:
        name = errno.errorcode.get(exc.errno or 0, str(exc.errno))
        raise _escape(f"{path!r} does not open under {root} without following a link "
                      f"({name})", document=path) from exc
    finally:
        os.close(fd)
    with os.fdopen(inner, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise _escape(f"{path!r} under {root} is not a regular file", document=path)
        return fh.read()

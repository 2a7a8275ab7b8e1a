"""Paths an oracle's index names: the project root's file URI must name the corpus mount or
a directory under it by plain names. The generic confinement (a relative name checked
lexically, a file opened component by component without following a link) is
`orchestrator.untrusted.paths`; anything refused is a `HostileInput` of kind `path-escape`.
"""

from __future__ import annotations

from urllib.parse import unquote_to_bytes

from orchestrator.untrusted.errors import HostileInput
from orchestrator.untrusted.paths import parts

__all__ = ["FILE_SCHEME", "root_under"]

FILE_SCHEME = "file://"


def _escape(message: str, **data: object) -> HostileInput:
    return HostileInput("path-escape", message, **data)


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
    names = parts(relative_root, f"the project root {uri[:200]!r}") if relative_root else []
    mount_parts = mount.strip("/").split("/")
    if names[:len(mount_parts)] != mount_parts:
        raise _escape(f"the index's project root {uri[:200]!r} is not the corpus ({mount}) or a "
                      "directory under it", root=uri)
    return "/".join(names[len(mount_parts):])

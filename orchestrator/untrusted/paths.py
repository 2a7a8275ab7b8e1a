"""Names a tool chose, resolved inside their root without following a link out of it.

A relative name is checked lexically first (no `..`, `.`, empty or absolute component, no
NUL, at most PATH_MAX bytes), then opened component by component from a directory the host
trusts: every directory with O_NOFOLLOW|O_DIRECTORY, the leaf with O_NOFOLLOW, each relative
to the descriptor of the one before. A symbolic link anywhere on the way (to `/proc`, to `..`,
to a host file), a FIFO or a device never reaches a read, a chown or a mkdir. Anything else
is a `HostileInput` of kind `path-escape` (or `not-a-directory`, `not-a-file`, `too-large`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from orchestrator.untrusted import limits
from orchestrator.untrusted.errors import HostileInput

_DIR_FLAGS = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_DIRECTORY
_FILE_FLAGS = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY


def _escape(message: str, **data: object) -> HostileInput:
    return HostileInput("path-escape", message, **data)


def parts(path: str, what: str | None = None) -> list[str]:
    """The components of a relative path, or why it could leave its root (`what` names the
    path in the message: the path itself unless told)."""
    what = what or f"the path {path[:200]!r}"
    if len(path.encode("utf-8", "surrogateescape")) > limits.PATH_MAX_BYTES:
        raise _escape(f"a path of {len(path)} characters is longer than "
                      f"{limits.PATH_MAX_BYTES} bytes (PATH_MAX)")
    if "\0" in path:
        raise _escape(f"{what} holds a NUL byte")
    if path.startswith("/"):
        raise _escape(f"{what} is absolute, not relative to its root")
    found = path.split("/")
    if bad := [p for p in found if p in ("", ".", "..")]:
        raise _escape(f"{what} has a component {bad[0]!r}: only plain names stay inside "
                      "their root")
    return found


def relative(path: str) -> str:
    """`path` if it names something inside its root by plain names only."""
    parts(path)
    return path


def _errno_name(exc: OSError) -> str:
    return errno.errorcode.get(exc.errno or 0, str(exc.errno))


def _refused_kind(fd: int, name: str) -> str:
    """Why `name` in the directory `fd` did not open as a directory: a link (or nothing) is
    a way out; anything else there (a file, a FIFO) is not a directory."""
    try:
        mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
    except OSError:
        return "path-escape"
    return "path-escape" if stat.S_ISLNK(mode) else "not-a-directory"


def _walk_down(root: Path | int, names: list[str], path: str, create: bool = False) -> int:
    """A descriptor of the directory `names` under `root` (a path the host trusts, or an
    open directory descriptor), every component opened without following a link; made
    (mode 0755) where missing when `create`."""
    try:
        fd = os.open(root, _DIR_FLAGS & ~os.O_NOFOLLOW) if not isinstance(root, int) \
            else os.dup(root)
    except OSError as exc:
        raise _escape(f"the root {root} does not open as a directory ({_errno_name(exc)})",
                      path=path) from exc
    try:
        for index, part in enumerate(names):
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
            try:
                inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise HostileInput(_refused_kind(fd, part), f"{part!r} of {path!r} under "
                                   f"{root} does not open as a directory without following a "
                                   f"link ({_errno_name(exc)})", path=path,
                                   at="/".join(names[:index + 1])) from exc
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def opened_dir(root: Path | int, rel: str = "") -> Iterator[int]:
    """A descriptor of the directory `rel` under `root` ('' for the root itself), closed
    after."""
    fd = _walk_down(root, parts(rel) if rel else [], rel)
    try:
        yield fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def made_dirs(root: Path | int, rel: str) -> Iterator[int]:
    """`rel` under `root` made where missing, as `mkdir -p` would but never through a link or
    a file planted on the way; a descriptor of the last directory, closed after."""
    fd = _walk_down(root, parts(rel), rel, create=True)
    try:
        yield fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def opened_file(root: Path | int, rel: str) -> Iterator[int]:
    """A descriptor of the regular file `rel` under `root`, read-only, closed after."""
    names = parts(rel)
    with opened_dir(root, "/".join(names[:-1])) if len(names) > 1 else \
            opened_dir(root) as parent:
        try:
            fd = os.open(names[-1], _FILE_FLAGS, dir_fd=parent)
        except OSError as exc:
            raise _escape(f"{rel!r} does not open under {root} without following a link "
                          f"({_errno_name(exc)})", path=rel) from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise HostileInput("not-a-file", f"{rel!r} under {root} is not a regular file",
                               path=rel)
        yield fd
    finally:
        os.close(fd)


def read_bytes(root: Path | int, rel: str, limit: int) -> bytes:
    """The bytes of the regular file `rel` under `root`, refused when longer than `limit`."""
    with opened_file(root, rel) as fd:
        size = os.fstat(fd).st_size
        if size > limit:
            raise HostileInput("too-large", f"{rel!r} under {root} holds {size:,} bytes, more "
                               f"than the {limit:,} read from it", path=rel, size=size)
        chunks, left = [], limit + 1
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
    if len(data) > limit:  # grew since the fstat
        raise HostileInput("too-large", f"{rel!r} under {root} grew past the {limit:,} bytes "
                           "read from it", path=rel)
    return data

"""Atomic writes and hashing. A result counts as written only once it is renamed into place."""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import re
import tempfile
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from orchestrator.errors import InputError
from orchestrator.sandbox.shared_checks import key_path

CHUNK = 1 << 20
_LIBC = ctypes.CDLL(None, use_errno=True)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _umask() -> int:
    """The process's umask, read without setting it (os.umask would race other threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


# What a plain open(2) would give a new file: readable by whom the user's umask lets read it.
FILE_MODE = 0o666 & ~_umask()


def atomic_write_bytes(path: Path, data: bytes | Iterable[bytes], *, durable: bool = True) -> None:
    """Write to a temp file beside `path`, fsync, rename, fsync the directory. With
    `durable=False` the two fsyncs are left to a later `sync_filesystem` (a run's cells): the
    rename is still atomic, so a reader sees the old file or the whole new one, never a part."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, FILE_MODE)  # mkstemp's 0600 would hide a seal or a result from its readers
        with os.fdopen(fd, "wb") as fh:
            if isinstance(data, bytes | bytearray):
                fh.write(data)
            else:
                for chunk in data:
                    fh.write(chunk)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if durable:
        _fsync_dir(path.parent)


def sync_filesystem(path: Path) -> None:
    """Flush every write on the file system holding `path` to disk (syncfs(2)): one call
    makes a batch of non-durable writes durable at once, at the cost of one fsync."""
    fd = os.open(path, os.O_RDONLY)
    try:
        if _LIBC.syncfs(fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), str(path))
    finally:
        os.close(fd)


def atomic_write_text(path: Path, text: str) -> None:
    """`text` as UTF-8. Every tool string reaching a document is portable already
    (`untrusted.strings`); should a lone surrogate slip through anyway, it is written as its
    `\\udcNN` escape rather than fail the write (no document write may fail on tool bytes)."""
    atomic_write_bytes(path, text.encode("utf-8", "backslashreplace"))


# A lone surrogate (U+D800..U+DFFF): UTF-8 cannot encode one.
_SURROGATE = re.compile("[\ud800-\udfff]")


def canonical_json(obj: Any) -> str:
    """The one JSON spelling used for every file sandbench writes: sorted, indented, newline.
    Always encodable: a lone surrogate, which can only stand inside a JSON string, is spelled
    as its JSON escape, which reads back as the same string (a backstop: tool strings are made
    portable where they are read)."""
    text = json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if _SURROGATE.search(text):
        text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)
    return text


def atomic_write_json(path: Path, obj: Any, *, durable: bool = True) -> None:
    atomic_write_bytes(path, canonical_json(obj).encode("utf-8"), durable=durable)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class _Duplicated(dict[str, Any]):
    """A JSON object in which `name` was written twice (json.loads would keep the last)."""

    name = ""


class _DuplicateName(ValueError):
    pass


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _DuplicateName
    return obj


def _marked(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """As _unique, but an object with a duplicate is kept, marked, for _duplicate_at."""
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    marked = _Duplicated(obj)
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            marked.name = key
            break
        seen.add(key)
    return marked


def _duplicate_at(value: Any, where: tuple[str | int, ...] = ()) -> tuple[str | int, ...] | None:
    if isinstance(value, _Duplicated):
        return (*where, value.name)
    members = value.items() if isinstance(value, dict) else \
        enumerate(value) if isinstance(value, list) else ()
    for key, item in members:
        if found := _duplicate_at(item, (*where, key)):
            return found
    return None


def read_json(path: Path, fix: str | None = None) -> Any:
    """A JSON input, or one error naming the file: missing, where it does not parse, or the
    key of a member written twice (json.loads would silently keep the last)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
        return json.loads(text, object_pairs_hook=_unique)
    except FileNotFoundError:
        raise InputError(f"{path} is missing", file=str(path)) from None
    except OSError as exc:
        raise InputError(f"{path} cannot be read: {exc.strerror}", file=str(path),
                         fix=fix or "give the user running sandbench read access to it"
                         ) from None
    except _DuplicateName:
        where = _duplicate_at(json.loads(text, object_pairs_hook=_marked)) or ()
        raise InputError.bad_value(path, key_path(where), "each name once in its object",
                                   "written twice", fix=fix) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: does not parse: {exc}", fix=fix, file=str(path)) from exc


_OVERWRITE = re.compile(r"Cannot overwrite a value \(at line (\d+), column \d+\)")
# A key no input uses, added after a statement's preceding lines to find its table.
_HERE = '\n"\\u0000" = 0\n'


def _path_of(doc: Any, key: str) -> tuple[str | int, ...] | None:
    """Where `key` is in a parsed TOML document (the last table of an array of tables)."""
    if isinstance(doc, list) and doc:
        found = _path_of(doc[-1], key)
        return None if found is None else (len(doc) - 1, *found)
    if not isinstance(doc, dict):
        return None
    if key in doc:
        return ()
    for name, value in doc.items():
        if (found := _path_of(value, key)) is not None:
            return (name, *found)
    return None


def _statement_key(line: str) -> tuple[str, ...] | None:
    """The (dotted) key of a `key = value` line, parsed by tomllib itself."""
    for at in (i for i, c in enumerate(line) if c == "="):
        try:
            doc: Any = tomllib.loads(line[:at] + "= 0")
        except tomllib.TOMLDecodeError:
            continue
        parts: list[str] = []
        while isinstance(doc, dict) and len(doc) == 1:
            (name, doc), = doc.items()
            parts.append(name)
        return tuple(parts)
    return None


def duplicate_toml_key(path: Path, text: str, exc: tomllib.TOMLDecodeError) -> InputError | None:
    """tomllib's 'Cannot overwrite a value (at line N)' as the dotted key written twice."""
    if not (match := _OVERWRITE.search(str(exc))):
        return None
    lines = text.splitlines(keepends=True)
    end = int(match.group(1))
    for start in range(end, 0, -1):  # the statement may span lines: find where it begins
        try:
            if not tomllib.loads("".join(lines[start - 1:end])):
                continue
        except tomllib.TOMLDecodeError:
            continue
        key = _statement_key(lines[start - 1])
        try:
            before = tomllib.loads("".join(lines[:start - 1]) + _HERE)
        except tomllib.TOMLDecodeError:
            return None
        table = _path_of(before, "\0")
        if key is None or table is None:
            return None
        return InputError.bad_value(f"{path}:{end}", key_path((*table, *key)),
                                    "a key written once", "written twice")
    return None


def read_toml(path: Path) -> dict[str, Any]:
    """A TOML input, or one error naming the file: missing, where it does not parse, or the
    dotted key written twice."""
    try:
        text = Path(path).read_text(encoding="utf-8")
        return tomllib.loads(text)
    except FileNotFoundError:
        raise InputError(f"{path} is missing", file=str(path)) from None
    except tomllib.TOMLDecodeError as exc:
        raise duplicate_toml_key(path, text, exc) or InputError(
            f"{path}: does not parse: {exc}", file=str(path)) from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: does not parse: {exc}", file=str(path)) from exc

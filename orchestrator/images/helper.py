"""The host's copy of the timing helper. The recipe with a [helper] table builds the static
`sandbench-exec`; its bytes live under the bench root (host state, like the lock; its sha256
in that image's lock entry), are mounted read-only into every sandbox, and travel beside an
exported archive."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orchestrator.errors import InputError
from orchestrator.fsutil import atomic_write_bytes, sha256_file
from orchestrator.settings import Settings

HELPER_DIR = "helper"  # under the bench root


def install(path: Path, data: bytes) -> None:
    """The helper's bytes at `path`, read-only and executable for every uid (the sandbox
    user owns nothing on the host)."""
    atomic_write_bytes(path, data)
    path.chmod(0o555)


def entry_problem(settings: Settings, entry: dict[str, Any]) -> str | None:
    helper = entry.get("helper")
    if not isinstance(helper, dict):
        return "no helper in the lock entry"
    return helper_problem(settings, helper)


def helper_problem(settings: Settings, helper: dict[str, Any]) -> str | None:
    """Why the host's copy of a locked helper cannot be mounted, or None."""
    path = settings.bench_root / helper["path"]
    if not path.is_file():
        return f"{path} is missing"
    if (found := sha256_file(path)) != helper["sha256"]:
        return f"{path} has sha256 {found[:12]}, the lock says {helper['sha256'][:12]}"
    return None


def archive_copy(archive: Path) -> Path:
    return archive.with_name(archive.name + ".helper")


def install_from_archive(settings: Settings, archive: Path, helper: dict[str, Any]) -> None:
    """The helper file exported beside the archive, installed where the lock entry says,
    once its sha256 is the entry's."""
    source = archive_copy(archive)
    if not source.is_file():
        raise InputError(f"{source} is missing", fix="export writes it beside the archive; "
                         "copy it too", file=str(source))
    if (found := sha256_file(source)) != helper.get("sha256"):
        raise InputError.bad_value(source, "helper.sha256", str(helper.get("sha256")), found,
                                   fix="the helper was altered or truncated in transit")
    rel = Path(str(helper.get("path", "")))
    if rel.is_absolute() or ".." in rel.parts or rel.parts[:1] != (HELPER_DIR,):
        raise InputError.bad_value(source, "helper.path", f"a path under {HELPER_DIR}/",
                                   helper.get("path"))
    install(settings.bench_root / rel, source.read_bytes())

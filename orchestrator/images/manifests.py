"""What a built image holds, read by one short container: its dpkg and pip manifests, stored
beside the lock, and its tool's version line. The container runs the image's third-party
tool (its version command), so it runs offline, unprivileged, read-only, and what it prints
is bounded (`Engine.run_once`; the version line by `limits.TOOL_VERSION_MAX_CHARS`)."""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any

from orchestrator import labels as lb
from orchestrator.errors import ContainerFailed, EngineError
from orchestrator.fsutil import atomic_write_text, sha256_bytes
from orchestrator.images.recipes import Recipe
from orchestrator.isolation import folds
from orchestrator.isolation.setting import MANIFEST
from orchestrator.settings import Settings
from orchestrator.untrusted import limits

if TYPE_CHECKING:
    from orchestrator.engine import Engine


def _in_image(engine: Engine, image_id: str, argv: list[str]) -> str:
    """Run a short command in the image, offline and unprivileged, and return its stdout."""
    try:
        out = engine.run_once({"image": image_id, "command": argv, "entrypoint": [],
                               "labels": lb.base_labels(**{lb.LABEL_TEMPORARY: "true"}),
                               **folds.own_create(MANIFEST)})
    except ContainerFailed as exc:
        raise EngineError(f"{' '.join(argv)} failed in image {image_id[:19]}",
                          why=exc.why) from exc
    return out.decode("utf-8", errors="replace")


def read_manifests(engine: Engine, settings: Settings, recipe: Recipe, image_id: str
               ) -> dict[str, Any]:
    """dpkg and pip manifests of the image, stored beside the lock, plus the tool version,
    read by one short container (each container costs a start and a removal), the three
    outputs separated by a marker of this call's own."""
    folder = settings.bench_root / "image-manifests" / recipe.name
    marker = f"--sandbench-manifest-{secrets.token_hex(8)}--"
    script = ("dpkg-query -W -f '${Package}=${Version}\\n' && echo \"$1\" && "
              "if [ -x /opt/tool/bin/python ]; then /opt/tool/bin/python -m pip freeze --all; "
              "fi && echo \"$1\" && shift && exec \"$@\"")
    out = _in_image(engine, image_id, ["sh", "-c", script, "sh", marker,
                                       *recipe.tool_version])
    parts = out.split(marker + "\n")
    if len(parts) != 3:
        raise EngineError(f"the manifests of image {image_id[:19]} are not three parts",
                          why=f"expected dpkg, pip and version output separated by {marker}, "
                              f"found {len(parts)} parts")
    dpkg, pip, version_text = parts
    version = version_text.strip().splitlines()
    files = {}
    for kind, text in (("dpkg", "".join(sorted(dpkg.splitlines(keepends=True)))), ("pip", pip)):
        path = folder / f"{kind}.txt"
        atomic_write_text(path, text)
        files[kind] = {"path": path.relative_to(settings.bench_root).as_posix(),
                       "sha256": sha256_bytes(text.encode()), "packages": len(text.splitlines())}
    return {"manifests": files, "tool_version": _cut(version[0]) if version else ""}


def _cut(line: str) -> str:
    """A version line as the lock keeps it: a tool's first line, at most
    `limits.TOOL_VERSION_MAX_CHARS` (a longer one is cut where it says so)."""
    limit = limits.TOOL_VERSION_MAX_CHARS
    return line if len(line) <= limit else f"{line[:limit]}... ({len(line) - limit:,} more)"

"""Image recipes, their hashes, builds and the host's image lock.

A recipe is a folder under images/ with a Dockerfile and a recipe.toml. Its hash covers
every file of the folder, the build arguments and the parent image id, so an unchanged
hash with the image present means the image is exactly what the recipe makes here, and is
not rebuilt. The lock (bench/images.lock) is host state: image ids are per host; export and
import move the exact images, with their lock entries, to another host. The recipe with a
[helper] table also builds the static timing helper, which is copied out to bench/helper/
(host state too: its sha256 is in that image's lock entry) and mounted into every sandbox.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import docker.errors

from orchestrator import engine as eng
from orchestrator import log
from orchestrator.engine import Engine
from orchestrator.errors import EngineError, InputError, SandbenchError
from orchestrator.fsutil import (atomic_write_bytes, atomic_write_json, atomic_write_text,
                                 canonical_json, read_json, read_toml, sha256_bytes,
                                 sha256_file)
from orchestrator.settings import Settings
from orchestrator.values import check_schema

LOCK_VERSION = 1
REPOSITORY = "sandbench"
BUILD_DIR = ".sandbench-build"
DIGEST_PINNED = re.compile(r"^[^@\s]+@sha256:[0-9a-f]{64}$")
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
              "http_proxy", "https_proxy", "no_proxy", "all_proxy")
RECIPE_KEYS = {"description", "parent", "tool_version", "bootstrap", "artifact", "target",
               "helper"}
ARTIFACT_DIR = "artifact"
BOOTSTRAP_KEYS = {"suite", "variant"}
HELPER_KEYS = {"stage", "path"}
HELPER_DIR = "helper"  # under the bench root: host state, like the lock
MANIFEST_USER = "65532:65532"

logger = log.get(__name__)


@dataclass(frozen=True)
class Bootstrap:
    suite: str
    variant: str


@dataclass(frozen=True)
class HelperBuild:
    """The timing helper a recipe builds: the Dockerfile stage holding it, and its path."""

    stage: str
    path: str


@dataclass(frozen=True)
class Recipe:
    name: str
    path: Path
    description: str
    parent: str | None
    tool_version: tuple[str, ...]
    bootstrap: Bootstrap | None
    artifact: str | None = None  # a file the user supplies (--artifact NAME=PATH)
    target: str | None = None  # the Dockerfile stage that is the image (default: the last)
    helper: HelperBuild | None = None

    def files_digest(self) -> str:
        """sha256 over (relative path, mode bit for executables, bytes) of every file."""
        parts = []
        for file in sorted(p for p in self.path.rglob("*") if p.is_file()):
            rel = file.relative_to(self.path).as_posix()
            executable = "x" if os.access(file, os.X_OK) else "-"
            parts.append(f"{rel}\0{executable}\0{sha256_file(file)}\n")
        return sha256_bytes("".join(parts).encode())


def _require(cond: bool, file: Path, key: str, expected: str, found: object) -> None:
    if not cond:
        raise InputError.bad_value(file, key, expected, found)


def load_recipe(path: Path) -> Recipe:
    name = path.name
    if not (path / "Dockerfile").is_file():
        raise InputError(f"recipe {name!r} at {path} has no Dockerfile",
                         fix="every folder under images/ is a recipe: add its Dockerfile",
                         file=str(path / "Dockerfile"))
    toml_path = path / "recipe.toml"
    data = read_toml(toml_path)
    unknown = sorted(set(data) - RECIPE_KEYS)
    _require(not unknown, toml_path, unknown[0] if unknown else "", f"one of {sorted(RECIPE_KEYS)}",
             unknown[0] if unknown else None)
    description = data.get("description", "")
    _require(isinstance(description, str), toml_path, "description", "a string", description)
    parent = data.get("parent")
    _require(parent is None or isinstance(parent, str), toml_path, "parent", "a recipe name",
             parent)
    version = data.get("tool_version")
    _require(isinstance(version, list) and bool(version) and all(isinstance(v, str)
             for v in version), toml_path, "tool_version", "a non-empty list of strings",
             version)
    bootstrap = None
    if "bootstrap" in data:
        table = data["bootstrap"]
        _require(isinstance(table, dict) and set(table) == BOOTSTRAP_KEYS, toml_path,
                 "bootstrap", f"a table with exactly {sorted(BOOTSTRAP_KEYS)}", table)
        for key in sorted(BOOTSTRAP_KEYS):
            _require(isinstance(table[key], str) and re.fullmatch(r"[a-z0-9-]+", table[key])
                     is not None, toml_path, f"bootstrap.{key}", "a Debian name", table[key])
        bootstrap = Bootstrap(suite=table["suite"], variant=table["variant"])
    _require((parent is None) == (bootstrap is not None), toml_path, "parent",
             "a parent recipe, or a [bootstrap] table for the root image", parent)
    artifact = data.get("artifact")
    _require(artifact is None or isinstance(artifact, str) and re.fullmatch(r"[a-z0-9-]+",
             artifact) is not None, toml_path, "artifact", "a file name ([a-z0-9-])", artifact)
    target = data.get("target")
    _require(target is None or isinstance(target, str) and re.fullmatch(r"[a-z0-9-]+", target)
             is not None, toml_path, "target", "a Dockerfile stage name", target)
    helper = None
    if "helper" in data:
        table = data["helper"]
        _require(isinstance(table, dict) and set(table) == HELPER_KEYS, toml_path, "helper",
                 f"a table with exactly {sorted(HELPER_KEYS)}", table)
        _require(isinstance(table["stage"], str) and re.fullmatch(r"[a-z0-9-]+", table["stage"])
                 is not None, toml_path, "helper.stage", "a Dockerfile stage name",
                 table["stage"])
        _require(isinstance(table["path"], str) and table["path"].startswith("/"), toml_path,
                 "helper.path", "an absolute path in that stage", table["path"])
        helper = HelperBuild(stage=table["stage"], path=table["path"])
    return Recipe(name=name, path=path, description=description, parent=parent,
                  tool_version=tuple(version), bootstrap=bootstrap, artifact=artifact,
                  target=target, helper=helper)


def load_recipes(images_dir: Path) -> dict[str, Recipe]:
    """Every recipe, in build order (parents first)."""
    found = {p.name: load_recipe(p) for p in sorted(images_dir.iterdir())
             if p.is_dir() and not p.name.startswith(".")}
    ordered: dict[str, Recipe] = {}

    def visit(name: str, chain: tuple[str, ...]) -> None:
        if name in ordered:
            return
        if name in chain:
            raise InputError.bad_value(found[chain[-1]].path / "recipe.toml", "parent",
                                       "a recipe that is not its own ancestor",
                                       " -> ".join(chain + (name,)))
        recipe = found[name]
        if recipe.parent is not None:
            if recipe.parent not in found:
                raise InputError.bad_value(recipe.path / "recipe.toml", "parent",
                                           f"one of {sorted(found)}", recipe.parent)
            visit(recipe.parent, chain + (name,))
        ordered[name] = recipe

    for name in found:
        visit(name, ())
    return ordered


def select(recipes: dict[str, Recipe], names: Iterable[str]) -> list[Recipe]:
    """The named recipes with their ancestors, in build order; an unknown name is an error."""
    wanted: set[str] = set()
    for name in names:
        if name not in recipes:
            raise InputError(f"unknown image {name!r}", fix=f"known images: "
                             f"{', '.join(recipes)}", name=name)
        while name is not None:
            wanted.add(name)
            name = recipes[name].parent
    return [r for n, r in recipes.items() if n in wanted] if wanted else list(recipes.values())


# -- the lock -------------------------------------------------------------------------------

@dataclass
class ImageLock:
    path: Path
    images: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> ImageLock:
        """The lock, checked whole against orchestrator/schemas/images-lock.schema.json."""
        if not path.exists():
            return cls(path)
        data = check_schema(path, read_json(path, fix="restore it, or delete it and rebuild "
                                                "the images"), "images-lock.schema.json")
        return cls(path, data["images"])

    def save(self) -> None:
        atomic_write_json(self.path, {"version": LOCK_VERSION, "images": self.images})

    def helper(self) -> tuple[Path, str]:
        """The host's timing helper (file under the bench root, sha256) from the lock entry
        of the image that built it; every sandbox mounts it."""
        entries = [e["helper"] for e in self.images.values() if isinstance(e.get("helper"), dict)]
        if len(entries) != 1:
            raise SandbenchError(f"the image lock {self.path} records {len(entries)} timing "
                                 "helpers, expected exactly 1",
                                 why="every sandbox mounts the helper the lock records",
                                 fix="run: sandbench images build base")
        entry = entries[0]
        return self.path.parent / entry["path"], entry["sha256"]

    def image_id(self, name: str) -> str:
        try:
            return self.images[name]["image_id"]
        except KeyError:
            raise SandbenchError(f"image {name!r} is not built on this host",
                                 fix=f"run: sandbench images build {name}") from None


# -- build inputs -----------------------------------------------------------------------------

def debian_mirror(sources: Iterable[Path] | None = None) -> str:
    """SANDBENCH_DEBIAN_MIRROR, else the first Debian archive URI in the host's apt sources."""
    if env := os.environ.get("SANDBENCH_DEBIAN_MIRROR"):
        return env
    if sources is None:
        sources = [Path("/etc/apt/sources.list"),
                   *sorted(Path("/etc/apt/sources.list.d").glob("*.list")),
                   *sorted(Path("/etc/apt/sources.list.d").glob("*.sources"))]
    for source in sources:
        try:
            text = source.read_text(encoding="utf-8")
        except OSError:
            continue
        for uri, suites in _apt_entries(text):
            if "debian" in uri and "security" not in uri and any(
                    not s.endswith(("-security", "-updates", "-backports")) for s in suites):
                return uri.rstrip("/")
    raise SandbenchError("no Debian mirror found in the host's apt sources",
                         fix="set SANDBENCH_DEBIAN_MIRROR to a Debian archive URL")


def _apt_entries(text: str) -> Iterable[tuple[str, list[str]]]:
    """(uri, suites) pairs from one-line (`deb URI SUITE ...`) and deb822 stanzas."""
    stanza: dict[str, str] = {}
    for raw in [*text.splitlines(), ""]:
        if raw.lstrip().startswith("#"):
            continue
        line = raw.split("#", 1)[0].strip()
        if line.startswith("deb "):
            words = [w for w in line.split()[1:] if not w.startswith("[")]
            if len(words) >= 2:
                yield words[0], [words[1]]
            continue
        if not line:
            if stanza.get("types", "").split().count("deb") and "uris" in stanza:
                for uri in stanza["uris"].split():
                    yield uri, stanza.get("suites", "").split()
            stanza = {}
            continue
        if ":" in line:
            key, value = line.split(":", 1)
            stanza[key.strip().lower()] = value.strip()


def build_ca_bundle() -> Path | None:
    """The CA bundle the host's pip trusts, handed to build stages only."""
    for var in ("SANDBENCH_BUILD_CA", "PIP_CERT", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE"):
        if (value := os.environ.get(var)) and Path(value).is_file():
            return Path(value)
    default = Path("/etc/ssl/certs/ca-certificates.crt")
    return default if default.is_file() else None


def proxy_build_args() -> dict[str, str]:
    """The host's proxy settings. Docker treats these as predefined build args: they reach
    RUN steps and are never written into the image's config or history."""
    return {k: v for k in PROXY_VARS if (v := os.environ.get(k))}


def recipe_hash(recipe: Recipe, build_args: dict[str, str], parent_id: str) -> str:
    payload = canonical_json({"files": recipe.files_digest(), "build_args": build_args,
                              "parent_id": parent_id})
    return sha256_bytes(payload.encode())


def tag_for(name: str, rhash: str) -> str:
    return f"{REPOSITORY}/{name}:{rhash[:12]}"


# -- engine side ----------------------------------------------------------------------------

def _image_present(engine: Engine, image_id: str) -> bool:
    try:
        engine.call(f"inspect image {image_id}", engine.api.inspect_image, image_id)
        return True
    except docker.errors.NotFound:
        return False


def _bootstrap_key(bootstrap: Bootstrap, mirror: str) -> str:
    return sha256_bytes(canonical_json({"suite": bootstrap.suite, "variant": bootstrap.variant,
                                        "mirror": mirror}).encode())


def _rootfs(engine: Engine, settings: Settings, recipe: Recipe) -> tuple[str, dict[str, Any]]:
    """The image the base recipe builds FROM: a digest-pinned registry image where the user
    configured one, else a debootstrap tree imported into the engine (cached by its key)."""
    assert recipe.bootstrap is not None
    if configured := os.environ.get("SANDBENCH_BASE_IMAGE"):
        if not DIGEST_PINNED.match(configured):
            raise InputError.bad_value("SANDBENCH_BASE_IMAGE", "SANDBENCH_BASE_IMAGE",
                                       "name@sha256:<64 hex> (a floating tag is refused)",
                                       configured)
        if not _image_present(engine, configured):
            name, digest = configured.split("@", 1)
            engine.call(f"pull {configured}", engine.api.pull, name, tag=digest)
        inspect = engine.call("inspect base", engine.api.inspect_image, configured)
        return inspect["Id"], {"source": "registry", "reference": configured}
    mirror = debian_mirror()
    key = _bootstrap_key(recipe.bootstrap, mirror)
    tag = f"{REPOSITORY}/rootfs:{key[:12]}"
    info = {"source": "debootstrap", "suite": recipe.bootstrap.suite,
            "variant": recipe.bootstrap.variant, "mirror": mirror, "key": key}
    try:
        return engine.call("inspect rootfs", engine.api.inspect_image, tag)["Id"], info
    except docker.errors.NotFound:
        pass
    if shutil.which("debootstrap") is None:
        raise SandbenchError("debootstrap is not installed",
                             fix="apt-get install debootstrap (scripts/ensure-docker does)")
    scratch = settings.bench_root / "tmp"
    scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=scratch, prefix="rootfs-") as tmp:
        tree, tarball = Path(tmp) / "tree", Path(tmp) / "rootfs.tar"
        logger.info("bootstrap", suite=recipe.bootstrap.suite, variant=recipe.bootstrap.variant,
                    mirror=mirror)
        _run_host(["debootstrap", f"--variant={recipe.bootstrap.variant}",
                   recipe.bootstrap.suite, str(tree), mirror], "debootstrap")
        _run_host(["tar", "--numeric-owner", "-C", str(tree), "-cf", str(tarball), "."], "tar")
        engine.call("import rootfs", engine.api.import_image_from_file, str(tarball),
                    repository=f"{REPOSITORY}/rootfs", tag=key[:12])
    return engine.call("inspect rootfs", engine.api.inspect_image, tag)["Id"], info


def _run_host(argv: list[str], what: str) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).splitlines()[-5:])
        raise SandbenchError(f"{what} failed with exit code {proc.returncode}", why=tail)


def _build_context(recipe: Recipe, into: Path, artifact: Path | None) -> Path:
    ctx = into / "context"
    shutil.copytree(recipe.path, ctx, symlinks=True)
    if artifact is not None:
        (ctx / ARTIFACT_DIR).mkdir(exist_ok=True)
        shutil.copy2(artifact, ctx / ARTIFACT_DIR / (recipe.artifact or artifact.name))
    build = ctx / BUILD_DIR
    build.mkdir()
    ca = build_ca_bundle()
    (build / "ca.pem").write_bytes(ca.read_bytes() if ca else b"")
    return ctx


def _docker_build(engine: Engine, settings: Settings, recipe: Recipe, tag: str | None,
                  build_args: dict[str, str], labels: dict[str, str],
                  artifact: Path | None, target: str | None = None) -> str:
    stage = f"-{target}" if target and target != recipe.target else ""
    log_path = settings.bench_root / "image-builds" / f"{recipe.name}{stage}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    api = engine.streaming_api(timeout_s=3600)
    scratch = settings.bench_root / "tmp"
    scratch.mkdir(parents=True, exist_ok=True)
    tail: list[str] = []
    image_id = None
    with tempfile.TemporaryDirectory(dir=scratch, prefix=f"ctx-{recipe.name}-") as tmp, \
            open(log_path, "w", encoding="utf-8") as out:
        ctx = _build_context(recipe, Path(tmp), artifact)
        stream = api.build(path=str(ctx), tag=tag, buildargs={**build_args,
                           **proxy_build_args()}, labels=labels, rm=True, forcerm=True,
                           pull=False, nocache=True, decode=True,
                           target=target or recipe.target)
        for chunk in stream:
            text = chunk.get("stream") or chunk.get("status") or ""
            if text:
                out.write(text)
                tail = (tail + text.splitlines())[-15:]
            if "error" in chunk:
                out.write(chunk["error"] + "\n")
                raise EngineError(f"image {recipe.name!r} failed to build",
                                  why=chunk["error"].strip() + "\n" + "\n".join(tail[-8:]),
                                  fix=f"see the build log {log_path}")
            if aux := chunk.get("aux"):
                image_id = aux.get("ID", image_id)
    if image_id is None and tag is not None:
        image_id = engine.call("inspect built image", engine.api.inspect_image, tag)["Id"]
    if image_id is None:
        raise EngineError(f"the build of {recipe.name!r} named no image",
                          fix=f"see the build log {log_path}")
    return image_id


def _build_helper(engine: Engine, settings: Settings, recipe: Recipe,
                  build_args: dict[str, str]) -> dict[str, Any]:
    """Build the recipe's helper stage, copy the one file out of it to the bench root
    (content-addressed, read-only) and remove what the build left, by id. Returns the
    lock's `helper` member: path relative to the bench root, and sha256."""
    assert recipe.helper is not None
    labels = eng.base_labels(**{eng.LABEL_TEMPORARY: "true", eng.LABEL_IMAGE: recipe.name})
    image_id = _docker_build(engine, settings, recipe, None, build_args, labels, None,
                             target=recipe.helper.stage)
    container_id = None
    try:
        container_id = engine.call("create helper container", engine.api.create_container,
                                   image_id, [recipe.helper.path], labels=labels,
                                   network_disabled=True)["Id"]
        stream, _ = engine.call("copy the helper out", engine.api.get_archive, container_id,
                                recipe.helper.path)
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            member = tar.next()
            fh = tar.extractfile(member) if member is not None and member.isfile() else None
            if fh is None:
                raise EngineError(f"{recipe.helper.path} in the {recipe.helper.stage!r} stage "
                                  f"of {recipe.name!r} is not a regular file")
            data = fh.read()
    finally:
        if container_id is not None:
            engine.call("remove helper container", engine.api.remove_container, container_id,
                        force=True)
        engine.call("remove helper image", engine.api.remove_image, image_id, force=True,
                    noprune=False)
    digest = sha256_bytes(data)
    path = settings.bench_root / HELPER_DIR / f"sandbench-exec-{digest[:12]}"
    _install_helper(path, data)
    return {"path": path.relative_to(settings.bench_root).as_posix(), "sha256": digest,
            "size_bytes": len(data)}


def _install_helper(path: Path, data: bytes) -> None:
    """The helper's bytes at `path`, read-only and executable for every uid (the sandbox
    user owns nothing on the host)."""
    atomic_write_bytes(path, data)
    path.chmod(0o555)


def _helper_missing(settings: Settings, entry: dict[str, Any]) -> str | None:
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


def _in_image(engine: Engine, image_id: str, argv: list[str]) -> str:
    """Run a short command in the image, offline and unprivileged, and return its stdout."""
    try:
        out = engine.call(f"run {argv[0]} in {image_id[:19]}", engine.client.containers.run,
                          image_id, argv, network_mode="none", user=MANIFEST_USER,
                          read_only=True, cap_drop=["ALL"], remove=True, stdout=True,
                          stderr=False, labels=eng.base_labels(**{eng.LABEL_TEMPORARY: "true"}),
                          entrypoint=[])
    except docker.errors.ContainerError as exc:
        raise EngineError(f"{' '.join(argv)} failed in image {image_id[:19]}",
                          why=(exc.stderr or b"").decode(errors="replace")[-500:]) from exc
    return out.decode("utf-8", errors="replace")


def _manifests(engine: Engine, settings: Settings, recipe: Recipe, image_id: str
               ) -> dict[str, Any]:
    """dpkg and pip manifests of the image, stored beside the lock, plus the tool version."""
    folder = settings.bench_root / "image-manifests" / recipe.name
    dpkg = _in_image(engine, image_id, ["dpkg-query", "-W", "-f", "${Package}=${Version}\\n"])
    pip = _in_image(engine, image_id, ["sh", "-c", "if [ -x /opt/tool/bin/python ]; then "
                                       "/opt/tool/bin/python -m pip freeze --all; fi"])
    version = _in_image(engine, image_id, list(recipe.tool_version)).strip().splitlines()
    files = {}
    for kind, text in (("dpkg", "".join(sorted(dpkg.splitlines(keepends=True)))), ("pip", pip)):
        path = folder / f"{kind}.txt"
        atomic_write_text(path, text)
        files[kind] = {"path": path.relative_to(settings.bench_root).as_posix(),
                       "sha256": sha256_bytes(text.encode()), "packages": len(text.splitlines())}
    return {"manifests": files, "tool_version": version[0] if version else ""}


@dataclass(frozen=True)
class BuildOutcome:
    name: str
    action: str  # built | up-to-date | would-build | unavailable
    reason: str
    tag: str | None = None
    image_id: str | None = None
    seconds: float | None = None


def parse_artifacts(specs: Iterable[str]) -> dict[str, Path]:
    """`NAME=PATH` pairs given with --artifact; each must be an existing file."""
    artifacts = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise InputError.bad_value("--artifact", "--artifact", "NAME=PATH", spec)
        if not Path(path).is_file():
            raise InputError.bad_value("--artifact", f"--artifact {name}", "an existing file",
                                       path)
        artifacts[name] = Path(path).resolve()
    return artifacts


def build(engine: Engine | None, settings: Settings, names: Iterable[str] = (),
          dry_run: bool = False, artifacts: dict[str, Path] | None = None
          ) -> list[BuildOutcome]:
    """Build the named recipes (all when none are named) and their ancestors, skipping every
    image whose recipe hash is unchanged and whose image is present. A recipe that needs a
    user-supplied artifact is `unavailable` until one is given."""
    artifacts = artifacts or {}
    recipes = load_recipes(settings.images_dir)
    for name in artifacts:
        if name not in {r.artifact for r in recipes.values()}:
            raise InputError.bad_value("--artifact", "--artifact", "the artifact of a recipe "
                                       f"({sorted(r.artifact for r in recipes.values() if r.artifact)})",
                                       name)
    lock = ImageLock.load(settings.images_lock)
    outcomes: list[BuildOutcome] = []
    rebuilt: set[str] = set()
    for recipe in select(recipes, names):
        entry = lock.images.get(recipe.name)
        parent_changed = recipe.parent in rebuilt
        if recipe.bootstrap is not None:
            if dry_run or engine is None:
                parent_id, base_info = (entry or {}).get("parent_id", ""), {}
            else:
                parent_id, base_info = _rootfs(engine, settings, recipe)
            build_args = {"ROOTFS": parent_id}
        else:
            parent_entry = lock.images.get(recipe.parent or "", {})
            parent_id, base_info = parent_entry.get("image_id", ""), {}
            # FROM the parent's image id, never its tag: another bench root on the same
            # engine may have pointed the tag at its own build of the same recipe.
            build_args = {"BASE": parent_entry.get("image_id", "")}
        artifact = artifacts.get(recipe.artifact or "")
        if recipe.artifact:
            if artifact is None and entry is None:
                outcomes.append(BuildOutcome(recipe.name, "unavailable", f"needs --artifact "
                                             f"{recipe.artifact}=PATH"))
                continue
            build_args["ARTIFACT_SHA256"] = (sha256_file(artifact) if artifact else
                                             entry.get("build_args", {}).get("ARTIFACT_SHA256",
                                                                             ""))
        rhash = recipe_hash(recipe, build_args, parent_id)
        reason = _why_build(engine, entry, rhash, parent_changed)
        if reason is None and recipe.helper is not None and (
                missing := _helper_missing(settings, entry)):
            if dry_run or engine is None:
                outcomes.append(BuildOutcome(recipe.name, "would-build", missing))
                continue
            # The image is what the recipe makes; only the host's copy of its helper is not.
            entry["helper"] = _build_helper(engine, settings, recipe, build_args)
            lock.save()
            outcomes.append(BuildOutcome(recipe.name, "built", f"helper only: {missing}",
                                         entry["tag"], entry["image_id"]))
            continue
        if reason is None:
            note = "recipe hash unchanged and image present"
            if engine is not None and _retag(engine, entry):
                note += "; tag re-pointed at the locked image"
            outcomes.append(BuildOutcome(recipe.name, "up-to-date", note, entry["tag"],
                                         entry["image_id"]))
            continue
        if dry_run or engine is None:
            outcomes.append(BuildOutcome(recipe.name, "would-build", reason))
            rebuilt.add(recipe.name)
            continue
        tag = tag_for(recipe.name, rhash)
        labels = eng.base_labels(**{eng.LABEL_IMAGE: recipe.name, eng.LABEL_RECIPE: rhash})
        logger.info("build", image=recipe.name, reason=reason, tag=tag)
        started = time.monotonic()
        image_id = _docker_build(engine, settings, recipe, tag, build_args, labels, artifact)
        helper = (_build_helper(engine, settings, recipe, build_args)
                  if recipe.helper is not None else None)
        seconds = round(time.monotonic() - started, 3)
        size = engine.call("inspect image", engine.api.inspect_image, image_id)["Size"]
        lock.images[recipe.name] = {
            "recipe_hash": rhash, "image_id": image_id, "tag": tag, "parent": recipe.parent,
            "parent_id": parent_id, "build_args": build_args, "build_seconds": seconds,
            "size_bytes": size, "built_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            **({"base": base_info} if base_info else {}),
            **({"helper": helper} if helper else {}),
            **({"artifact": {"name": recipe.artifact, "path": str(artifact),
                             "sha256": build_args["ARTIFACT_SHA256"]}} if artifact else {}),
            **_manifests(engine, settings, recipe, image_id)}
        lock.save()
        rebuilt.add(recipe.name)
        outcomes.append(BuildOutcome(recipe.name, "built", reason, tag, image_id, seconds))
    return outcomes


def _retag(engine: Engine, entry: dict[str, Any]) -> bool:
    """Point the lock's tag back at the lock's image when another build moved it."""
    try:
        current = engine.call("inspect tag", engine.api.inspect_image, entry["tag"])["Id"]
    except docker.errors.NotFound:
        current = None
    if current == entry["image_id"]:
        return False
    repository, tag = entry["tag"].rsplit(":", 1)
    engine.call("tag image", engine.api.tag, entry["image_id"], repository, tag, force=True)
    return True


def _why_build(engine: Engine | None, entry: dict[str, Any] | None, rhash: str,
               parent_changed: bool) -> str | None:
    if entry is None:
        return "not in the lock"
    if parent_changed:
        return "parent image rebuilt"
    if entry["recipe_hash"] != rhash:
        return "recipe changed"
    if engine is not None and not _image_present(engine, entry["image_id"]):
        return "image missing from the engine"
    return None


@dataclass(frozen=True)
class ImageCheck:
    name: str
    status: str  # ok | unavailable | missing | stale | mismatched
    detail: str


def verify(engine: Engine, settings: Settings) -> list[ImageCheck]:
    """Local images against the lock: never built, missing, stale recipe, or a tag that now
    points at another image than the one locked."""
    recipes = load_recipes(settings.images_dir)
    lock = ImageLock.load(settings.images_lock)
    checks = []
    for recipe in recipes.values():
        entry = lock.images.get(recipe.name)
        if entry is None and recipe.artifact:
            checks.append(ImageCheck(recipe.name, "unavailable",
                                     f"needs --artifact {recipe.artifact}=PATH"))
            continue
        if entry is None:
            checks.append(ImageCheck(recipe.name, "missing", "not in the lock: never built"))
            continue
        build_args = dict(entry.get("build_args", {}))
        if recipe.parent is not None:
            build_args = {"BASE": lock.images.get(recipe.parent, {}).get("image_id", ""),
                          **({"ARTIFACT_SHA256": build_args.get("ARTIFACT_SHA256", "")}
                             if recipe.artifact else {})}
            parent_id = lock.images.get(recipe.parent, {}).get("image_id", "")
        else:
            parent_id = entry.get("parent_id", "")
        rhash = recipe_hash(recipe, build_args, parent_id)
        if not _image_present(engine, entry["image_id"]):
            checks.append(ImageCheck(recipe.name, "missing",
                                     f"locked image {entry['image_id'][:19]} is not present"))
        elif rhash != entry["recipe_hash"]:
            checks.append(ImageCheck(recipe.name, "stale", "recipe or parent changed since "
                                     f"the build (hash {entry['recipe_hash'][:12]} -> "
                                     f"{rhash[:12]})"))
        else:
            try:
                tagged = engine.call("inspect tag", engine.api.inspect_image, entry["tag"])["Id"]
            except docker.errors.NotFound:
                tagged = None
            if tagged != entry["image_id"]:
                checks.append(ImageCheck(recipe.name, "mismatched",
                                         f"tag {entry['tag']} is {tagged}, lock says "
                                         f"{entry['image_id']}"))
            else:
                checks.append(ImageCheck(recipe.name, "ok", entry["image_id"][:19]))
    for recipe in recipes.values():
        if recipe.helper is not None and (entry := lock.images.get(recipe.name)) is not None:
            problem = _helper_missing(settings, entry)
            status = "ok" if problem is None else (
                "mismatched" if "sha256" in problem else "missing")
            checks.append(ImageCheck(f"{recipe.name} helper", status, problem or
                                     f"sha256 {entry['helper']['sha256'][:12]}"))
    return checks


def export(engine: Engine, settings: Settings, names: list[str], out: Path) -> Path:
    """`docker save` of the locked images into `out`, and `out`.json with their lock entries
    and the archive's sha256, so another host can run the exact same images."""
    lock = ImageLock.load(settings.images_lock)
    recipes = load_recipes(settings.images_dir)
    chosen = [r.name for r in select(recipes, names)]
    entries = {n: lock.images[n] for n in chosen if lock.image_id(n)}
    tmp = out.with_name(f".{out.name}.tmp")
    try:
        with open(tmp, "wb") as fh:
            for chunk in engine.save_images([e["tag"] for e in entries.values()]):
                fh.write(chunk)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    # The timing helper is a host file, not an image: it travels beside the archive.
    helpers = [e["helper"] for e in entries.values() if isinstance(e.get("helper"), dict)]
    for helper in helpers:
        if problem := helper_problem(settings, helper):
            raise SandbenchError(f"cannot export the timing helper: {problem}",
                                 fix="run: sandbench images build base")
        shutil.copyfile(settings.bench_root / helper["path"], _helper_file(out))
    sidecar = out.with_name(out.name + ".json")
    atomic_write_json(sidecar, {"version": LOCK_VERSION, "archive": out.name,
                                "sha256": sha256_file(out), "images": entries})
    return sidecar


def _helper_file(archive: Path) -> Path:
    return archive.with_name(archive.name + ".helper")


def import_(engine: Engine, settings: Settings, archive: Path) -> list[str]:
    """Load an exported archive after checking its sha256, then adopt its lock entries once
    every image id matches what the archive claims."""
    import json
    sidecar = archive.with_name(archive.name + ".json")
    try:
        meta = json.loads(sidecar.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{sidecar} is missing", fix="export writes it beside the archive; "
                         "copy both", file=str(sidecar)) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{sidecar}: does not parse: {exc}", file=str(sidecar)) from exc
    found = sha256_file(archive)
    if found != meta.get("sha256"):
        raise InputError.bad_value(sidecar, "sha256", meta.get("sha256"), found,
                                   fix="the archive was altered or truncated in transit")
    api = engine.streaming_api(timeout_s=3600)
    with open(archive, "rb") as fh:
        for _ in api.load_image(fh):
            pass
    lock = ImageLock.load(settings.images_lock)
    for name, entry in meta["images"].items():
        actual = engine.call("inspect imported", engine.api.inspect_image, entry["tag"])["Id"]
        if actual != entry["image_id"]:
            raise SandbenchError(f"imported image {name!r} has id {actual}, "
                                 f"expected {entry['image_id']}")
        if isinstance(helper := entry.get("helper"), dict):
            _import_helper(settings, archive, helper)
        lock.images[name] = entry
    lock.save()
    return sorted(meta["images"])


def _import_helper(settings: Settings, archive: Path, helper: dict[str, Any]) -> None:
    """The helper file exported beside the archive, installed where the lock entry says,
    once its sha256 is the entry's."""
    source = _helper_file(archive)
    if not source.is_file():
        raise InputError(f"{source} is missing", fix="export writes it beside the archive; "
                         "copy it too", file=str(source))
    if (found := sha256_file(source)) != helper.get("sha256"):
        raise InputError.bad_value(source, "helper.sha256", helper.get("sha256"), found,
                                   fix="the helper was altered or truncated in transit")
    rel = Path(str(helper.get("path", "")))
    if rel.is_absolute() or ".." in rel.parts or rel.parts[:1] != (HELPER_DIR,):
        raise InputError.bad_value(source, "helper.path", f"a path under {HELPER_DIR}/",
                                   helper.get("path"))
    _install_helper(settings.bench_root / rel, source.read_bytes())


def share_lock(source: Settings, bench_root: Path) -> None:
    """Give another bench root on this host the same images: a copy of the lock and of the
    timing helper file it records (both host state)."""
    bench_root.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(bench_root / source.images_lock.name, source.images_lock.read_bytes())
    for entry in ImageLock.load(source.images_lock).images.values():
        if isinstance(helper := entry.get("helper"), dict):
            _install_helper(bench_root / helper["path"],
                            (source.bench_root / helper["path"]).read_bytes())


def listing(engine: Engine | None, settings: Settings) -> list[dict[str, Any]]:
    recipes = load_recipes(settings.images_dir)
    lock = ImageLock.load(settings.images_lock)
    rows = []
    for name, recipe in recipes.items():
        entry = lock.images.get(name, {})
        present = bool(entry) and engine is not None and _image_present(engine, entry["image_id"])
        rows.append({"name": name, "parent": recipe.parent or "(bootstrap)",
                     "tag": entry.get("tag", ""), "image_id": entry.get("image_id", ""),
                     "present": present, "size_bytes": entry.get("size_bytes"),
                     "build_seconds": entry.get("build_seconds"),
                     "tool_version": entry.get("tool_version", ""),
                     "description": recipe.description})
    return rows

"""Recipes, their hashes, the lock and the build inputs: pure logic, no engine."""

from __future__ import annotations

import dataclasses
import importlib
import json
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from orchestrator import images
from orchestrator.errors import EngineError, InputError
from orchestrator.fsutil import sha256_bytes
from orchestrator.images import helper as host_helper
from orchestrator.settings import Settings
from tests.unit.test_images_bootstrap import BootstrapEngine, offline_bootstrap

REPO = Path(__file__).resolve().parents[2]


def _recipes(tmp_path: Path) -> Path:
    target = tmp_path / "images"
    shutil.copytree(REPO / "images", target)
    return target


def test_the_shipped_recipes_load_in_build_order() -> None:
    recipes = images.load_recipes(REPO / "images")
    names = list(recipes)
    assert names[0] == "base"
    assert set(names) == {"base", "rg", "ast-grep", "code-review-graph", "probe", "devscout",
                          "mcp", "code-index-mcp", "ctags", "aider-repomap", "serena",
                          "oracle-scip-typescript", "base-trixie", "oracle-rust-analyzer",
                          "engine-agent", "python"}
    # Two roots (bookworm and trixie), each a bootstrap; every other image FROM one of them
    # or from an image of its own (the Python tools' venv install, an MCP arm's client),
    # after its parent.
    roots = {n for n in names if recipes[n].bootstrap is not None}
    assert roots == {"base", "base-trixie"}
    for n in set(names) - roots:
        assert names.index(recipes[n].parent) < names.index(n)
    assert recipes["oracle-rust-analyzer"].parent == "base-trixie"
    assert recipes["code-index-mcp"].parent == recipes["serena"].parent == "mcp"
    python_tools = {"ast-grep", "code-review-graph", "aider-repomap", "mcp"}
    assert all(recipes[n].parent == "python" for n in python_tools)
    assert all(recipes[n].parent == "base" for n in set(names) - roots - python_tools
               - {"oracle-rust-analyzer", "code-index-mcp", "serena"})


def test_the_npm_oracle_is_pinned_by_its_lockfile() -> None:
    import json
    lock = json.loads((REPO / "images/oracle-scip-typescript/package-lock.json").read_text())
    packages = {k: v for k, v in lock["packages"].items() if k}
    assert packages["node_modules/@sourcegraph/scip-typescript"]["version"] == "0.4.0"
    assert all(v.get("integrity", "").startswith("sha512-") for v in packages.values())
    assert "npm ci" in (REPO / "images/oracle-scip-typescript/Dockerfile").read_text()


def test_serenas_language_server_is_pinned_by_its_lockfile() -> None:
    import json
    lock = json.loads((REPO / "images/serena/package-lock.json").read_text())
    packages = {k: v["version"] for k, v in lock["packages"].items() if k}
    assert packages == {"node_modules/typescript": "5.9.3",
                        "node_modules/typescript-language-server": "4.4.1"}
    assert all(v["integrity"].startswith("sha512-")
               for k, v in lock["packages"].items() if k)
    dockerfile = (REPO / "images/serena/Dockerfile").read_text()
    assert "npm ci" in dockerfile and "--ignore-scripts" in dockerfile
    # The folder serena looks in is named by the two versions (typescript_language_server.py).
    assert "ts-lsp-5.9.3-4.4.1" in (REPO / "images/serena/sandbench-serena").read_text()


def test_python_recipes_pin_every_dependency_with_hashes() -> None:
    for name in ("ast-grep", "code-review-graph", "mcp", "code-index-mcp", "aider-repomap",
                 "serena"):
        text = (REPO / "images" / name / "requirements.txt").read_text()
        pins = [line for line in text.splitlines() if line and line[0].isalnum()]
        assert pins and all("==" in p for p in pins)
        assert text.count("--hash=sha256:") >= len(pins)
        # One copy of the hashed install, in the parent image every Python tool builds on.
        assert "RUN sandbench-hashed-venv /opt/" in (REPO / "images" / name / "Dockerfile"
                                                     ).read_text()
    assert "--require-hashes" in (REPO / "images/python/sandbench-hashed-venv").read_text()
    # python3-venv (and the CA bundle and openssl it pulls in) reaches no final image: the
    # script installs it in the build stage that runs it, never the parent image.
    assert "python3-venv" not in (REPO / "images/python/Dockerfile").read_text().replace(
        "# ", "").split("ARG BASE")[1]
    assert "code-review-graph==2.3.9" in (REPO / "images/code-review-graph/requirements.txt"
                                          ).read_text()


def test_the_ca_bundle_never_reaches_a_final_stage() -> None:
    for dockerfile in (REPO / "images").glob("*/Dockerfile"):
        stages = dockerfile.read_text().split("\nFROM ")
        assert images.BUILD_DIR not in stages[-1], dockerfile


def test_recipe_hash_covers_files_args_and_parent(tmp_path: Path) -> None:
    recipe = images.load_recipes(_recipes(tmp_path))["rg"]
    base = images.recipe_hash(recipe, {"BASE": "t"}, "sha256:1")
    assert base == images.recipe_hash(recipe, {"BASE": "t"}, "sha256:1")
    assert base != images.recipe_hash(recipe, {"BASE": "u"}, "sha256:1")
    assert base != images.recipe_hash(recipe, {"BASE": "t"}, "sha256:2")
    (recipe.path / "Dockerfile").write_text((recipe.path / "Dockerfile").read_text() + "\n")
    assert base != images.recipe_hash(recipe, {"BASE": "t"}, "sha256:1")


def test_a_recipe_without_a_dockerfile_is_named(tmp_path: Path) -> None:
    folder = _recipes(tmp_path)
    (folder / "rg" / "Dockerfile").unlink()
    with pytest.raises(InputError, match="'rg'.*no Dockerfile") as err:
        images.load_recipes(folder)
    assert err.value.exit_code == 2


@pytest.mark.parametrize(("text", "key"), [
    ("parent = 'base'\ntool_version = 'rg'\n", "tool_version"),
    ("parent = 'nope'\ntool_version = ['x']\n", "parent"),
    ("tool_version = ['x']\n", "parent"),
    ("parent = 'base'\ntool_version = ['x']\ncolour = 'red'\n", "colour"),
    ("parent = 'base'\ntool_version = [\n", "does not parse"),
])
def test_bad_recipe_toml_names_file_and_key(tmp_path: Path, text: str, key: str) -> None:
    folder = _recipes(tmp_path)
    (folder / "rg" / "recipe.toml").write_text(text)
    with pytest.raises(InputError, match=key) as err:
        images.load_recipes(folder)
    assert "rg/recipe.toml" in str(err.value)


def test_unknown_image_names_the_known_ones() -> None:
    recipes = images.load_recipes(REPO / "images")
    with pytest.raises(InputError, match="unknown image 'nope'") as err:
        images.select(recipes, ["nope"])
    assert "rg" in str(err.value)


def test_select_brings_ancestors_in_order() -> None:
    recipes = images.load_recipes(REPO / "images")
    assert [r.name for r in images.select(recipes, ["rg"])] == ["base", "rg"]


@pytest.mark.parametrize("content", ["{not json", json.dumps({"version": 9, "images": {}}),
                                     json.dumps({"version": 1, "images": {"rg": {}}}),
                                     json.dumps([1])])
def test_a_lock_that_does_not_parse_is_named(tmp_path: Path, content: str) -> None:
    lock = tmp_path / "images.lock"
    lock.write_text(content)
    with pytest.raises(InputError, match="images.lock"):
        images.ImageLock.load(lock)


def test_dry_run_plans_without_an_engine_and_writes_nothing(tmp_path: Path) -> None:
    settings = Settings(project_root=REPO, bench_root=tmp_path / "bench")
    outcomes = {o.name: o.action for o in images.build(None, settings, dry_run=True)}
    assert outcomes.pop("devscout") == "unavailable"
    assert set(outcomes.values()) == {"would-build"}
    assert not (tmp_path / "bench").exists()


def test_mirror_comes_from_deb822_and_one_line_sources(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SANDBENCH_DEBIAN_MIRROR", raising=False)
    deb822 = tmp_path / "debian.sources"
    deb822.write_text("Types: deb\n# a comment inside the stanza\nURIs: http://mirror.test/debian\n"
                      "Suites: bookworm bookworm-updates\nComponents: main\n\n"
                      "Types: deb\nURIs: http://mirror.test/debian-security\n"
                      "Suites: bookworm-security\n")
    assert images.debian_mirror([deb822]) == "http://mirror.test/debian"
    one_line = tmp_path / "sources.list"
    one_line.write_text("# deb http://old.test/debian bookworm main\n"
                        "deb [arch=amd64] http://other.test/debian/ bookworm main\n")
    assert images.debian_mirror([one_line]) == "http://other.test/debian"
    monkeypatch.setenv("SANDBENCH_DEBIAN_MIRROR", "http://set.test/debian")
    assert images.debian_mirror([one_line]) == "http://set.test/debian"


def test_no_mirror_is_an_error_that_says_how_to_set_one(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SANDBENCH_DEBIAN_MIRROR", raising=False)
    with pytest.raises(Exception, match="SANDBENCH_DEBIAN_MIRROR"):
        images.debian_mirror([tmp_path / "absent.list"])


def test_a_floating_base_tag_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SANDBENCH_BASE_IMAGE", "debian:bookworm")
    recipe = images.load_recipes(REPO / "images")["base"]
    with pytest.raises(InputError, match="floating tag is refused"):
        images.rootfs(None, None, recipe)  # type: ignore[arg-type]


def test_proxy_settings_are_build_args_only(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in images.PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.test:3128")
    assert images.proxy_build_args() == {"HTTPS_PROXY": "http://proxy.test:3128"}


def test_the_base_recipe_builds_the_helper_in_a_stage_of_its_own() -> None:
    base = images.load_recipes(REPO / "images")["base"]
    assert base.target == "image" and base.helper == images.HelperBuild("helper",
                                                                        "/sandbench-exec")
    stages = (REPO / "images/base/Dockerfile").read_text().split("\nFROM ")
    # The image is the first stage (so building it skips the compiler) and holds no helper.
    assert stages[1].startswith("${ROOTFS} AS image") and "sandbench-exec" not in stages[1]
    assert "-static" in stages[2] and stages[3].startswith("scratch AS helper")
    assert not any(images.load_recipes(REPO / "images")[n].helper for n in ("rg", "probe"))


ROOT_RECIPE = ("tool_version = ['x']\n[bootstrap]\nsuite = 'b'\nvariant = 'm'\n"
               "source_date_epoch = 1\n")


@pytest.mark.parametrize(("text", "key"), [
    (ROOT_RECIPE + "[helper]\nstage = 'h'\n", "helper"),
    (ROOT_RECIPE + "[helper]\nstage = 'h'\npath = 'relative'\n", "helper.path"),
    ("target = 'Not A Stage'\n" + ROOT_RECIPE, "target"),
])
def test_a_bad_helper_or_target_names_the_key(tmp_path: Path, text: str, key: str) -> None:
    folder = tmp_path / "images" / "base"
    folder.mkdir(parents=True)
    (folder / "Dockerfile").write_text("FROM scratch\n")
    (folder / "recipe.toml").write_text(text)
    with pytest.raises(InputError, match=key):
        images.load_recipes(tmp_path / "images")


def _locked_helper(tmp_path: Path, data: bytes = b"\x7fELF static") -> dict:
    path = tmp_path / "bench" / "helper" / "sandbench-exec-x"
    host_helper.install(path, data)
    return {"path": "helper/sandbench-exec-x", "sha256": sha256_bytes(data)}


def test_the_lock_gives_the_one_helper_and_its_host_file(tmp_path: Path) -> None:
    helper = _locked_helper(tmp_path)
    lock = images.ImageLock(tmp_path / "bench" / "images.lock",
                            {"base": {"helper": helper}, "rg": {}})
    assert lock.helper() == (tmp_path / "bench" / "helper" / "sandbench-exec-x",
                             helper["sha256"])
    assert (tmp_path / "bench" / helper["path"]).stat().st_mode & 0o777 == 0o555
    with pytest.raises(Exception, match="records 0 timing helpers"):
        images.ImageLock(tmp_path / "images.lock", {"base": {}}).helper()


def test_a_helper_file_that_is_gone_or_changed_is_named(tmp_path: Path) -> None:
    settings = Settings(project_root=REPO, bench_root=tmp_path / "bench")
    helper = _locked_helper(tmp_path)
    assert images.helper_problem(settings, helper) is None
    path = tmp_path / "bench" / helper["path"]
    path.chmod(0o644)
    path.write_bytes(b"forged")
    assert "the lock says" in (images.helper_problem(settings, helper) or "")
    path.unlink()
    assert "is missing" in (images.helper_problem(settings, helper) or "")


def test_import_installs_the_helper_only_when_it_hashes_to_the_entry(tmp_path: Path) -> None:
    settings = Settings(project_root=REPO, bench_root=tmp_path / "bench")
    archive = tmp_path / "images.tar"
    helper = {"path": "helper/sandbench-exec-x", "sha256": sha256_bytes(b"real")}
    with pytest.raises(InputError, match="missing"):
        host_helper.install_from_archive(settings, archive, helper)
    host_helper.archive_copy(archive).write_bytes(b"altered")
    with pytest.raises(InputError, match="altered or truncated"):
        host_helper.install_from_archive(settings, archive, helper)
    host_helper.archive_copy(archive).write_bytes(b"real")
    with pytest.raises(InputError, match="helper.path"):
        host_helper.install_from_archive(settings, archive, {**helper, "path": "../../etc/x"})
    host_helper.install_from_archive(settings, archive, helper)
    assert (settings.bench_root / helper["path"]).read_bytes() == b"real"


def test_jobs_build_siblings_at_once_each_after_its_parent_and_a_failure_stops_the_rest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    offline_bootstrap(monkeypatch)
    build_mod = importlib.import_module("orchestrator.images.build")
    events: list[tuple[str, str]] = []
    guard = threading.Lock()
    running: set[str] = set()
    overlap: list[set[str]] = []

    def docker_build(engine: object, settings: object, recipe: images.Recipe, tag: object,
                     build_args: dict[str, str], *rest: object, **kw: object) -> str:
        with guard:
            events.append(("start", recipe.name))
            running.add(recipe.name)
            overlap.append(set(running))
        time.sleep(0.2)
        with guard:
            running.discard(recipe.name)
            events.append(("end", recipe.name))
        if recipe.name == "ctags":
            raise EngineError("image 'ctags' failed to build")
        return "sha256:" + sha256_bytes(recipe.name.encode())

    def build_helper(*args: object) -> dict[str, object]:
        with guard:
            events.append(("start", "helper"))
        time.sleep(0.3)
        with guard:
            events.append(("end", "helper"))
        return {"path": "helper/sandbench-exec-000000000000", "sha256": "0" * 64,
                "size_bytes": 1}

    monkeypatch.setattr(build_mod, "_docker_build", docker_build)
    monkeypatch.setattr(build_mod, "_build_helper", build_helper)
    monkeypatch.setattr(build_mod, "read_manifests", lambda *a: {})
    settings = Settings(project_root=REPO, bench_root=tmp_path / "bench")
    names = ["rg", "ast-grep", "code-index-mcp"]
    outcomes = images.build(BootstrapEngine(), settings, names, jobs=3)  # type: ignore[arg-type]
    assert [o.name for o in outcomes] == ["base", "python", "ast-grep", "mcp",
                                          "code-index-mcp", "rg"]
    order = [name for kind, name in events if kind == "end"]
    starts = [name for kind, name in events if kind == "start"]
    for child, parent in (("python", "base"), ("ast-grep", "python"),
                          ("mcp", "python"), ("rg", "base"), ("code-index-mcp", "mcp")):
        assert order.index(parent) < starts.index(child), (child, events)
    assert max(len(s) for s in overlap) >= 2  # siblings did build at once
    # base's helper is built beside its children, and its seconds count in base's build
    assert events.index(("start", "python")) < events.index(("end", "helper"))
    base = images.ImageLock.load(settings.images_lock).images["base"]
    assert base["helper"]["sha256"] == "0" * 64
    assert base["build_seconds"] == outcomes[0].seconds >= 0.2 + 0.3 - 0.002
    lock = images.ImageLock.load(settings.images_lock)  # schema-checked, every entry written
    assert sorted(lock.images) == sorted(o.name for o in outcomes)
    assert {e["build_jobs"] for e in lock.images.values()} == {3}
    assert lock.images["code-index-mcp"]["build_args"]["BASE"] == lock.images["mcp"]["image_id"]
    # A failed image's error is raised; its siblings' entries that finished are kept.
    with pytest.raises(EngineError, match="ctags"):
        images.build(BootstrapEngine(), Settings(project_root=REPO,  # type: ignore[arg-type]
                                                  bench_root=tmp_path / "b2"),
                     ["ctags", "rg"], jobs=2)
    assert "ctags" not in images.ImageLock.load(tmp_path / "b2" / "images.lock").images


class _HostShellEngine:
    """run_once runs the container's command on this host (Debian: dpkg-query is here)."""

    def __init__(self) -> None:
        self.runs = 0

    def run_once(self, spec: dict) -> bytes:
        self.runs += 1
        return subprocess.run(spec["command"], capture_output=True, check=True).stdout


def test_manifests_and_tool_version_come_from_one_container(tmp_path: Path) -> None:
    if shutil.which("dpkg-query") is None:
        pytest.skip("needs dpkg-query on this host")
    manifests = importlib.import_module("orchestrator.images.manifests")
    recipe = dataclasses.replace(images.load_recipes(REPO / "images")["rg"],
                                 tool_version=("echo", "ripgrep 13.0.0", "--x"))
    settings = Settings(project_root=REPO, bench_root=tmp_path / "bench")
    engine = _HostShellEngine()
    got = manifests.read_manifests(engine, settings, recipe, "sha256:" + "1" * 64)
    assert engine.runs == 1
    assert got["tool_version"] == "ripgrep 13.0.0 --x"
    dpkg = (settings.bench_root / got["manifests"]["dpkg"]["path"]).read_text()
    listed = subprocess.run(["dpkg-query", "-W", "-f", "${Package}=${Version}\\n"],
                            capture_output=True, text=True, check=True).stdout
    assert dpkg == "".join(sorted(listed.splitlines(keepends=True)))
    assert got["manifests"]["dpkg"]["packages"] == len(listed.splitlines()) > 0
    assert (settings.bench_root / got["manifests"]["pip"]["path"]).read_text() == ""

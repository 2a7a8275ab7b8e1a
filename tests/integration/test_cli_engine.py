"""The commands a person runs, end to end against the real engine."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchmarks.second_engine import SecondEngine
from orchestrator import images
from orchestrator.cli import app
from orchestrator.engine import Engine
from orchestrator.fsutil import sha256_file
from orchestrator.settings import Settings
from tests.unprivileged import as_nobody

pytestmark = pytest.mark.integration
runner = CliRunner()


def _invoke(*args: str) -> object:
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_sandbox_check_verifies_every_arm_and_audit_agrees(bench: Settings) -> None:
    root = str(bench.bench_root)
    result = _invoke("sandbox", "check", "--bench-root", root)
    assert result.exit_code == 0, result.output
    # Every shipped arm but devscout (no binary supplied, so no image): the peers, the MCP
    # arm and the oracles included.
    shipped = sorted(p.stem for p in bench.arms_dir.glob("*.toml") if p.stem != "devscout")
    assert len(shipped) == 9
    for arm in shipped:
        assert f"{arm}: all guards verified" in result.output
    run_dir = re.search(r"snapshots: (\S+)", result.output).group(1)
    audited = _invoke("audit", run_dir, "--json")
    assert audited.exit_code == 0, audited.output
    arms = json.loads(audited.stdout)
    assert sorted(a["arm"] for a in arms) == shipped
    assert all(a["ok"] and a["matches_stored"] for a in arms)


def test_sandbox_exec_keeps_the_transcript(bench: Settings) -> None:
    result = _invoke("sandbox", "exec", "rg", "--bench-root", str(bench.bench_root), "--json",
                     "--", "rg", "--version")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["record"]["outcome"] == "ok"
    assert Path(out["cell"], "stdout").read_bytes().startswith(b"ripgrep 13.0.0")


def test_verify_is_clean_and_a_noop_build_says_so(bench: Settings) -> None:
    result = _invoke("images", "verify", "--bench-root", str(bench.bench_root))
    assert result.exit_code == 0, result.output
    # every image but those that need a file the user supplies (devscout), and base's helper
    built = [r for r in images.load_recipes(bench.images_dir).values() if r.artifact is None]
    assert result.output.count(" ok ") == len(built) + 1
    build = _invoke("images", "build", "--bench-root", str(bench.bench_root), "--json")
    actions = {o["name"]: o["action"] for o in json.loads(build.stdout)}
    assert actions.pop("devscout") == "unavailable"
    assert set(actions.values()) == {"up-to-date"}


def test_verify_reports_a_stale_recipe(engine: Engine, bench: Settings, tmp_path: Path) -> None:
    lock = images.ImageLock.load(bench.images_lock)
    lock.images["rg"]["recipe_hash"] = "0" * 64
    lock.save()
    checks = {c.name: c.status for c in images.verify(engine, bench)}
    assert checks["rg"] == "stale" and checks["base"] == "ok"
    result = _invoke("images", "verify", "--bench-root", str(bench.bench_root))
    assert result.exit_code == 1


def test_export_then_import_restores_the_exact_images(engine: Engine, bench: Settings,
                                                      tmp_path: Path) -> None:
    archive = tmp_path / "rg.tar"
    result = _invoke("images", "export", "rg", "-o", str(archive), "--bench-root",
                     str(bench.bench_root))
    assert result.exit_code == 0, result.output
    meta = json.loads(archive.with_name("rg.tar.json").read_text())
    assert sorted(meta["images"]) == ["base", "rg"]
    other = Settings(project_root=bench.project_root, bench_root=tmp_path / "other")
    imported = _invoke("images", "import", str(archive), "--bench-root", str(other.bench_root))
    assert imported.exit_code == 0, imported.output
    again = images.ImageLock.load(other.images_lock)
    assert again.image_id("rg") == images.ImageLock.load(bench.images_lock).image_id("rg")
    # The timing helper travels beside the archive and lands where the lock says.
    helper, digest = again.helper()
    assert helper.is_relative_to(other.bench_root) and sha256_file(helper) == digest
    assert digest == images.ImageLock.load(bench.images_lock).helper()[1]
    with archive.open("r+b") as fh:
        fh.seek(4096)
        fh.write(b"tampered")
    refused = _invoke("images", "import", str(archive), "--bench-root", str(other.bench_root))
    assert refused.exit_code == 2 and "sha256" in refused.output


def test_an_imported_base_is_kept_by_the_next_build(bench: Settings, second_engine: SecondEngine,
                                                    tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Another engine (one of this test's own) given base by export and import: its next
    `images build` says up-to-date, as --dry-run does, runs no host tool (no bootstrap, though
    that engine never had the root file system) and keeps the imported id."""
    archive = tmp_path / "base.tar"
    exported = _invoke("images", "export", "base", "-o", str(archive), "--bench-root",
                       str(bench.bench_root))
    assert exported.exit_code == 0, exported.output
    locked = images.ImageLock.load(bench.images_lock).image_id("base")
    other = tmp_path / "other"
    monkeypatch.setenv("DOCKER_HOST", second_engine.url)
    imported = _invoke("images", "import", str(archive), "--bench-root", str(other))
    assert imported.exit_code == 0, imported.output

    def host_tool(argv: list[str], what: str, env: object = None) -> None:
        raise AssertionError(f"{what} ran: the imported base was bootstrapped again")
    monkeypatch.setattr(importlib.import_module("orchestrator.images.rootfs"), "run_host",
                        host_tool)
    for dry_run in (["--dry-run"], []):
        result = _invoke("images", "build", "base", "--json", *dry_run, "--bench-root",
                         str(other))
        assert result.exit_code == 0, result.output
        [outcome] = json.loads(result.stdout)
        assert (outcome["name"], outcome["action"]) == ("base", "up-to-date"), outcome
    assert images.ImageLock.load(other / "images.lock").image_id("base") == locked
    assert Engine.connect(address=second_engine.url).image_id(outcome["tag"]) == locked


def test_a_user_outside_the_docker_group_is_told_so_first(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """The engine's own socket (root:docker, 0660), opened by nobody through a command: the
    first line names the socket and the fix, not a missing engine (the kernel refuses the
    connect: the engine never sees it)."""
    monkeypatch.delenv("DOCKER_HOST", raising=False)

    def cleanup_dry_run() -> str:
        result = runner.invoke(app, ["cleanup", "--dry-run"], catch_exceptions=False)
        return f"{result.exit_code}\n{result.output}"
    # What the command imports lazily is imported here first, as root: nobody may not read
    # the interpreter's library (a root-only pyenv).
    assert runner.invoke(app, ["cleanup", "--help"]).exit_code == 0
    said = as_nobody(cleanup_dry_run).splitlines()
    assert said[:2] == ["1", "error: you may not open /var/run/docker.sock"], said
    assert "add your user to the docker group (then log in again) or run as root" in said[-1]

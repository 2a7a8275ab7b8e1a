"""Where an arm runs is one interface (orchestrator/placement): the run's stages and the
sandbox never name an implementation, the factory chooses one per engine member, and a third
placement is accepted by registering it."""

from __future__ import annotations

import ast
import hashlib
import os
import socket
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from orchestrator import corpus, placement
from orchestrator.sandbox import remote
from orchestrator.arms import ArmSpec
from orchestrator.errors import SandbenchError
from orchestrator.images import ImageLock
from orchestrator.placement import engine_made, local
from orchestrator.sandbox.remote import RemoteSite
from orchestrator.sandbox.spec import HelperFile, SandboxSpec
from orchestrator.untrusted import walk
from orchestrator.run import pool

PACKAGE = Path(__file__).resolve().parents[2] / "orchestrator"
# The modules that run an arm wherever it is: they may use the interface, never what is
# behind it (an implementation, or what only one of them is made of).
PLACEMENT_BLIND = ("sandbox/container.py",
                   *(f"run/{m}.py" for m in ("runner", "start", "ready", "prepare", "cells",
                                             "measure")))
IMPLEMENTATIONS = {"orchestrator.placement.local", "orchestrator.placement.engine_made",
                   "orchestrator.sandbox.remote"}
IMPLEMENTATION_NAMES = {"LocalPlacement", "LocalHelper", "EngineMadePlacement",
                        "EngineMadeHelper", "RemoteSite", "helper_digest", "helper_path",
                        "volumes", "mounted", "copy_corpus", "make_arm_copy", "site"}


def _imports(tree: ast.Module) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _attributes_and_names(tree: ast.Module) -> set[str]:
    """Every name, and every attribute but a module's own (`self.site` of a module would be
    its own, not a member's remote site)."""
    return ({n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
             and not (isinstance(n.value, ast.Name) and n.value.id == "self")}
            | {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)})


@pytest.mark.parametrize("module", PLACEMENT_BLIND)
def test_the_run_and_the_sandbox_do_not_name_a_placement(module: str) -> None:
    tree = ast.parse((PACKAGE / module).read_text(encoding="utf-8"))
    assert not _imports(tree) & IMPLEMENTATIONS
    # Neither a class of one nor a branch on what one is made of (`member.site`, volumes,
    # the remote helper's digest); copy_corpus is the protocol's own, asked of a placement.
    used = _attributes_and_names(tree) - {"copy_corpus"}
    assert not used & IMPLEMENTATION_NAMES, sorted(used & IMPLEMENTATION_NAMES)


def test_the_guard_above_sees_a_branch() -> None:
    """The check of the test above, on code that does branch: it must not pass."""
    tree = ast.parse("from orchestrator.sandbox import remote\n"
                     "def f(member):\n    if member.site is not None:\n        pass\n")
    assert _imports(tree) & IMPLEMENTATIONS
    assert "site" in _attributes_and_names(tree)


@pytest.fixture
def here(tmp_path: Path) -> Iterator[str]:
    """The address of an engine on this host: a unix socket that exists here."""
    path = tmp_path / "d.sock"
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind(str(path))
        yield f"unix://{path}"


def _member(url: str, site: RemoteSite | None = None) -> pool.Member:
    return pool.Member(url, None, {"id": url}, site=site)  # type: ignore[arg-type]


def _site() -> RemoteSite:
    site = RemoteSite(None, "engine-b", "run-1", "sha256:agent")  # type: ignore[arg-type]
    site.helper_path = "/var/lib/docker/volumes/w/_data/helper/sandbench-exec-0123"
    return site


def test_the_factory_chooses_by_the_engine_member(tmp_path: Path, here: str) -> None:
    local_arm = placement.for_arm(_member(here), "rg", tmp_path / "rg", tmp_path)
    there = placement.for_arm(_member("ssh://b", _site()), "rg", tmp_path / "rg", tmp_path)
    assert isinstance(local_arm, local.LocalPlacement) and local_arm.work == tmp_path / "rg"
    assert isinstance(there, engine_made.EngineMadePlacement) and there.arm == "rg"
    assert isinstance(placement.mounted_helper(), local.LocalHelper)
    assert isinstance(placement.mounted_helper(_member("ssh://b", _site())),
                      engine_made.EngineMadeHelper)
    assert placement.engine_facts(_member(here)) == {"placement": "loop-here"}
    assert placement.engine_facts(_member("ssh://b", _site())) == {
        "placement": "engine-made", "work_volume": "sandbench-work-run-1",
        "helper_path": _site().helper_path}


def test_a_user_who_is_not_root_gets_file_systems_the_engine_makes_on_this_host(
        tmp_path: Path, here: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Loop mounts need root here: a member of the docker group driving this host's engine
    is given the engine agent's file systems, decided once when the member is made."""
    monkeypatch.setattr(pool.os, "geteuid", lambda: 1000)
    member = pool.Member(here, None, {"id": "e"}, site=_site())  # type: ignore[arg-type]
    monkeypatch.setattr(pool.os, "geteuid", lambda: 0)
    assert member.local and not member.mounts_here
    assert isinstance(placement.for_arm(member, "rg", tmp_path / "rg", tmp_path),
                      engine_made.EngineMadePlacement)
    assert placement.engine_facts(member)["placement"] == "engine-made"


def test_a_rootless_engine_the_engine_cannot_make_file_systems_on_is_refused_by_name(
        here: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pool.os, "geteuid", lambda: 1000)
    member = pool.Member(here, None, {"id": "e", "rootless": True})  # type: ignore[arg-type]
    with pytest.raises(SandbenchError) as err:
        placement.open_engine(member, None, "run-1")  # type: ignore[arg-type]
    assert "is rootless" in err.value.what and "as root against it" in (err.value.fix or "")


class _PodHelper:
    def source(self, host_file: Path) -> Path:
        return Path("/mnt/helper") / host_file.name

    def start(self, spec: SandboxSpec, create_and_start: Callable[[], None]) -> dict[str, Any]:
        create_and_start()
        return {"helper": {"path": str(spec.helper.source), "sha256": "ab", "error": None}}


class _PodPlacement:
    """A third placement (a Kubernetes pod, say), made to the protocol alone."""

    def __init__(self, arm: str) -> None:
        self.arm = arm
        self.helper = _PodHelper()

    def kept(self, names: Sequence[str]) -> bool:
        return False

    @contextmanager
    def filesystems(self, sizes: Mapping[str, int], owner: str, fresh: bool
                    ) -> Iterator[None]:
        yield

    def copy_corpus(self, pristine: Path, pin: corpus.CorpusPin, owner: str,
                    home: str) -> corpus.Snapshot:
        return corpus.Snapshot({})

    def sandbox_spec(self, lock: ImageLock, arm: ArmSpec, run_id: str, owner: str,
                     sizes: Mapping[str, int], exec_path: str) -> SandboxSpec:
        raise NotImplementedError

    def snapshot(self, name: str, budget: walk.Budget) -> corpus.Snapshot:
        return corpus.Snapshot({})


def _pod(member: pool.Member | None) -> bool:
    return member is not None and member.url.startswith("k8s://")


def test_a_third_placement_is_registered_without_touching_the_run(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, here: str) -> None:
    monkeypatch.setattr(placement, "_KINDS", list(placement._KINDS))
    typed: placement.Placement = _PodPlacement("rg")  # mypy checks it against the protocol
    assert isinstance(typed, placement.Placement)
    opened: list[str] = []
    placement.register(placement.Kind("pod", _pod, lambda m, arm, w, s: _PodPlacement(arm),
                                      lambda m: _PodHelper(), lambda m: {"namespace": "b"},
                                      ("pod-agent",), lambda m, s, run: opened.append(run)))
    pod = _member("k8s://cluster/bench")
    chosen = placement.for_arm(pod, "rg", tmp_path, tmp_path)
    assert isinstance(chosen, _PodPlacement) and chosen.arm == "rg"
    assert isinstance(placement.mounted_helper(pod), _PodHelper)
    assert placement.engine_facts(pod) == {"placement": "pod", "namespace": "b"}
    assert placement.engine_images(pod) == ("pod-agent",)
    placement.open_engine(pod, None, "run-1")  # type: ignore[arg-type]
    assert opened == ["run-1"]
    # The others are chosen as before.
    assert isinstance(placement.for_arm(_member(here), "rg", tmp_path, tmp_path),
                      local.LocalPlacement)


def test_what_each_placement_needs_on_its_engine_comes_from_the_placement(here: str) -> None:
    """The engine pool asks the placement which images it runs on the engine and to open the
    run's place there: nothing on this host, the engine agent and a site on another."""
    this_host, there = _member(here), _member("ssh://b")
    assert placement.engine_images(this_host) == ()
    assert placement.engine_images(there) == (remote.AGENT_IMAGE,)
    placement.open_engine(this_host, None, "run-1")  # type: ignore[arg-type]
    assert this_host.site is None
    opened = _member("ssh://b", _site())
    placement.open_engine(opened, None, "run-1")  # type: ignore[arg-type]  # already open
    assert isinstance(opened.site, RemoteSite)
    assert placement.mounted_helper(opened).source(Path("/x")) == Path(_site().helper_path)
    assert placement.mounted_helper().source(Path("/x")) == Path("/x")


def test_the_engine_pool_names_no_placement() -> None:
    tree = ast.parse((PACKAGE / "run" / "pool.py").read_text(encoding="utf-8"))
    assert not _imports(tree) & IMPLEMENTATIONS
    names = _attributes_and_names(tree) - {"site"}  # Member.site: the placement's own state
    assert not names & IMPLEMENTATION_NAMES, sorted(names & IMPLEMENTATION_NAMES)


def test_an_object_missing_part_of_the_protocol_is_not_a_placement() -> None:
    class Partial:
        helper = _PodHelper()

        def kept(self, names: Sequence[str]) -> bool:
            return False

    assert not isinstance(Partial(), placement.Placement)


# -- the helper on this host, guarded across the start ------------------------------------

def _spec(helper: Path) -> SandboxSpec:
    return SandboxSpec(run_id="run-1", arm="rg", image_id="sha256:x", tool_version="",
                       user=f"{os.getuid()}:{os.getgid()}", env={},
                       helper=HelperFile(helper, "0" * 64))


def test_an_unreadable_helper_starts_no_container(tmp_path: Path) -> None:
    started: list[bool] = []
    facts = local.LocalHelper().start(_spec(tmp_path / "absent"), lambda: started.append(True))
    assert started == []
    assert facts["helper"]["sha256"] is None
    assert facts["helper"]["error"].startswith("ENOENT")


def test_the_digest_is_of_the_file_mounted(tmp_path: Path) -> None:
    helper = tmp_path / "sandbench-exec"
    helper.write_bytes(b"the helper")
    facts = local.LocalHelper().start(_spec(helper), lambda: None)
    assert facts["helper"] == {"path": str(helper), "error": None,
                               "sha256": hashlib.sha256(b"the helper").hexdigest()}


def test_a_helper_replaced_during_the_start_is_named(tmp_path: Path) -> None:
    helper = tmp_path / "sandbench-exec"
    helper.write_bytes(b"the helper")

    def replace() -> None:
        (tmp_path / "other").write_bytes(b"another helper")
        os.replace(tmp_path / "other", helper)

    facts = local.LocalHelper().start(_spec(helper), replace)
    # Hashed from the file opened before the start: the one the engine mounted.
    assert facts["helper"]["sha256"] == hashlib.sha256(b"the helper").hexdigest()
    assert facts["helper"]["error"] == "replaced while the sandbox started"


class _Host:
    """An engine host whose helper digest reads back as listed, one per call."""

    def __init__(self, digests: list[str | None]) -> None:
        self.digests = digests

    def helper_digest(self) -> str | None:
        return self.digests.pop(0)


@pytest.mark.parametrize(("digests", "started", "error"), [
    (["ab", "ab"], True, None),
    (["ab", "cd"], True, "replaced while the sandbox started"),
    ([None], False, "unreadable on the engine's host"),
])
def test_the_helper_on_another_host_is_read_back_there(
        digests: list[str | None], started: bool, error: str | None, tmp_path: Path) -> None:
    calls: list[bool] = []
    helper = engine_made.EngineMadeHelper(_Host(digests))  # type: ignore[arg-type]
    facts = helper.start(_spec(tmp_path / "h"), lambda: calls.append(True))
    assert calls == ([True] if started else [])
    assert facts["helper"]["error"] == error

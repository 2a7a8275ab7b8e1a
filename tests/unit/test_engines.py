"""Several engines in one run: which addresses are accepted, and where arms are placed."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from orchestrator.errors import InputError, SandbenchError
from orchestrator.run import pool, ready


def _member(engine_id: str, refused: str | None = None) -> pool.Member:
    return pool.Member(f"unix:///run/{engine_id}.sock", None,  # type: ignore[arg-type]
                              {"id": engine_id}, refused)


@pytest.mark.parametrize("url", ["unix:///var/run/docker.sock", "ssh://bench@10.0.0.2",
                                 "https://engine.example:2376"])
def test_the_sdk_addresses_are_taken(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DOCKER_TLS_VERIFY", raising=False)
    assert pool.check_address(url, insecure=False) == url


@pytest.mark.parametrize("url", ["tcp://10.0.0.2:2375", "http://10.0.0.2:2375"])
def test_plain_tcp_is_refused_saying_why(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DOCKER_TLS_VERIFY", raising=False)
    with pytest.raises(InputError) as caught:
        pool.check_address(url, insecure=False)
    assert caught.value.exit_code == 2
    assert "without TLS" in caught.value.what and "controls that engine as root" in (
        caught.value.why or "")
    assert pool.check_address(url, insecure=True) == url


def test_tcp_with_docker_tls_settings_is_taken(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_TLS_VERIFY", "1")
    monkeypatch.setenv("DOCKER_CERT_PATH", str(tmp_path))
    for name in ("ca.pem", "cert.pem", "key.pem"):
        (tmp_path / name).write_text("")
    assert pool.check_address("tcp://10.0.0.2:2376", insecure=False)


def test_an_unknown_scheme_is_named() -> None:
    with pytest.raises(InputError, match="--engine: expected unix://PATH"):
        pool.check_address("ftp://host", insecure=False)


def test_only_a_socket_here_is_on_this_host(tmp_path: Path) -> None:
    path = tmp_path / "d.sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        assert pool.on_this_host(f"unix://{path}")
    assert not pool.on_this_host(f"unix://{tmp_path / 'absent.sock'}")
    assert not pool.on_this_host("ssh://bench@10.0.0.2")


def test_arms_spread_over_the_usable_engines() -> None:
    members = [_member("a"), _member("b"), _member("c", refused="guard seccomp")]
    assert pool.place(["rg", "ast-grep", "crg"], members) == {
        "rg": "a", "ast-grep": "b", "crg": "a"}


def test_an_arm_stays_where_it_ran_unless_that_engine_is_gone() -> None:
    members = [_member("a"), _member("b")]
    assert pool.place(["rg", "crg"], members, {"rg": "b", "crg": "z"}) == {
        "rg": "b", "crg": "a"}


def test_no_usable_engine_stops_naming_each() -> None:
    with pytest.raises(SandbenchError) as caught:
        pool.place(["rg"], [_member("a", refused="not on this host")])
    assert "not on this host" in (caught.value.why or "")


def test_a_refused_engine_stops_the_run_when_the_user_chose_so() -> None:
    member = _member("a")
    with pytest.raises(SandbenchError, match="refused"):
        pool.refuse(member, "guard seccomp", pool.STOP)
    moved: Any = _member("b")
    pool.refuse(moved, "guard seccomp", pool.MOVE)
    assert moved.refused == "guard seccomp"


class _Images:
    """An engine's image table, as `Engine.image_id` reads it (ref -> id)."""

    def __init__(self, table: dict[str, str]) -> None:
        self.table = table

    def image_id(self, ref: str) -> str | None:
        return self.table.get(ref)


def _lock_file(tmp_path: Path) -> Path:
    from orchestrator.images import ImageLock
    lock = ImageLock(tmp_path / "images.lock", {"rg": {
        "image_id": "sha256:" + "1" * 64, "tag": "sandbench/rg:1", "recipe_hash": "0" * 64,
        "build_seconds": 1.0, "size_bytes": 1, "build_args": {}}})
    lock.save()
    return lock.path


def test_an_engine_holding_the_locked_tag_as_another_image_is_refused(tmp_path: Path) -> None:
    from orchestrator.settings import Settings
    _lock_file(tmp_path)
    settings = Settings(project_root=tmp_path, bench_root=tmp_path)
    tagged = {"sandbench/rg:1": "sha256:" + "2" * 64}
    target = pool.Member("unix:///x.sock", _Images(tagged),
                                {"id": "engine-b"})  # type: ignore[arg-type]
    with pytest.raises(SandbenchError) as caught:
        ready.bring_images(target, [target], settings, ["rg"], tmp_path / "t")
    assert "sandbench/rg:1" in caught.value.what and "2222" in caught.value.what


def test_an_engine_that_has_the_locked_ids_needs_nothing(tmp_path: Path) -> None:
    from orchestrator.settings import Settings
    _lock_file(tmp_path)
    settings = Settings(project_root=tmp_path, bench_root=tmp_path)
    same = {"sha256:" + "1" * 64: "sha256:" + "1" * 64}
    target = pool.Member("unix:///x.sock", _Images(same),
                                {"id": "engine-b"})  # type: ignore[arg-type]
    ready.bring_images(target, [target], settings, ["rg"], tmp_path / "t")
    assert target.imported == {} and not (tmp_path / "t").exists()


def test_a_missing_image_no_engine_has_is_named(tmp_path: Path) -> None:
    from orchestrator.settings import Settings
    _lock_file(tmp_path)
    settings = Settings(project_root=tmp_path, bench_root=tmp_path)
    empty = [pool.Member(f"unix:///{n}.sock", _Images({}), {"id": n})  # type: ignore[arg-type]
             for n in ("a", "b")]
    with pytest.raises(SandbenchError, match=r"no engine of the run has images \['rg'\]"):
        ready.bring_images(empty[1], empty, settings, ["rg"], tmp_path / "t")


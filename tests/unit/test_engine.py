"""The engine boundary: nothing outside orchestrator/engine/ touches the Docker SDK, and the
boundary repeats only what is safe to repeat. The SDK is faked here at its own surface (the
high-level client and its low-level `api`), so these need no engine."""

from __future__ import annotations

import re
import shutil
import socket
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import docker.errors
import pytest
import requests.exceptions
import urllib3.exceptions

from orchestrator.sandbox import cleanup
from orchestrator.engine import Engine, calls, engine_address, tls_config
from orchestrator.errors import EngineError, EngineNotFound, InputError
from orchestrator.labels import LABEL_CREATE
from orchestrator.run import pool
from tests.unprivileged import as_nobody

REPO = Path(__file__).resolve().parents[2]
BOUNDARY = REPO / "orchestrator" / "engine"
# What only the boundary may say: the SDK itself, its two clients reached through an object,
# and the SDK's private helpers (never, not even in the boundary).
SDK_USE = re.compile(r"^\s*(import docker|from docker\b)|\bdocker\.(errors|types|APIClient|"
                     r"DockerClient|from_env)\b|\.(api|client)\.\w")
SDK_PRIVATE = re.compile(r"\.(_get|_post|_post_json|_delete|_put|_url|_raise_for_status|_result|"
                         r"_stream_helper|_read_from_socket|_get_raw_response_socket)\(")


def _python_files() -> list[Path]:
    return sorted(p for folder in ("orchestrator", "benchmarks", "tests")
                  for p in (REPO / folder).rglob("*.py"))


def test_only_the_boundary_uses_the_sdk() -> None:
    offenders = [f"{path.relative_to(REPO)}:{n}: {line.strip()}"
                 for path in _python_files()
                 if BOUNDARY not in path.parents and path != Path(__file__)
                 for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if SDK_USE.search(line)]
    assert offenders == []


def test_no_private_sdk_attribute_anywhere() -> None:
    offenders = [f"{path.relative_to(REPO)}:{n}: {line.strip()}"
                 for path in _python_files() if path != Path(__file__)
                 for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if SDK_PRIVATE.search(line)]
    assert offenders == []


def test_the_scan_finds_what_it_forbids() -> None:
    assert SDK_USE.search("import docker.errors")
    assert SDK_USE.search("engine.api.inspect_image(x)")
    assert SDK_USE.search("    except docker.errors.NotFound:")
    assert SDK_PRIVATE.search("api._get(api._url('/images/get'))")
    assert not SDK_USE.search("engine.inspect_image(x)")


# -- a fake SDK ---------------------------------------------------------------------------------

def refused(why: str) -> docker.errors.APIError:
    """The SDK's error for a 400 answer."""
    return docker.errors.APIError(why, response=SimpleNamespace(status_code=400, url="/x",
                                                                reason="Bad Request"),
                                  explanation=why)


class FakeApi:
    """The low-level client: containers made so far, with their labels."""

    api_version = "1.47"

    def __init__(self) -> None:
        self.made: dict[str, dict[str, str]] = {}
        self.images: dict[str, str] = {}
        self.calls: list[str] = []

    def containers(self, all: bool, filters: dict[str, str]) -> list[dict[str, Any]]:  # noqa: A002
        self.calls.append("containers")
        key, value = filters["label"].split("=", 1)
        return [{"Id": cid} for cid, labels in self.made.items() if labels.get(key) == value]

    def remove_container(self, container_id: str, force: bool, v: bool) -> None:
        self.calls.append(f"remove {container_id}")
        if self.made.pop(container_id, None) is None:
            raise docker.errors.NotFound("no such container")

    def inspect_image(self, ref: str) -> dict[str, Any]:
        if ref not in self.images:
            raise docker.errors.NotFound(f"no such image: {ref}")
        return {"Id": self.images[ref]}


class FakeContainers:
    """`client.containers.create`, failing as told after or before the engine acted."""

    def __init__(self, api: FakeApi, script: list[str]) -> None:
        self.api = api
        self.script = script  # per call: "ok", "lost" (made, answer lost), "refused" (made nothing)

    def create(self, **kwargs: Any) -> SimpleNamespace:
        step = self.script.pop(0) if self.script else "ok"
        self.api.calls.append(f"create:{step}")
        if step == "refused":
            raise requests.exceptions.ConnectionError("connection refused")
        cid = f"c{len(self.api.made) + 1}"
        self.api.made[cid] = dict(kwargs["labels"])
        if step == "lost":
            raise requests.exceptions.ReadTimeout("read timed out")
        if step == "bad":
            raise refused("bad request")
        return SimpleNamespace(id=cid)


def fake_engine(script: list[str] | None = None) -> tuple[Engine, FakeApi]:
    api = FakeApi()
    client = SimpleNamespace(api=api, containers=FakeContainers(api, script or []))
    return Engine(client), api  # type: ignore[arg-type]


def test_a_create_whose_answer_was_lost_is_found_by_its_label_not_made_twice() -> None:
    engine, api = fake_engine(["lost"])
    cid = engine.create_container({"image": "x", "labels": {"sandbench.run": "r"}})
    assert cid == "c1" and list(api.made) == ["c1"]
    assert api.calls == ["create:lost", "containers", "containers"]
    assert api.made["c1"]["sandbench.run"] == "r" and len(api.made["c1"][LABEL_CREATE]) == 32


def test_a_create_the_engine_never_made_is_tried_again() -> None:
    engine, api = fake_engine(["refused", "ok"])
    assert engine.create_container({"image": "x"}) == "c1"
    assert api.calls == ["create:refused", "containers", "create:ok", "containers"]


def test_a_refused_create_is_not_repeated_and_names_the_call() -> None:
    engine, api = fake_engine(["bad"])
    with pytest.raises(EngineError, match="engine refused: create container for rg"):
        engine.create_container({"image": "x"}, what="create container for rg")
    assert api.calls == ["create:bad"]


def test_each_create_carries_its_own_label() -> None:
    engine, api = fake_engine()
    engine.create_container({"image": "x"})
    engine.create_container({"image": "x"})
    assert len({labels[LABEL_CREATE] for labels in api.made.values()}) == 2


def test_gone_is_not_found_and_removing_twice_is_no_error() -> None:
    engine, api = fake_engine()
    with pytest.raises(EngineNotFound, match="inspect image sandbench/rg:x"):
        engine.inspect_image("sandbench/rg:x")
    assert engine.image_id("sandbench/rg:x") is None
    cid = engine.create_container({"image": "x"})
    assert engine.remove_container(cid) is True
    assert engine.remove_container(cid) is False


# -- a fake Engine for what calls it ------------------------------------------------------------

class FakeEngine:
    """The one class unit tests fake: only the methods cleanup calls."""

    def __init__(self) -> None:
        self.containers = {"c1": {"Id": "c1", "Names": ["/sb-rg"], "State": "exited",
                                  "Labels": {"sandbench.arm": "rg", "sandbench.run": "r1"}}}
        self.images = {"i1": {"Id": "i1", "RepoTags": None}}
        self.labels_asked: list[str] = []

    def list_containers(self, label: str) -> list[dict[str, Any]]:
        self.labels_asked.append(label)
        return list(self.containers.values())

    def list_images(self, label: str) -> list[dict[str, Any]]:
        self.labels_asked.append(label)
        return list(self.images.values())

    def remove_container(self, container_id: str) -> bool:
        return self.containers.pop(container_id, None) is not None

    def remove_image(self, image_id: str, force: bool = False) -> bool:
        return self.images.pop(image_id, None) is not None


def test_cleanup_finds_by_label_and_removes_by_id() -> None:
    engine = FakeEngine()
    found = cleanup.find(engine)  # type: ignore[arg-type]
    assert [(f.kind, f.id, f.name) for f in found] == [("container", "c1", "sb-rg"),
                                                      ("image", "i1", "<none>")]
    assert engine.labels_asked == ["sandbench.managed=true", "sandbench.stage=build",
                                   "sandbench.temporary=true"]
    engine.containers.clear()  # removed meanwhile: not reported as removed by us
    assert [r.id for r in cleanup.remove(engine, found)] == ["i1"]  # type: ignore[arg-type]


def test_a_build_stream_the_engine_cuts_off_is_one_engine_error_naming_the_build() -> None:
    engine, _ = fake_engine()

    def progress() -> Any:
        yield {"stream": "Step 1/2 : FROM base"}
        raise urllib3.exceptions.ProtocolError(
            "Connection broken: IncompleteRead(0 bytes read)")

    api = SimpleNamespace(build=lambda **_: progress(), close=lambda: None)
    engine._stream_client = lambda timeout_s: api  # type: ignore[method-assign]
    seen = []
    with pytest.raises(EngineError, match="engine failed: build ctx") as raised:
        for chunk in engine.build(Path("/tmp/ctx"), tag="t", build_args={}, labels={}):
            seen.append(chunk)
    assert seen == [{"stream": "Step 1/2 : FROM base"}]
    assert "IncompleteRead" in raised.value.why


# -- the DOCKER_* environment, read by the SDK ----------------------------------------------

def test_the_address_is_docker_hosts_else_the_local_socket(monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", "ssh://bench@10.0.0.2")
    assert engine_address() == "ssh://bench@10.0.0.2"
    # TLS settings that could not be used do not stop an engine that never uses TLS.
    monkeypatch.setenv("DOCKER_TLS_VERIFY", "1")
    monkeypatch.setenv("DOCKER_CERT_PATH", str(tmp_path / "absent"))
    for unset in ("", None):
        if unset is None:
            monkeypatch.delenv("DOCKER_HOST")
        else:
            monkeypatch.setenv("DOCKER_HOST", unset)
        assert engine_address() == "unix:///var/run/docker.sock"


def test_missing_tls_files_are_the_sdks_error(monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_TLS_VERIFY", "1")
    monkeypatch.setenv("DOCKER_CERT_PATH", str(tmp_path / "absent"))
    with pytest.raises(docker.errors.TLSParameterError, match="certificate and key files"):
        pool.check_address("tcp://10.0.0.2:2376", insecure=False)


def test_a_certificate_path_without_verification_is_plain_tcp(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    """The SDK would speak TLS without verifying the engine: no better than plain TCP."""
    monkeypatch.delenv("DOCKER_TLS_VERIFY", raising=False)
    monkeypatch.setenv("DOCKER_CERT_PATH", str(tmp_path))
    for name in ("ca.pem", "cert.pem", "key.pem"):
        (tmp_path / name).write_text("")
    assert tls_config() is None
    with pytest.raises(InputError, match="without TLS"):
        pool.check_address("tcp://10.0.0.2:2376", insecure=False)


def _connect_as_nobody(address: str) -> str:
    def connect() -> str:
        try:
            Engine.connect(timeout_s=5, address=address)
        except EngineError as err:
            return err.render()
        return "connected"
    return as_nobody(connect)


def test_a_socket_the_user_may_not_open_is_named_with_the_fix() -> None:
    """Mode 0600, owned by root: nobody's connect is EACCES, and the error says so (not that
    no engine answers); once the mode lets it in and nothing listens, it is the engine."""
    folder = Path(tempfile.mkdtemp(prefix="sandbench-sock-"))
    try:
        folder.chmod(0o755)
        path = folder / "docker.sock"
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
            server.bind(str(path))
            server.listen()
            path.chmod(0o600)
            said = _connect_as_nobody(f"unix://{path}")
        assert said.splitlines() == [
            f"error: you may not open {path}",
            "  why: permission denied (EACCES) on the engine's socket",
            "  fix: add your user to the docker group (then log in again) or run as root"]
        path.chmod(0o666)  # nothing listens now: refused, which is no engine
        said = _connect_as_nobody(f"unix://{path}")
        assert said.startswith(f"error: no Docker engine answers at unix://{path}\n"), said
    finally:
        shutil.rmtree(folder)


# -- what is worth another try -------------------------------------------------------------

def test_engine_errors_are_transient_as_what_they_translate() -> None:
    def translated(cause: BaseException) -> EngineError:
        try:
            raise calls.translate("build base", cause) from cause
        except EngineError as err:
            return err
    assert calls.is_transient(translated(requests.exceptions.ConnectionError("reset")))
    server_error = docker.errors.APIError("boom", response=SimpleNamespace(
        status_code=500, url="/build", reason="Internal Server Error"))
    assert calls.is_transient(translated(server_error))
    assert not calls.is_transient(translated(refused("no such build arg")))
    assert not calls.is_transient(EngineError("image 'x' failed to build"))
    assert calls.is_transient(calls.TransientFailure("image 'x' failed to build"))


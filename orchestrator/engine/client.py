"""The connected engine: every daemon call a typed method, with a timeout.

Retries follow what a call does to the engine. A call that reads, or whose repeat changes
nothing (inspect, list, start, tag, kill, remove, pull, exec create), retries transient
failures (calls.retry_policy). A call that makes something is never repeated blindly: a
container create whose answer was lost is looked up by the unique label it carried, and an
import by the tag it was given, before anything is asked again. Streams (build, load, save,
exec, attach) are never retried: their side effects have begun by the time they can fail.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, cast

import docker
import docker.tls

from orchestrator.engine.calls import (DEFAULT_TIMEOUT_S, ENGINE_FAILURES, STREAM_TIMEOUT_S, T,
                                       retry_policy, translate)
from orchestrator.engine.connection import (api_version, engine_address, own_trust,
                                            socket_denied, tls_config)
from orchestrator.engine.streams import AttachChannel, ExecStream
from orchestrator.sandbox import podman
from orchestrator.errors import ContainerFailed, EngineError, EngineNotFound
from orchestrator.labels import LABEL_CREATE
from orchestrator.untrusted import limits

# The log of a short-lived container: one json-file the engine truncates at the bound.
SHORT_CONTAINER_LOG = {"type": "json-file",
                       "config": {"max-size": str(limits.SHORT_CONTAINER_LOG_BYTES),
                                  "max-file": "1"}}


class Engine:
    """A connected engine. The SDK's clients are private to this class."""

    def __init__(self, client: docker.DockerClient, address: str | None = None,
                 tls: docker.tls.TLSConfig | None = None) -> None:
        self._client = client
        self._api: docker.APIClient = client.api
        self.address = address or engine_address()
        self._tls = tls
        self._dialect: str | None = None

    @classmethod
    def connect(cls, timeout_s: int = DEFAULT_TIMEOUT_S, address: str | None = None) -> Engine:
        """The engine at `address` (a URL the SDK accepts; DOCKER_HOST's, else the local
        socket, when None). A tcp:// address uses TLS when DOCKER_TLS_VERIFY says so; whether
        a plain one may be used at all is decided before (orchestrator/engine_pool.py)."""
        address = address or engine_address()
        tls = tls_config() if address.startswith("tcp://") else None
        try:
            client = docker.DockerClient(base_url=address, timeout=timeout_s,
                                         version=api_version(address, tls, timeout_s),
                                         tls=tls or False,
                                         use_ssh_client=address.startswith("ssh://"))
            own_trust(client.api, tls)
            retry_policy()(client.ping)
        except ENGINE_FAILURES as exc:
            if (denied := socket_denied(address)) is not None:
                raise EngineError(f"you may not open {denied}",
                                  why="permission denied (EACCES) on the engine's socket",
                                  fix="add your user to the docker group (then log in again) "
                                      "or run as root") from exc
            raise EngineError(
                f"no Docker engine answers at {address}",
                why=str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
                fix="start one (scripts/ensure-docker installs Debian's docker.io and "
                    "starts dockerd when run as root), or set DOCKER_HOST") from exc
        return cls(client, address, tls)

    def _call(self, what: str, fn: Callable[..., T], *args: Any, retry: bool = True,
              **kwargs: Any) -> T:
        """One engine call, retried on transient failures when `retry`; a final failure
        is sandbench's error naming `what`."""
        try:
            if retry:
                return retry_policy(what)(fn, *args, **kwargs)
            return fn(*args, **kwargs)
        except ENGINE_FAILURES as exc:
            raise translate(what, exc) from exc

    def _stream_client(self, timeout_s: float | None) -> docker.APIClient:
        """A low-level client whose socket timeout fits one long exec or build stream."""
        # The SDK hands the timeout to requests, which takes seconds as a float, or None.
        api = docker.APIClient(base_url=self.address, version=self._api.api_version,
                               timeout=timeout_s,  # type: ignore[arg-type]
                               tls=self._tls or False,
                               use_ssh_client=self.address.startswith("ssh://"))
        own_trust(api, self._tls)
        return api

    # -- the engine itself ------------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        return self._call("info", self._client.info)

    def version(self) -> dict[str, Any]:
        return self._call("version", self._client.version)

    @property
    def dialect(self) -> str:
        """docker, or podman when Podman's engine answers (its version's components), asked
        once: which answers the guards read as equivalent (orchestrator/sandbox/podman.py)."""
        if self._dialect is None:
            self._dialect = podman.dialect(self.version())
        return self._dialect

    # -- images -----------------------------------------------------------------------------

    def inspect_image(self, ref: str) -> dict[str, Any]:
        """The image's inspect document; `EngineNotFound` when the engine has no such image."""
        return self._call(f"inspect image {ref}", self._api.inspect_image, ref)

    def image_id(self, ref: str) -> str | None:
        """The id `ref` names here, or None when the engine has no such image."""
        try:
            return self.inspect_image(ref)["Id"]
        except EngineNotFound:
            return None

    def pull(self, name: str, digest: str) -> None:
        """Pull a digest-pinned image (a repeat pulls nothing new)."""
        self._call(f"pull {name}@{digest}", self._api.pull, name, tag=digest)

    def build(self, context: Path, *, tag: str | None, build_args: Mapping[str, str],
              labels: Mapping[str, str], target: str | None = None, offline: bool = False,
              timeout_s: float = STREAM_TIMEOUT_S) -> Iterator[dict[str, Any]]:
        """The decoded progress of one build (no cache, no pull; no network for its RUN steps
        when `offline`); never retried. The engine's own error arrives as a chunk with an
        "error" key."""
        api = self._stream_client(timeout_s)
        try:
            stream = self._call(f"build {context.name}", api.build, path=str(context), tag=tag,
                                buildargs=dict(build_args), labels=dict(labels), rm=True,
                                forcerm=True, pull=False, nocache=True, decode=True,
                                target=target, network_mode="none" if offline else None,
                                retry=False)
            try:
                yield from stream
            except ENGINE_FAILURES as exc:
                raise translate(f"build {context.name}", exc) from exc
        finally:
            api.close()

    def tag(self, image_id: str, repository: str, tag: str) -> None:
        self._call(f"tag {repository}:{tag}", self._api.tag, image_id, repository, tag,
                   force=True)

    def remove_image(self, image_id: str, *, force: bool = False) -> bool:
        """Remove by id; False when it was already gone."""
        try:
            self._call(f"remove image {image_id[:19]}", self._api.remove_image, image_id,
                       force=force)
        except EngineNotFound:
            return False
        return True

    def list_images(self, label: str | None = None, *,
                    repository: str | None = None) -> list[dict[str, Any]]:
        """Images carrying `label` (`key=value`), or tagged in `repository`; every top-level
        image when neither is given."""
        return self._call(f"list images {label or repository or ''}".rstrip(),
                          self._api.images, name=repository,
                          filters={"label": label} if label else None)

    def save(self, refs: list[str], timeout_s: float = STREAM_TIMEOUT_S) -> Iterator[bytes]:
        """One `docker save` archive of several images, shared layers once (the SDK saves one
        image at a time; the engine's /images/get endpoint takes many names)."""
        api = self._stream_client(timeout_s)
        url = f"{api.base_url}/v{api.api_version}/images/get"
        try:
            response = self._call("save images", api.get, url, params={"names": refs},
                                  stream=True, retry=False)
            try:
                response.raise_for_status()
                yield from response.iter_content(chunk_size=1 << 20)
            except ENGINE_FAILURES as exc:
                raise translate(f"save {', '.join(refs)}", exc) from exc
        finally:
            api.close()

    def load(self, archive: IO[bytes], timeout_s: float = STREAM_TIMEOUT_S) -> None:
        """`docker load` of an archive; never retried (the file is read as it streams)."""
        api = self._stream_client(timeout_s)
        try:
            for chunk in self._call("load images", api.load_image, archive, retry=False):
                if isinstance(chunk, dict) and "error" in chunk:
                    raise EngineError("engine refused: load images", why=chunk["error"])
        except ENGINE_FAILURES as exc:
            raise translate("load images", exc) from exc
        finally:
            api.close()

    # -- containers -------------------------------------------------------------------------

    def create_container(self, spec: Mapping[str, Any], what: str = "create container") -> str:
        """Create a container from keyword arguments in the SDK's spelling (see
        `SandboxSpec.create_kwargs`); its id. The create carries a unique label: when an
        answer is lost, the next try first looks for the container the engine may have
        made, and a duplicate that appears after all is removed."""
        token = uuid.uuid4().hex
        kwargs = {**spec, "labels": {**(spec.get("labels") or {}), LABEL_CREATE: token}}
        tried = False

        def attempt() -> str:
            nonlocal tried
            if tried and (made := self._created(token)):
                return made[0]
            tried = True
            made_id = self._client.containers.create(**kwargs).id
            if made_id is None:
                raise EngineError(f"engine answered {what} without a container id")
            return made_id

        container_id = self._call(what, attempt)
        for duplicate in self._created(token):
            if duplicate != container_id:
                self.remove_container(duplicate)
        return container_id

    def _created(self, token: str) -> list[str]:
        return [c["Id"] for c in self._call("find a created container", self._api.containers,
                                            all=True, filters={"label": f"{LABEL_CREATE}={token}"})]

    def start(self, container_id: str) -> None:
        self._call(f"start container {container_id[:12]}", self._api.start, container_id)

    def inspect_container(self, container_id: str) -> dict[str, Any]:
        """The container's inspect document; `EngineNotFound` when it is gone."""
        return self._call(f"inspect container {container_id[:12]}",
                          self._api.inspect_container, container_id)

    def pids(self, container_id: str) -> int | None:
        """The container's processes and threads as its pids cgroup counts them (the
        engine's one-shot stats); None when the engine reports no count."""
        stats = self._call(f"stats of container {container_id[:12]}", self._api.stats,
                           container_id, stream=False, one_shot=True)
        current = (stats.get("pids_stats") or {}).get("current")
        return current if type(current) is int else None

    def kill(self, container_id: str) -> bool:
        """SIGKILL the container; False when it could not be (gone, or not running)."""
        try:
            self._call(f"kill container {container_id[:12]}", self._api.kill, container_id,
                       retry=False)
        except EngineError:
            return False
        return True

    def remove_container(self, container_id: str) -> bool:
        """Force-remove with its anonymous volumes; False when it was already gone."""
        try:
            self._call(f"remove container {container_id[:12]}", self._api.remove_container,
                       container_id, force=True, v=True)
        except EngineNotFound:
            return False
        return True

    def list_containers(self, label: str) -> list[dict[str, Any]]:
        """Containers, running or not, carrying `label` (`key=value`)."""
        return self._call("list containers", self._api.containers, all=True,
                          filters={"label": label})

    def copy_out(self, container_id: str, path: str) -> bytes:
        """The tar archive the engine makes of `path` in the container."""
        stream, _ = self._call(f"copy {path} out of {container_id[:12]}",
                               self._api.get_archive, container_id, path)
        return b"".join(stream)

    def stream_out(self, container_id: str, path: str,
                   timeout_s: float = STREAM_TIMEOUT_S) -> Iterator[bytes]:
        """The tar archive of `path` in the container, as it streams (never retried: it is
        read as it comes)."""
        api = self._stream_client(timeout_s)
        try:
            stream, _ = self._call(f"copy {path} out of {container_id[:12]}",
                                   api.get_archive, container_id, path, retry=False)
            try:
                yield from stream
            except ENGINE_FAILURES as exc:
                raise translate(f"copy {path} out of {container_id[:12]}", exc) from exc
        finally:
            api.close()

    def copy_in(self, container_id: str, path: str, archive: IO[bytes],
                timeout_s: float = STREAM_TIMEOUT_S) -> None:
        """Extract a tar archive at `path` in the container (mounted volumes included; the
        archive's owners and modes are kept). Never retried: the file is read as it streams."""
        api = self._stream_client(timeout_s)
        try:
            if not self._call(f"copy into {container_id[:12]}:{path}", api.put_archive,
                              container_id, path, archive, retry=False):
                raise EngineError(f"engine refused: copy into {container_id[:12]}:{path}")
        finally:
            api.close()

    # -- volumes ----------------------------------------------------------------------------

    def create_volume(self, name: str, labels: Mapping[str, str],
                      driver_opts: Mapping[str, str] | None = None) -> None:
        """A volume of the local driver (`driver_opts` as `docker volume create --opt`); a
        repeat of the same create is no error, so it retries."""
        self._call(f"create volume {name}", self._api.create_volume, name, driver="local",
                   driver_opts=dict(driver_opts or {}), labels=dict(labels))

    def inspect_volume(self, name: str) -> dict[str, Any]:
        """The volume's inspect document; `EngineNotFound` when there is none."""
        return self._call(f"inspect volume {name}", self._api.inspect_volume, name)

    def remove_volume(self, name: str) -> bool:
        """Remove a volume; False when it was already gone."""
        try:
            self._call(f"remove volume {name}", self._api.remove_volume, name, force=True)
        except EngineNotFound:
            return False
        return True

    def list_volumes(self, label: str) -> list[dict[str, Any]]:
        """Volumes carrying `label` (`key=value`)."""
        found = self._call("list volumes", self._api.volumes, filters={"label": label})
        return (found or {}).get("Volumes") or []

    def run_once(self, spec: Mapping[str, Any], timeout_s: float = DEFAULT_TIMEOUT_S) -> bytes:
        """Create, start and wait for a short-lived container; its stdout. The container is
        removed by id whatever happens; a non-zero exit raises `ContainerFailed` with the
        end of its stderr. What it prints may be a third-party tool's (a version command):
        the engine keeps at most `limits.SHORT_CONTAINER_LOG_BYTES` of its log (one
        json-file), so neither the engine's disk nor what is read here grows with it."""
        spec = {"log_config": SHORT_CONTAINER_LOG, **spec}
        container_id = self.create_container(spec, what=f"create {spec['command'][0]}")
        try:
            self.start(container_id)
            status = self._call("wait", self._api.wait, container_id, timeout=timeout_s,
                                retry=False)["StatusCode"]
            # Without stream=True the SDK answers the logs as bytes.
            out = cast(bytes, self._call("logs", self._api.logs, container_id, stdout=True,
                                         stderr=False))
            if status != 0:
                err = cast(bytes, self._call("logs", self._api.logs, container_id,
                                             stdout=False, stderr=True))
                raise ContainerFailed(f"{' '.join(spec['command'])} exited with {status}",
                                      why=err.decode(errors="replace")[-500:], status=status)
            return out
        finally:
            self.remove_container(container_id)

    # -- exec -------------------------------------------------------------------------------

    def attach(self, container_id: str) -> AttachChannel:
        """The container's stdin, stdout and stderr as one stream (see AttachChannel)."""
        api = self._stream_client(None)
        try:
            response = self._call(f"attach to {container_id[:12]}", api.attach_socket,
                                  container_id, params={"stdin": 1, "stdout": 1, "stderr": 1,
                                                        "stream": 1}, retry=False)
        except BaseException:
            api.close()
            raise
        return AttachChannel(api, response)

    def exec(self, container_id: str, argv: list[str], *, user: str,
             timeout_s: float) -> ExecStream:
        """Create an exec of `argv` (no stdin, no TTY) on a client whose socket timeout is
        `timeout_s`; the caller reads `chunks()` and then `exit_code()`, and closes it."""
        api = self._stream_client(timeout_s)
        try:
            exec_id = self._call("exec create", api.exec_create, container_id, argv,
                                 stdout=True, stderr=True, stdin=False, tty=False,
                                 user=user)["Id"]
        except BaseException:
            api.close()
            raise
        return ExecStream(api, exec_id, lambda: self._call("exec inspect", api.exec_inspect,
                                                           exec_id))


"""The one boundary to the Docker engine. Nothing else in sandbench imports the SDK: every
daemon call is a typed method here, with a timeout, and the errors other modules see are
sandbench's own (`EngineError`, `EngineNotFound`, `ContainerFailed`).

Retries follow what a call does to the engine. A call that reads, or whose repeat changes
nothing (inspect, list, start, tag, kill, remove, pull, exec create), retries transient
failures under one tenacity policy. A call that makes something is never repeated blindly:
a container create whose answer was lost is looked up by the unique label it carried, and an
import by the tag it was given, before anything is asked again. Streams (build, load, save,
exec, attach) are never retried: their side effects have begun by the time they can fail.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, TypeVar

import docker
import docker.errors
import docker.tls
import requests.exceptions
import tenacity
import urllib3.exceptions

from orchestrator.errors import ContainerFailed, EngineError, EngineNotFound
from orchestrator.labels import LABEL_CREATE
import contextlib

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 60
STREAM_TIMEOUT_S = 3600
# Tests set this to tenacity.wait_none() so retries do not sleep.
RETRY_WAIT: tenacity.wait.wait_base = tenacity.wait_exponential(multiplier=0.25, max=4)
RETRY_ATTEMPTS = 5
MIN_API_VERSION = "1.24"  # the oldest every current engine answers (only to ask its own)


def is_transient(exc: BaseException) -> bool:
    """Connection refused or reset, timeouts, and 5xx are worth another try; 4xx never is."""
    if isinstance(exc, docker.errors.APIError):
        code = exc.status_code or 0
        return code >= 500
    return isinstance(exc, requests.exceptions.ConnectionError | requests.exceptions.Timeout
                      | ConnectionResetError | ConnectionRefusedError | TimeoutError)


def retry_policy() -> tenacity.Retrying:
    """The one tenacity policy for engine calls that are safe to repeat."""
    return tenacity.Retrying(
        retry=tenacity.retry_if_exception(is_transient),
        stop=tenacity.stop_after_attempt(RETRY_ATTEMPTS),
        wait=RETRY_WAIT,
        reraise=True,
    )


def engine_address() -> str:
    return os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")


def _translate(what: str, exc: BaseException) -> EngineError:
    """The SDK's and requests' errors as sandbench's, naming the call."""
    if isinstance(exc, docker.errors.NotFound):
        return EngineNotFound(f"not found: {what}", why=exc.explanation or str(exc))
    if isinstance(exc, docker.errors.APIError):
        return EngineError(f"engine refused: {what}", why=exc.explanation or str(exc),
                           status=exc.status_code)
    return EngineError(f"engine failed: {what}", why=str(exc) or type(exc).__name__,
                       fix="check that the engine is running (docker info)")


# urllib3's own errors reach a caller reading a stream the engine cut off (a build's, a
# load's): requests wraps them only while it makes the call.
_ENGINE_FAILURES = (docker.errors.DockerException, requests.exceptions.RequestException,
                    urllib3.exceptions.HTTPError, OSError)


class ExecStream:
    """One started `docker exec`: its (stdout, stderr) chunks as they arrive, then the exec's
    exit code. A broken stream ends the chunks and is kept in `broken`, never raised: the
    caller's decoder says what a cut-off stream means."""

    def __init__(self, engine: Engine, api: docker.APIClient, exec_id: str) -> None:
        self._engine = engine
        self._api = api
        self._exec_id = exec_id
        self.broken: str | None = None

    def chunks(self) -> Iterator[tuple[bytes | None, bytes | None]]:
        try:
            yield from self._api.exec_start(self._exec_id, stream=True, demux=True)
        except (requests.exceptions.RequestException, OSError) as exc:
            self.broken = str(exc) or type(exc).__name__

    def exit_code(self) -> int | None:
        """The exec's exit code, or None when the engine no longer knows the exec."""
        try:
            return self._engine._call("exec inspect", self._api.exec_inspect,
                                      self._exec_id)["ExitCode"]
        except EngineError:
            return None

    def close(self) -> None:
        self._api.close()


class AttachChannel:
    """A container's attach stream: its stdin to write, its stdout and stderr to read,
    demultiplexed (the container has no TTY, so each chunk comes with the engine's 8-byte
    header naming its stream). Opened once for a sandbox's life and never retried; reads
    block until the container writes or stops."""

    STDOUT, STDERR = 1, 2

    def __init__(self, api: docker.APIClient, response: Any) -> None:
        self._api = api
        self._response = response  # holds the engine's connection open
        # A plain stream (a unix or tcp socket's, as a socket or the SDK's SocketIO) is read
        # through a descriptor of our own; a socket subclass is read as it is: a TLS engine's
        # descriptor carries records, not the stream, and an ssh:// one's stream runs through
        # an ssh process, not its descriptor.
        plain = not isinstance(response, socket.socket) or type(response) is socket.socket
        self._sock = socket.socket(fileno=os.dup(response.fileno())) if plain else response
        self._sock.settimeout(None)

    def send(self, data: bytes) -> None:
        try:
            self._sock.sendall(data)
        except OSError as exc:
            raise EngineError("the container's attach stream is closed",
                              why=str(exc) or type(exc).__name__) from exc

    def receive(self) -> tuple[int, bytes] | None:
        """The next (stream, bytes) the container wrote; None once the stream has ended."""
        header = self._exactly(8)
        if header is None:
            return None
        payload = self._exactly(int.from_bytes(header[4:], "big"))
        return None if payload is None else (header[0], payload)

    def _exactly(self, size: int) -> bytes | None:
        data = bytearray()
        while len(data) < size:
            try:
                chunk = self._sock.recv(min(size - len(data), 1 << 20))
            except OSError:
                return None
            if not chunk:
                return None
            data += chunk
        return bytes(data)

    def close(self) -> None:
        for close in (self._sock.close, self._response.close, self._api.close):
            with contextlib.suppress(OSError):
                close()


def tls_config() -> docker.tls.TLSConfig | None:
    """Docker's own convention for a TLS engine: DOCKER_TLS_VERIFY set, the CA, client
    certificate and key in DOCKER_CERT_PATH (default ~/.docker); None when it is not set."""
    if not os.environ.get("DOCKER_TLS_VERIFY"):
        return None
    certs = Path(os.environ.get("DOCKER_CERT_PATH") or Path.home() / ".docker")
    return docker.tls.TLSConfig(client_cert=(str(certs / "cert.pem"), str(certs / "key.pem")),
                                ca_cert=str(certs / "ca.pem"), verify=True)


def _own_trust(api: docker.APIClient, tls: docker.tls.TLSConfig | None) -> None:
    """A TLS engine is verified against its own CA alone: requests would otherwise let
    REQUESTS_CA_BUNDLE or CURL_CA_BUNDLE (set on many hosts for a proxy) replace it, and send
    the engine's traffic through the environment's proxy."""
    if tls is not None:
        api.trust_env = False


def _api_version(address: str, tls: docker.tls.TLSConfig | None, timeout_s: int) -> str:
    """The engine's API version, asked as "auto" would but, for a TLS engine, trusting its
    CA alone (the SDK asks before a caller could say so)."""
    if tls is None:
        return "auto"
    probe = docker.APIClient(base_url=address, version=MIN_API_VERSION, timeout=timeout_s,
                             tls=tls)
    _own_trust(probe, tls)
    try:
        return str(retry_policy()(probe.version, api_version=False)["ApiVersion"])
    finally:
        probe.close()


class Engine:
    """A connected engine. The SDK's clients are private to this class."""

    def __init__(self, client: docker.DockerClient, address: str | None = None,
                 tls: docker.tls.TLSConfig | None = None) -> None:
        self._client = client
        self._api: docker.APIClient = client.api
        self.address = address or engine_address()
        self._tls = tls

    @classmethod
    def connect(cls, timeout_s: int = DEFAULT_TIMEOUT_S, address: str | None = None) -> Engine:
        """The engine at `address` (a URL the SDK accepts; DOCKER_HOST's, else the local
        socket, when None). A tcp:// address uses TLS when DOCKER_TLS_VERIFY says so; whether
        a plain one may be used at all is decided before (orchestrator/engines.py)."""
        address = address or engine_address()
        tls = tls_config() if address.startswith("tcp://") else None
        try:
            client = docker.DockerClient(base_url=address, timeout=timeout_s,
                                         version=_api_version(address, tls, timeout_s),
                                         tls=tls or False,
                                         use_ssh_client=address.startswith("ssh://"))
            _own_trust(client.api, tls)
            retry_policy()(client.ping)
        except _ENGINE_FAILURES as exc:
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
                return retry_policy()(fn, *args, **kwargs)
            return fn(*args, **kwargs)
        except _ENGINE_FAILURES as exc:
            raise _translate(what, exc) from exc

    def _stream_client(self, timeout_s: float | None) -> docker.APIClient:
        """A low-level client whose socket timeout fits one long exec or build stream."""
        api = docker.APIClient(base_url=self.address, version=self._api.api_version,
                               timeout=timeout_s, tls=self._tls or False,
                               use_ssh_client=self.address.startswith("ssh://"))
        _own_trust(api, self._tls)
        return api

    # -- the engine itself ------------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        return self._call("info", self._client.info)

    def version(self) -> dict[str, Any]:
        return self._call("version", self._client.version)

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

    def import_tarball(self, tarball: Path, repository: str, tag: str) -> str:
        """`docker import` of a root file system tarball as `repository:tag`; its id.
        Not retried: when the answer is lost, the tag says whether the import happened."""
        ref = f"{repository}:{tag}"
        try:
            self._call(f"import {ref}", self._api.import_image_from_file, str(tarball),
                       repository=repository, tag=tag, retry=False)
        except EngineError as err:
            if not is_transient(err.__cause__ or err) or (found := self.image_id(ref)) is None:
                raise
            return found
        return self.inspect_image(ref)["Id"]

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
            except _ENGINE_FAILURES as exc:
                raise _translate(f"build {context.name}", exc) from exc
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

    def list_images(self, label: str) -> list[dict[str, Any]]:
        """Images carrying `label` (`key=value`)."""
        return self._call("list images", self._api.images, filters={"label": label})

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
            except _ENGINE_FAILURES as exc:
                raise _translate(f"save {', '.join(refs)}", exc) from exc
        finally:
            api.close()

    def load(self, archive: IO[bytes], timeout_s: float = STREAM_TIMEOUT_S) -> None:
        """`docker load` of an archive; never retried (the file is read as it streams)."""
        api = self._stream_client(timeout_s)
        try:
            for chunk in self._call("load images", api.load_image, archive, retry=False):
                if isinstance(chunk, dict) and "error" in chunk:
                    raise EngineError("engine refused: load images", why=chunk["error"])
        except _ENGINE_FAILURES as exc:
            raise _translate("load images", exc) from exc
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
            return self._client.containers.create(**kwargs).id

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
            except _ENGINE_FAILURES as exc:
                raise _translate(f"copy {path} out of {container_id[:12]}", exc) from exc
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
        end of its stderr."""
        container_id = self.create_container(spec, what=f"create {spec['command'][0]}")
        try:
            self.start(container_id)
            status = self._call("wait", self._api.wait, container_id, timeout=timeout_s,
                                retry=False)["StatusCode"]
            out = self._call("logs", self._api.logs, container_id, stdout=True, stderr=False)
            if status != 0:
                err = self._call("logs", self._api.logs, container_id, stdout=False, stderr=True)
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
        return ExecStream(self, api, exec_id)

"""The one wrapper around the Docker SDK. Every daemon call goes through `Engine.call`:
a timeout on the call, tenacity retries for transient failures (never for a 4xx), and the
labels that let `cleanup` find only what sandbench made."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import docker
import docker.errors
import requests.exceptions
import tenacity

from orchestrator.errors import EngineError
from orchestrator.labels import (  # noqa: F401 - re-exported for callers
    LABEL_ARM, LABEL_IMAGE, LABEL_MANAGED, LABEL_RECIPE, LABEL_RUN, LABEL_STAGE, LABEL_TEMPORARY,
    LABEL_TOOL_VERSION, LABEL_VERSION, base_labels)

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 60
# Tests set this to tenacity.wait_none() so retries do not sleep.
RETRY_WAIT: tenacity.wait.wait_base = tenacity.wait_exponential(multiplier=0.25, max=4)
RETRY_ATTEMPTS = 5


def is_transient(exc: BaseException) -> bool:
    """Connection refused or reset, timeouts, and 5xx are worth another try; 4xx never is."""
    if isinstance(exc, docker.errors.APIError):
        code = exc.status_code or 0
        return code >= 500
    return isinstance(exc, requests.exceptions.ConnectionError | requests.exceptions.Timeout
                      | ConnectionResetError | ConnectionRefusedError | TimeoutError)


def retry_policy() -> tenacity.Retrying:
    """The one tenacity policy for engine calls."""
    return tenacity.Retrying(
        retry=tenacity.retry_if_exception(is_transient),
        stop=tenacity.stop_after_attempt(RETRY_ATTEMPTS),
        wait=RETRY_WAIT,
        reraise=True,
    )


def engine_address() -> str:
    return os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")


class Engine:
    """A connected engine. `client` is the high-level SDK client; `api` its low-level one."""

    def __init__(self, client: docker.DockerClient) -> None:
        self.client = client
        self.api: docker.APIClient = client.api

    @classmethod
    def connect(cls, timeout_s: int = DEFAULT_TIMEOUT_S) -> Engine:
        try:
            client = docker.DockerClient(base_url=engine_address(), timeout=timeout_s,
                                         version="auto")
            retry_policy()(client.ping)
        except (docker.errors.DockerException, requests.exceptions.RequestException,
                OSError) as exc:
            raise EngineError(
                f"no Docker engine answers at {engine_address()}",
                why=str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
                fix="start one (scripts/ensure-docker installs Debian's docker.io and "
                    "starts dockerd when run as root), or set DOCKER_HOST") from exc
        return cls(client)

    def call(self, what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run one engine call under the retry policy; a final failure names `what`."""
        try:
            return retry_policy()(fn, *args, **kwargs)
        except docker.errors.NotFound:
            raise
        except docker.errors.APIError as exc:
            raise EngineError(f"engine refused: {what}", why=exc.explanation or str(exc),
                              status=exc.status_code) from exc
        except (requests.exceptions.RequestException, OSError) as exc:
            raise EngineError(f"engine failed: {what}", why=str(exc) or type(exc).__name__,
                              fix="check that the engine is running (docker info)") from exc

    def streaming_api(self, timeout_s: float | None) -> docker.APIClient:
        """A low-level client whose socket timeout fits one long exec or build stream."""
        return docker.APIClient(base_url=engine_address(), version=self.api.api_version,
                                timeout=timeout_s)

    def save_images(self, refs: list[str], timeout_s: float = 3600) -> Iterator[bytes]:
        """One `docker save` archive of several images (the SDK saves only one at a time;
        the engine's /images/get endpoint takes many names)."""
        api = self.streaming_api(timeout_s)
        response = self.call("save images", api._get, api._url("/images/get"),
                             params={"names": refs}, stream=True)
        api._raise_for_status(response)
        yield from response.iter_content(chunk_size=1 << 20)

    def info(self) -> dict[str, Any]:
        return self.call("info", self.client.info)

    def version(self) -> dict[str, Any]:
        return self.call("version", self.client.version)

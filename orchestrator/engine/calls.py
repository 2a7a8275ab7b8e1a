"""Every engine call's timeout and retry policy, and the SDK's errors as sandbench's.

A call that reads, or whose repeat changes nothing, retries transient failures under the one
tenacity policy here; what may not be repeated is decided by the caller (client.py).
"""

from __future__ import annotations

from typing import TypeVar

import docker.errors
import requests.exceptions
import tenacity
import urllib3.exceptions

from orchestrator.errors import EngineError, EngineNotFound

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 60
STREAM_TIMEOUT_S = 3600
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
    """The one tenacity policy for engine calls that are safe to repeat."""
    return tenacity.Retrying(
        retry=tenacity.retry_if_exception(is_transient),
        stop=tenacity.stop_after_attempt(RETRY_ATTEMPTS),
        wait=RETRY_WAIT,
        reraise=True,
    )


def translate(what: str, exc: BaseException) -> EngineError:
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
ENGINE_FAILURES = (docker.errors.DockerException, requests.exceptions.RequestException,
                    urllib3.exceptions.HTTPError, OSError)

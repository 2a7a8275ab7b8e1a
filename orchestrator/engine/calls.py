"""Every engine call's timeout and retry policy, and the SDK's errors as sandbench's.

A call that reads, or whose repeat changes nothing, retries transient failures under the one
tenacity policy here; what may not be repeated is decided by the caller (client.py). An image
build, made safe to repeat, retries under the same policy (images/build_faults.py).
"""

from __future__ import annotations

from typing import TypeVar

import docker.errors
import requests.exceptions
import tenacity
import urllib3.exceptions

from orchestrator import log
from orchestrator.errors import EngineError, EngineNotFound, SandbenchError

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 60
STREAM_TIMEOUT_S = 3600
# Tests set this to tenacity.wait_none() so retries do not sleep.
RETRY_WAIT: tenacity.wait.wait_base = tenacity.wait_exponential(multiplier=0.25, max=4)
RETRY_ATTEMPTS = 5

logger = log.get(__name__)


class TransientFailure(EngineError):
    """A failure from outside that another attempt may not meet, read from what a build
    printed (the package mirror's name not resolved, a fetch cut off): retried."""


def is_transient(exc: BaseException) -> bool:
    """Connection refused or reset, timeouts, and 5xx are worth another try; 4xx never is.
    Sandbench's own error is when it says so, or when what it translates was."""
    if isinstance(exc, TransientFailure):
        return True
    if isinstance(exc, EngineError):
        return exc.__cause__ is not None and is_transient(exc.__cause__)
    if isinstance(exc, docker.errors.APIError):
        code = exc.status_code or 0
        return code >= 500
    return isinstance(exc, requests.exceptions.ConnectionError | requests.exceptions.Timeout
                      | ConnectionResetError | ConnectionRefusedError | TimeoutError)


def retry_policy(what: str = "engine call") -> tenacity.Retrying:
    """The one tenacity policy for engine calls (and builds) that are safe to repeat; each
    retry is logged with `what` and what failed."""
    def log_retry(state: tenacity.RetryCallState) -> None:
        failed = state.outcome.exception() if state.outcome is not None else None
        logger.warning("retry", what=what, attempt=state.attempt_number + 1,
                       of=RETRY_ATTEMPTS, failed=failure_text(failed))
    return tenacity.Retrying(
        retry=tenacity.retry_if_exception(is_transient),
        stop=tenacity.stop_after_attempt(RETRY_ATTEMPTS),
        wait=RETRY_WAIT,
        before_sleep=log_retry,
        reraise=True,
    )


def failure_text(exc: BaseException | None) -> str:
    """One line for a log: sandbench's `what` and the first line of its `why`, or the
    exception's first line."""
    if isinstance(exc, SandbenchError):
        why = (exc.why or "").strip().splitlines()
        return f"{exc.what}: {why[0]}" if why else exc.what
    text = str(exc).strip().splitlines() if exc is not None else []
    return text[0] if text else type(exc).__name__


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

"""Where the engine is and how it is trusted. DOCKER_HOST, DOCKER_TLS_VERIFY and
DOCKER_CERT_PATH are read by the docker SDK's own `docker.utils.kwargs_from_env`, as the
docker CLI reads them; a TLS engine counts only when its certificate is verified, and is
verified against its own CA alone."""

from __future__ import annotations

import os
import socket
from typing import Any

import docker
import docker.tls
import docker.utils

from orchestrator.engine.calls import retry_policy

MIN_API_VERSION = "1.24"  # the oldest every current engine answers (only to ask its own)
LOCAL_SOCKET = "unix:///var/run/docker.sock"
TLS_SETTINGS = ("DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH")


def _from_env(tls: bool) -> dict[str, Any]:
    """The SDK's reading of the environment; without `tls` the TLS settings are left out, so
    that a bad certificate path fails only an engine that would use TLS (a local socket
    never does)."""
    environment = {k: v for k, v in os.environ.items() if tls or k not in TLS_SETTINGS}
    return dict(docker.utils.kwargs_from_env(environment or {"DOCKER_HOST": ""}))


def engine_address() -> str:
    """DOCKER_HOST's engine, else the local socket."""
    return str(_from_env(tls=False).get("base_url") or LOCAL_SOCKET)


def socket_denied(address: str) -> str | None:
    """The socket of a unix:// engine this process may not open (EACCES: not in the group
    that owns it), else None; asked only once the engine did not answer, so the error can
    say so instead of that no engine answers."""
    if not address.startswith("unix://"):
        return None
    path = "/" + address.removeprefix("unix://").lstrip("/")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(5)
        try:
            probe.connect(path)
        except PermissionError:
            return path
        except OSError:
            return None
    return None


def tls_config() -> docker.tls.TLSConfig | None:
    """Docker's own convention for a TLS engine: DOCKER_TLS_VERIFY set, the CA, client
    certificate and key in DOCKER_CERT_PATH (default ~/.docker); None when the environment
    asks for no verified TLS (a certificate path alone gives TLS without verifying the
    engine, which is no better than plain TCP here). A missing certificate file is the
    SDK's TLSParameterError."""
    tls = _from_env(tls=True).get("tls")
    return tls if isinstance(tls, docker.tls.TLSConfig) and tls.verify else None


def own_trust(api: docker.APIClient, tls: docker.tls.TLSConfig | None) -> None:
    """A TLS engine is verified against its own CA alone: requests would otherwise let
    REQUESTS_CA_BUNDLE or CURL_CA_BUNDLE (set on many hosts for a proxy) replace it, and send
    the engine's traffic through the environment's proxy."""
    if tls is not None:
        api.trust_env = False


def api_version(address: str, tls: docker.tls.TLSConfig | None, timeout_s: int) -> str:
    """The engine's API version, asked as "auto" would but, for a TLS engine, trusting its
    CA alone (the SDK asks before a caller could say so)."""
    if tls is None:
        return "auto"
    probe = docker.APIClient(base_url=address, version=MIN_API_VERSION, timeout=timeout_s,
                             tls=tls)
    own_trust(probe, tls)
    try:
        return str(retry_policy()(probe.version, api_version=False)["ApiVersion"])
    finally:
        probe.close()

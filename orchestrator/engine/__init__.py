"""The one boundary to the Docker engine. Nothing outside this package imports the SDK:
every daemon call is a typed method of `Engine`, with a timeout, and the errors other modules
see are sandbench's own (`EngineError`, `EngineNotFound`, `ContainerFailed`).

By concern: calls.py (timeouts, which failures are retried, the SDK's errors as sandbench's),
connection.py (where the engine is and how it is trusted, from the SDK's own reading of the
DOCKER_* environment), streams.py (one exec's output, a container's attach stream), and
client.py (the connected `Engine`, and which of its calls may be repeated).
"""

from orchestrator.engine.client import Engine
from orchestrator.engine.connection import engine_address, tls_config
from orchestrator.engine.streams import AttachChannel, ExecStream

__all__ = ["AttachChannel", "Engine", "ExecStream", "engine_address", "tls_config"]

"""The labels sandbench puts on every container and image it makes, so that `cleanup`
finds only its own, and a create whose answer was lost can be found again. Plain data: the
spec types and the scorer-free modules use them without importing the engine."""

from __future__ import annotations

from orchestrator import __version__

LABEL_MANAGED = "sandbench.managed"
LABEL_VERSION = "sandbench.version"
LABEL_RUN = "sandbench.run"
LABEL_ARM = "sandbench.arm"
LABEL_TOOL_VERSION = "sandbench.tool_version"
LABEL_IMAGE = "sandbench.image"
LABEL_RECIPE = "sandbench.recipe"
LABEL_STAGE = "sandbench.stage"
LABEL_TEMPORARY = "sandbench.temporary"
# One random value per create call: the engine may have made the container when its answer
# was lost, and this finds it (orchestrator/engine/client.py).
LABEL_CREATE = "sandbench.create"


def base_labels(**extra: str) -> dict[str, str]:
    labels = {LABEL_MANAGED: "true", LABEL_VERSION: __version__}
    labels.update(extra)
    return labels

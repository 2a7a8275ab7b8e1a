"""What a third-party tool prints while its image is built or inspected reaches the host
bounded, on the real engine: a recipe whose RUN step prints 96 MB as one line without a
newline and 96 MB of short lines, and whose version command prints a 300-character line, builds
with its log at the bound and the lock's version line cut; a short container that prints
40 MB hands the host at most the engine's log bound."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator import images, labels as lb
from orchestrator.engine import Engine
from orchestrator.settings import Settings
from orchestrator.untrusted import limits
from tests.integration.conftest import built, project_copy  # noqa: F401 (the fixture)

pytestmark = pytest.mark.integration
FLOOD = 96_000_000
NOISY = f"""ARG BASE
FROM ${{BASE}}
RUN head -c {FLOOD} /dev/zero | tr '\\0' x && echo && yes 0123456789 | head -c {FLOOD}
"""


def test_a_flooding_build_keeps_its_log_at_the_bound(engine: Engine, built: Settings,  # noqa: F811
                                                     tmp_path: Path) -> None:
    settings = project_copy(built, tmp_path)
    recipe = settings.images_dir / "noisy"
    recipe.mkdir()
    (recipe / "Dockerfile").write_text(NOISY)
    (recipe / "recipe.toml").write_text(
        'description = "tests/security: a build that floods its stream"\nparent = "base"\n'
        "tool_version = [\"sh\", \"-c\", \"head -c 300 /dev/zero | tr '\\\\0' v; echo\"]\n")
    (outcome,) = [o for o in images.build(engine, settings, ["noisy"]) if o.name == "noisy"]
    try:
        assert outcome.action == "built"
        log = (settings.bench_root / "image-builds" / "noisy.log").read_bytes()
        assert len(log) <= limits.BUILD_LOG_MAX_BYTES + 200
        assert log.rstrip().endswith(b"were not kept]")
        entry = json.loads(settings.images_lock.read_text())["images"]["noisy"]
        assert entry["tool_version"] == "v" * limits.TOOL_VERSION_MAX_CHARS + "... (100 more)"
    finally:
        if outcome.image_id:
            engine.remove_image(outcome.image_id, force=True)


def test_a_short_container_hands_over_at_most_the_log_bound(engine: Engine,
                                                            built: Settings) -> None:  # noqa: F811
    base = images.ImageLock.load(built.images_lock).image_id("base")
    out = engine.run_once({"image": base, "command": ["sh", "-c",
                                                      "head -c 40000000 /dev/zero | tr '\\0' y"],
                           "entrypoint": [], "network_mode": "none", "user": "65532:65532",
                           "read_only": True, "cap_drop": ["ALL"],
                           "labels": lb.base_labels(**{lb.LABEL_TEMPORARY: "true"})})
    assert 0 < len(out) <= limits.SHORT_CONTAINER_LOG_BYTES
    assert set(out) == {ord("y")}

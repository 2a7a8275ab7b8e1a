"""A fault from outside in an image build (the package mirror not resolved, the engine's
connection cut) is retried under the one retry policy, each retry logged with what failed; a
recipe's own error is not."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator import images, log
from orchestrator.engine import calls
from orchestrator.errors import EngineError
from orchestrator.images import build_faults
from orchestrator.images.build_stream import BuildStream, StageImages
from orchestrator.images.rootfs import run_host
from orchestrator.settings import Settings

BASE = "example/base@sha256:" + "a" * 64
APT_DNS = ("W: Failed to fetch http://mirror.test/debian/dists/bookworm/InRelease  "
           "Temporary failure resolving 'mirror.test'")
TRANSIENT = [
    APT_DNS,
    "E: Failed to fetch http://mirror.test/pool/main/r/ripgrep.deb  Could not connect to "
    "mirror.test:80 (10.0.0.1), connection timed out",
    "Err:1 http://mirror.test/debian bookworm InRelease  Could not resolve 'mirror.test'",
    "E: Failed to fetch http://mirror.test/debian/pool/x.deb  503  Service Unavailable",
    "WARNING: Retrying (Retry(total=4)) after connection broken by 'NewConnectionError(': "
    "Failed to establish a new connection: [Errno -3] Temporary failure in name resolution')'",
    "curl: (6) Could not resolve host: mirror.test",
    "npm ERR! request to https://npm.test/x failed, reason: getaddrinfo EAI_AGAIN npm.test",
    "fatal: unable to access 'https://git.test/x/': Connection reset by peer",
]
RECIPE_ERRORS = [
    "E: Unable to locate package ripgrepp",
    "E: Failed to fetch http://mirror.test/debian/pool/x.deb  404  Not Found [IP: 10.0.0.1 80]",
    "The command '/bin/sh -c false' returned a non-zero code: 1",
    "dockerfile parse error line 3: unknown instruction: RUNN",
    "ERROR: No matching distribution found for requests==99.0",
]


@pytest.mark.parametrize("line", TRANSIENT)
def test_a_network_failure_is_marked_transient(line: str) -> None:
    assert build_faults.transient_mark(["Step 2/3 : RUN apt-get update", line]) == line


@pytest.mark.parametrize("line", RECIPE_ERRORS)
def test_a_recipes_own_error_is_not(line: str) -> None:
    assert build_faults.transient_mark([line]) is None


class FlakyEngine:
    """What images.build asks of an engine for one recipe FROM a registry base: each build
    streams what the next entry of `attempts` says."""

    def __init__(self, attempts: list[list[dict[str, Any]]]) -> None:
        self.attempts = attempts
        self.builds = 0

    def image_id(self, ref: str) -> str | None:
        if ref == BASE:
            return "sha256:" + "b" * 64
        return ref if ref == BUILT_ID else None

    def tag(self, image_id: str, repository: str, tag: str) -> None:
        assert image_id == BUILT_ID

    def inspect_image(self, ref: str) -> dict[str, Any]:
        return {"Id": ref, "Size": 1000, "RepoTags": []}

    def build(self, context: Path, **_: Any) -> Iterator[dict[str, Any]]:
        assert (context / "Dockerfile").is_file()  # a fresh context every attempt
        chunks = self.attempts[self.builds]
        self.builds += 1
        yield from chunks

    def run_once(self, spec: dict[str, Any]) -> bytes:
        marker = spec["command"][4]  # images/manifests.py: sh -c SCRIPT sh MARKER ...
        return f"dash=0.5\n{marker}\n{marker}\n1.0\n".encode()

    def remove_image(self, image_id: str, *, force: bool = False) -> bool:
        return True


def _settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    recipe = tmp_path / "images" / "tiny"
    recipe.mkdir(parents=True)
    (recipe / "Dockerfile").write_text("ARG ROOTFS\nFROM ${ROOTFS}\nRUN apt-get update\n")
    (recipe / "recipe.toml").write_text(
        'description = "t"\ntool_version = ["cat", "/v"]\n'
        '[bootstrap]\nsuite = "bookworm"\nvariant = "minbase"\nsource_date_epoch = 1\n')
    monkeypatch.setenv("SANDBENCH_BASE_IMAGE", BASE)
    return Settings(project_root=tmp_path, bench_root=tmp_path / "bench")


def _steps(*lines: str) -> list[dict[str, Any]]:
    return [{"stream": line + "\n"} for line in lines]


FAILED = {"error": "The command '/bin/sh -c apt-get update' returned a non-zero code: 100"}
BUILT_ID = "sha256:" + "c" * 64
BUILT = [*_steps("Step 1/3 : ARG ROOTFS", "Step 2/3 : FROM ${ROOTFS}",
                 "Step 3/3 : RUN apt-get update"), {"aux": {"ID": BUILT_ID}}]


@pytest.fixture
def console() -> Iterator[io.StringIO]:
    """The log's console lines (JSON: not a terminal), for the test's reading."""
    lines = io.StringIO()
    log.configure(stream=lines)
    yield lines
    log.configure()


def test_a_build_the_mirror_failed_once_is_retried_and_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, console: io.StringIO) -> None:
    settings = _settings(tmp_path, monkeypatch)
    engine = FlakyEngine([[*_steps("Step 1/3 : ARG ROOTFS", APT_DNS), FAILED], BUILT])
    (outcome,) = images.build(engine, settings)  # type: ignore[arg-type]
    assert (outcome.action, outcome.image_id, engine.builds) == ("built", BUILT_ID, 2)
    events = [json.loads(line) for line in console.getvalue().splitlines()]
    (retry,) = [e for e in events if e["event"] == "retry"]
    assert retry["what"] == "build image tiny" and retry["attempt"] == 2
    assert APT_DNS in retry["failed"] and retry["level"] == "warning"
    steps = [(e["step"], e["instruction"]) for e in events if e["event"] == "build step"]
    assert steps[-3:] == [("1/3", "ARG ROOTFS"), ("2/3", "FROM ${ROOTFS}"),
                          ("3/3", "RUN apt-get update")]
    assert [e["event"] for e in events][-1] == "built"


def test_a_recipes_own_error_fails_at_once(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    settings = _settings(tmp_path, monkeypatch)
    engine = FlakyEngine([[*_steps("E: Unable to locate package nope"), FAILED], BUILT])
    with pytest.raises(EngineError, match="failed to build") as caught:
        images.build(engine, settings)  # type: ignore[arg-type]
    assert engine.builds == 1 and not calls.is_transient(caught.value)


def test_a_mirror_that_stays_down_fails_after_the_policys_attempts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = _settings(tmp_path, monkeypatch)
    down = [*_steps(APT_DNS), FAILED]
    engine = FlakyEngine([down] * calls.RETRY_ATTEMPTS)
    with pytest.raises(calls.TransientFailure) as caught:
        images.build(engine, settings)  # type: ignore[arg-type]
    assert engine.builds == calls.RETRY_ATTEMPTS
    assert caught.value.why is not None and caught.value.why.startswith(APT_DNS)


def test_a_step_line_a_run_step_prints_is_not_reported_out_of_order() -> None:
    seen: list[str] = []
    stream = BuildStream(io.StringIO(), StageImages(), on_step=lambda step, _: seen.append(step))
    stream.feed("Step 1/2 : RUN x\nStep 7/9 : fake\nStep 1/2 : again\nSTEP 2/2: RUN y\n")
    assert seen == ["1/2", "2/2"]


def test_a_bootstrap_the_mirror_failed_is_transient_and_a_real_failure_is_not() -> None:
    with pytest.raises(calls.TransientFailure, match="mmdebstrap failed"):
        run_host(["sh", "-c", f"echo \"{APT_DNS}\" >&2; echo 'E: apt-get update failed' >&2; "
                              "exit 1"], "mmdebstrap")
    with pytest.raises(Exception, match="mmdebstrap failed") as caught:
        run_host(["sh", "-c", "echo 'E: unknown suite bogus' >&2; exit 1"], "mmdebstrap")
    assert not calls.is_transient(caught.value)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_a_build_says_each_step_and_then_that_it_is_cached(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = _settings(tmp_path, monkeypatch)
    engine = FlakyEngine([BUILT])
    screen = Terminal()
    log.configure(stream=screen)
    try:
        images.build(engine, settings)  # type: ignore[arg-type]
        images.build(engine, settings)  # type: ignore[arg-type]
    finally:
        log.configure()
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in screen.getvalue().splitlines()]
    shown = [" ".join(line.split()[1:]) for line in lines]  # after the time stamp
    assert re.fullmatch(r"\[info \] build step elapsed_s=\d+\.\d image=tiny "
                        r"instruction='RUN apt-get update' step=3/3", shown[-3]), shown
    assert shown[-2].startswith("[info ] built image=tiny seconds=")
    assert shown[-1].startswith("[info ] cached image=tiny why=")
    assert engine.builds == 1


def test_a_failed_attempt_leaves_no_image_of_its_own_steps() -> None:
    """What the steps before the failing one committed is removed with the attempt (a retry
    would otherwise leave one such image per attempt); the FROM's base never is."""
    stages = StageImages()
    BuildStream(io.StringIO(), stages).feed(
        "Step 1/4 : ARG BASE\nStep 2/4 : FROM sha256:aa\n ---> eb51ccb06408\n"
        "Step 3/4 : COPY probe.sh /probe.sh\n ---> 1234567890ab\n"
        "Step 4/4 : RUN bash /probe.sh\n ---> Running in 0123456789ab\n")
    assert stages.left() == [] and stages.left(failed=True) == ["1234567890ab"]
    right_after_from = StageImages()
    BuildStream(io.StringIO(), right_after_from).feed(
        "Step 1/2 : FROM sha256:aa\n ---> eb51ccb06408\nStep 2/2 : RUN false\n")
    assert right_after_from.left(failed=True) == []

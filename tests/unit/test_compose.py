"""The committed compose file is exactly what `sandbench compose export demo` renders."""

from __future__ import annotations

from pathlib import Path

from orchestrator import compose
from orchestrator.sandbox_spec import Limits
from orchestrator.settings import Settings

REPO = Path(__file__).resolve().parents[2]


def test_every_committed_compose_file_is_up_to_date() -> None:
    settings = Settings(project_root=REPO, bench_root=REPO / "bench")
    files = sorted((REPO / "compose").glob("*.yml"))
    assert {f.stem for f in files} >= {"demo", "csharp", "csharp-held-out", "typescript-parity"}
    for file in files:
        assert file.read_text() == compose.render(settings, file.stem), \
            f"compose/{file.name} is out of date: run `sandbench compose export {file.stem}`"


def test_every_isolation_setting_of_a_run_is_in_the_file() -> None:
    text = (REPO / "compose" / "demo.yml").read_text()
    for line in ('network_mode: "none"', "read_only: true", 'cap_drop: ["ALL"]',
                 'security_opt: ["no-new-privileges:true"]', "privileged: false", "init: false",
                 f"pids_limit: {Limits().pids}", 'x-sandbench-cgroupns: "private"',
                 'driver: "none"', "disable: true"):
        assert line in text, line
    assert "docker.sock" not in text

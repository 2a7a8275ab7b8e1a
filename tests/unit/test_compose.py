"""The committed compose file is exactly what `sandbench compose export demo` renders, and
the rendering is the same bytes for the same services."""

from __future__ import annotations

from pathlib import Path

import yaml

from orchestrator.sandbox.spec import Limits
from orchestrator.settings import Settings
from orchestrator.exports import compose

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
    services = yaml.safe_load(text)["services"]
    assert services
    for name, service in services.items():
        expected = {"network_mode": "none", "read_only": True, "cap_drop": ["ALL"],
                    "security_opt": ["no-new-privileges:true"], "privileged": False,
                    "init": False, "pids_limit": Limits().pids, "ipc": "private",
                    "x-sandbench-cgroupns": "private", "logging": {"driver": "none"},
                    "healthcheck": {"disable": True}}
        assert {k: service.get(k) for k in expected} == expected, name
    assert "docker.sock" not in text


def test_the_yaml_is_the_same_bytes_whatever_the_order_the_keys_were_made_in() -> None:
    services = {"b": {"volumes": [{"target": "/x", "read_only": True}], "cpus": 2.0,
                      "image": "${SANDBENCH_IMAGE_B:?write it}", "labels": {"k": "true"}},
                "a": {"command": ["/h", "serve"], "environment": {"HOME": "/state/h"}}}
    reordered = {"a": dict(reversed(services["a"].items())),
                 "b": dict(reversed(services["b"].items()))}
    text = compose.block_yaml({"services": services})
    assert text == compose.block_yaml({"services": reordered})
    assert yaml.safe_load(text) == {"services": services}  # "true" stays a string, 2.0 a float
    assert text.startswith("services:\n  a:\n") and text.endswith("\n")

"""A hostile oracle against the real engine: an arm of kind `oracle` on the locked `probe` image
whose command writes a crafted SCIP index. Its project root climbs out of the corpus
(`file:///corpus/../../..`) and its documents name the orchestrator's `/proc/self/environ` and a
canary file on the host, each with an occurrence at every position of the first line (the
Rust lexer's name at each one would carry any identifier of the file into the truth). A second
oracle links a file of its own corpus copy to the host canary and indexes the link.

`sandbench truth build` runs as its own process with a canary in its environment (so that
`/proc/self/environ` holds it): it must refuse that oracle with one classified message, exit
2, write no truth file, and leave neither canary anywhere in the run directory."""

from __future__ import annotations

import base64
import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator import images
from orchestrator.engine import Engine
from orchestrator.settings import Settings, load_settings
from tests.integration.conftest import project_copy

pytestmark = pytest.mark.integration

TS_TASKS = ("references-format-money", "impact-cart")

# The oracle's command: python3 on the probe image builds the index field by field.
INDEX_SCRIPT = r'''
import os, sys
mode, host_file = sys.argv[1], sys.argv[2]
def varint(n):
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)
def field(number, payload):
    return varint(number << 3 | 2) + varint(len(payload)) + payload
def document(path, positions):
    occurrences = b"".join(field(2, field(1, varint(0) + varint(c) + varint(c + 1))
                                 + field(2, b"local 1")) for c in range(positions))
    return field(4, b"Rust") + field(1, path.encode()) + occurrences
if mode == "climb":
    root = "file:///corpus/" + "/".join([".."] * 16)
    documents = [document("proc/self/environ", 8192), document(host_file.lstrip("/"), 200)]
else:
    os.symlink(host_file, "/corpus/inventory/src/evil.rs")
    root = "file:///corpus"
    documents = [document("inventory/src/evil.rs", 200)]
tool = field(1, b"rust-analyzer") + field(2, b"hostile")
metadata = field(2, tool) + field(3, root.encode())
sys.stdout.buffer.write(field(1, metadata) + b"".join(field(2, d) for d in documents))
sys.stderr.write("indexed\n")
'''


def _oracle_arm(mode: str, host_file: Path) -> str:
    """An oracle arm whose command writes the crafted index (the script base64-encoded, so no
    brace in it reads as an argv placeholder)."""
    code = base64.b64encode(INDEX_SCRIPT.encode()).decode()
    run = f"import base64; exec(base64.b64decode('{code}'))"
    return (f'description = "hostile oracle: {mode}"\nkind = "oracle"\nimage = "probe"\n\n'
            f'[oracle]\nargv = ["python3", "-c", "{run}", "{mode}", "{host_file}", '
            '"{project}"]\n'
            'language = "rust"\nformat = "scip"\ntimeout_s = 120\n')


@pytest.fixture
def project(engine: Engine, tmp_path: Path) -> Settings:
    real = load_settings()
    images.build(engine, real, ["base", "probe"])
    return project_copy(real, tmp_path)


def _suite(settings: Settings, name: str, arm: str) -> None:
    """The demo suite's TypeScript tasks and a Rust oracle with edges: no task of the oracle's
    language, so the truth is its edges and the Rust sites, which read source."""
    folder = settings.suites_dir / name
    (folder / "tasks").mkdir(parents=True)
    text = (settings.suites_dir / "demo" / "suite.toml").read_text()
    (folder / "suite.toml").write_text(text.replace('name = "demo"', f'name = "{name}"')
                                       + f'\n[oracle]\narm = "{arm}"\nproject = "inventory"\n'
                                       'edges = true\n')
    (folder / "preregistration.md").write_text("A hostile oracle's truth.\n")
    for task in TS_TASKS:
        shutil.copy2(settings.suites_dir / "demo" / "tasks" / f"{task}.toml", folder / "tasks")


def _holding(root: Path, needles: list[bytes]) -> list[str]:
    """Regular files under `root` (links never followed) holding any needle, read in
    overlapping chunks (the run directory keeps the arm's file system images)."""
    found = []
    for directory, _, files in os.walk(root):
        for name in files:
            path = Path(directory) / name
            if path.is_symlink() or not path.is_file():
                continue
            tail = b""
            with path.open("rb") as fh:
                while chunk := fh.read(1 << 22):
                    if any(n in tail + chunk for n in needles):
                        found.append(str(path))
                        break
                    tail = chunk[-64:]
    return found


@pytest.mark.parametrize(("mode", "kind", "document"), [
    ("climb", "path-escape", None),
    ("copy-link", "not-at-pin", "inventory/src/evil.rs"),
])
def test_an_oracle_naming_host_files_is_refused_and_reads_none(
        project: Settings, tmp_path: Path, mode: str, kind: str, document: str | None) -> None:
    env_canary = f"envcanary_{secrets.token_hex(12)}"
    file_canary = f"filecanary_{secrets.token_hex(12)}"
    host_file = project.bench_root / "canary.rs"
    host_file.write_text(f"fn {file_canary}() {{}}\n")
    arm = f"oracle-{mode}"
    (project.arms_dir / f"{arm}.toml").write_text(_oracle_arm(mode, host_file))
    _suite(project, "hostile-oracle", arm)
    env = {"SANDBENCH_CANARY": env_canary, **{k: v for k, v in os.environ.items()
                                               if k not in ("SANDBENCH_ROOT", "SANDBENCH_CANARY")},
           "SANDBENCH_PROJECT": str(project.project_root)}
    result = subprocess.run([sys.executable, "-m", "orchestrator.cli", "truth", "build",
                             "hostile-oracle", "--bench-root", str(project.bench_root)],
                            env=env, capture_output=True, text=True, timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert f"the index of oracle '{arm}' is refused ({kind})" in output, output
    if document:
        assert f"document '{document}'" in output, output
    assert env_canary not in output and file_canary not in output
    # Nothing written under the suite, not even a temporary file.
    assert not (project.suites_dir / "hostile-oracle" / "truth").exists()
    (run_dir,) = project.runs_dir.glob("truth-hostile-oracle-*")
    cell = run_dir / "cells" / arm / "index"
    assert (cell / "record.json").is_file() and (cell / "stdout").stat().st_size > 1000
    assert _holding(run_dir, [env_canary.encode(), file_canary.encode()]) == []
    assert _holding(project.suites_dir, [env_canary.encode(), file_canary.encode()]) == []

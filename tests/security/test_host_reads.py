"""2. Reading the host: the orchestrator's environment (a canary variable), a canary file in
the bench root, the Docker socket, other arms' corpus copies and state, the pristine corpus."""

from __future__ import annotations

import ast
import os
import stat

import pytest

from tests.security.conftest import MainRun

pytestmark = pytest.mark.integration

# Out of reach: a host path is not mounted at all (ENOENT); the same path through
# /proc/1/root is refused earlier, at PID 1's proc entry (the PID 1 helper is non-dumpable).
DENIED = {"ENOENT", "EACCES"}
# PID 1 serves the resident executor; each cell's runner is a fork of it (no exec, so it
# shows PID 1's command line) that runs the tool.
SERVE = "/.sandbench/sandbench-exec serve"


def _files_holding(root: os.PathLike, needles: list[bytes]) -> tuple[int, list[str]]:
    """How many regular files lie under `root` (links never followed), and which of them
    hold any of `needles`, read in overlapping chunks."""
    overlap = max(len(n) for n in needles)
    count, holding = 0, []
    for directory, _, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            if not stat.S_ISREG(os.lstat(path).st_mode):
                continue
            count += 1
            tail = b""
            with open(path, "rb") as fh:
                while chunk := fh.read(1 << 22):
                    window = tail + chunk
                    if any(n in window for n in needles):
                        holding.append(path)
                        break
                    tail = window[-overlap:]
    return count, holding


def test_neither_canary_appears_in_any_byte_of_the_run(main_run: MainRun) -> None:
    """Transcripts, records, guard snapshots, state, logs and every arm's mounts."""
    world = main_run.world
    assert os.environ.get("SANDBENCH_CANARY") is None  # it was set for the run only
    count, leaks = _files_holding(main_run.run_dir, [world.canary_env.encode(),
                                                     world.canary_file.encode()])
    assert count > 100
    assert leaks == []
    # The hostile arm did look: its own environment and PID 1's, and a search for the file.
    tried = main_run.attempts("h-read", 0)
    assert "ATTACK_ARM=h-read" in tried["own environment"][1]
    assert "SANDBENCH_CANARY" not in tried["own environment"][1]
    assert main_run.attempts("h-read", 1)["find / -name canary.txt"][0] == "ABSENT"


def test_the_environment_is_exactly_the_declared_one_plus_the_images(main_run: MainRun) -> None:
    tried = main_run.attempts("h-read", 0)
    names = {item.split("=", 1)[0] for item in tried["own environment"][1].split()}
    assert names == {"ATTACK_ARM", "HOME", "HOSTNAME", "LANG", "PATH"}
    assert "HOME=/" in tried["own environment"][1].split()
    record = main_run.record("h-read", 0)
    # HOME=/ stands where neither the arm nor the image sets one: the engine gave the tool's
    # uid that HOME while it was the container's user, and would give PID 1's uid 0 /root.
    assert record.env == {"ATTACK_ARM": "h-read", "HOME": "/"}
    helpers = {k: v for k, v in tried.items() if k.startswith("read /proc/")
               and "sandbench-exec" in k}
    # The PID 1 helper and this cell's runner: both of another real uid than the tool's.
    assert len(helpers) == 2 and f"read /proc/1/environ ({SERVE})" in helpers, helpers
    assert {v[0] for v in helpers.values()} == {"EACCES"}
    assert tried["read /proc/1/environ"][0] == "EACCES"


def test_no_engine_socket_is_reachable(main_run: MainRun) -> None:
    tried = main_run.attempts("h-read", 0)
    sockets = {k: v for k, v in tried.items() if "sock" in k and k.startswith(("stat", "connect"))}
    assert len(sockets) == 10
    assert {v[0] for v in sockets.values()} == {"ENOENT"}
    assert tried["unix sockets listed"] == ("LIST", "0")
    # Only this sandbox's own processes are visible: the PID 1 helper as PID 1 (no init
    # wrapper), this cell's runner and the tool.
    visible = tried["processes visible"][1].split(" | ")
    assert len(visible) == 3, visible
    assert visible[0] == f"1:{SERVE}"
    assert visible[1].split(":", 1)[1] == SERVE
    assert visible[2].split(":", 1)[1].startswith("/usr/bin/python3 /usr/local/bin/attack read")
    assert "docker-init" not in tried["processes visible"][1]


def test_other_arms_state_and_the_pristine_corpus_are_out_of_reach(main_run: MainRun) -> None:
    tried = main_run.attempts("h-read", 1)
    paths = ast.literal_eval(tried["host paths worked out"][1])
    # Its mounts no longer say where it runs: each is the root of a file system of its own.
    assert paths["state_source"] == "/" and paths["run_dir_from_mounts"] == "", paths
    assert paths["run_dir"] == str(main_run.run_dir)  # told, so the paths below are real
    opened = {k: v for k, v in tried.items() if k.startswith("open ") and "/proc/" not in k[:20]
              and not k.startswith(("open /proc/k", "open /dev"))}
    targets = [k for k in opened if any(word in k for word in
               ("canary", "pristine", "rg corpus", "rg state", "rg cells", "run.json",
                "image lock"))]
    assert len(targets) == 16, targets
    for what in targets:
        assert opened[what][0] in DENIED, (what, opened[what])
        if not what.endswith("via /proc/1/root"):
            assert opened[what][0] == "ENOENT", (what, opened[what])  # never mounted
    assert tried["find / -name canary.txt"][0] == "ABSENT"
    assert tried["read /proc/kmsg"][0] != "OK" and tried["read /dev/mem"][0] != "OK"


def test_a_forged_file_handle_does_not_open_the_hosts_root(main_run: MainRun) -> None:
    tried = main_run.attempts("h-read", 2)
    for what in ("name_to_handle_at /corpus", "open_by_handle_at host root via /corpus",
                 "open_by_handle_at host root via /state"):
        assert tried[what][0] == "EPERM", (what, tried[what])

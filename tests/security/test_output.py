"""6. Output tricks: links in the state and output dirs pointing at host paths, odd file
names, a transcript of invalid UTF-8; and the same tricks against a resumed run and against
names that are not UTF-8."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest

from orchestrator.sandbox import workfs
from orchestrator.errors import SandbenchError
from orchestrator.run import pool, runner
from orchestrator.run.options import RunOptions
from tests.security.conftest import MAIN_REFUSED, TASKS, MainRun, World, stream_bytes

pytestmark = pytest.mark.integration

PLANTED_FILES = {".attack-phase", "plain.txt", "hl-plain", "new\nline.txt", "tab\tname.txt",
                 "-rf", "back\\slash", 'quote"d', " ", "..."}


def test_links_in_state_and_out_are_never_followed(main_run: MainRun) -> None:
    tried = main_run.attempts("h-out", 0)
    planted = [k for k in tried if k.startswith(("symlink /state/", "symlink /out/"))]
    assert len(planted) == 18 and all(tried[k][0] == "OK" for k in planted)
    state = main_run.state("h-out")
    names = {path for path, _ in state["state_files"]}
    # Only the regular files the arm wrote: nothing reached through host-bench/, host-root/
    # or host-cells/, no bytes of the 5 MiB decoy, the FIFO behind host-fifo never opened
    # (the run finished).
    assert names == PLANTED_FILES
    assert state["state_bytes"] < 4096
    assert main_run.meta["status"] == "refused-arms"
    assert {a for a, i in main_run.meta["arms"].items() if i.get("refused")} == MAIN_REFUSED
    world = main_run.world
    assert (world.bench / "canary.txt").read_text() == world.canary_file + "\n"
    assert hashlib.sha256((world.bench / "decoy.bin").read_bytes()).hexdigest() == \
        world.decoy_sha256
    assert stat.S_ISFIFO(os.lstat(world.bench / "trap.fifo").st_mode)
    # The links are still there in the arm's own file systems, as links.
    with main_run.files("h-out") as work:
        for base in ("state", "out"):
            assert os.readlink(work / base / "host-bench") == str(world.bench)
            assert os.readlink(work / base / "loop") == "loop"


def test_hard_links_to_host_paths_cannot_be_made(main_run: MainRun) -> None:
    tried = main_run.attempts("h-out", 0)
    for what in ("hardlink /etc/passwd to /state/hl-passwd",
                 "hardlink /corpus/README.md to /state/hl-readme",
                 "hardlink /etc/passwd to /out/hl-passwd",
                 "hardlink /out/plain.txt to /state/hl-out"):
        assert tried[what][0] == "EXDEV", (what, tried[what])
    # Inside one mount a hard link is just a second name of the arm's own file.
    assert tried["hardlink /state/plain.txt to /state/hl-plain"][0] == "OK"
    with main_run.files("h-out") as work:
        state = work / "state"
        assert os.stat(state / "plain.txt").st_ino == os.stat(state / "hl-plain").st_ino


def test_corpus_copy_links_and_odd_names_are_listed_not_followed(main_run: MainRun) -> None:
    changes = {c["path"]: c for c in main_run.state("h-out")["corpus_changes"]}
    assert changes["host-canary"]["kind"] == "symlink" and changes["host-canary"]["status"] == \
        "added"
    assert changes["inventory"]["kind"] == "symlink"  # a directory replaced by a link
    assert "new\nline.rs" in changes
    assert not any(p.startswith(("inventory/", "host-canary/")) and changes[p]["status"] ==
                   "added" for p in changes)
    assert sum(c["size_after"] for c in changes.values() if c["kind"] == "file") < 1 << 20


def test_an_invalid_utf8_transcript_is_kept_byte_for_byte(main_run: MainRun) -> None:
    record = main_run.record("h-out", 1)
    cell = main_run.cell("h-out", 1)
    stdout, stderr = stream_bytes(b"stdout", 300_000), stream_bytes(b"stderr", 100_000)
    with pytest.raises(UnicodeDecodeError):
        stdout.decode("utf-8")
    assert (cell / "stdout").read_bytes() == stdout
    assert (cell / "stderr").read_bytes() == stderr
    assert record.stdout.sha256 == hashlib.sha256(stdout).hexdigest()
    assert record.stderr.sha256 == hashlib.sha256(stderr).hexdigest()
    assert record.outcome == "ok" and not record.stdout.truncated


def _rg_cells_ok(run_dir: Path) -> None:
    records = sorted((run_dir / "cells" / "rg").glob("*/*/record.json"))
    assert len(records) == 2
    assert {json.loads(p.read_text())["outcome"] for p in records} == {"ok"}


# b"bad-\xff\xfe.txt" and b"latin1-caf\xe9.txt" as state.json records them.
NON_UTF8 = {"bad-\\xff\\xfe.txt", "latin1-caf\\xe9.txt"}


def test_non_utf8_file_names_are_collected_and_the_run_goes_on(world: World) -> None:
    """Each undecodable byte is kept as a \\xNN escape (backslashreplace), in the state list
    and in the corpus changes; the run completes and the next arm runs."""
    run_dir = runner.run(world.settings, RunOptions("names"), [pool.one(world.engine)])
    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"
    raw = (run_dir / "arms" / "h-names" / "state.json").read_bytes()
    raw.decode("utf-8")  # valid UTF-8 (and JSON) throughout
    state = json.loads(raw)
    assert state["state_files"] == sorted([[".attack-phase", 1],
                                           *([name, 14] for name in NON_UTF8)])
    assert {(c["path"], c["status"], c["kind"], c["size_after"])
            for c in state["corpus_changes"]} == {(n, "added", "file", 14) for n in NON_UTF8}
    # In the arm's file systems the files keep their real bytes.
    with workfs.opened(run_dir / "work" / "h-names") as work:
        for sub in ("state", "corpus"):
            names = set(os.listdir(os.fsencode(work / sub)))
            assert {b"bad-\xff\xfe.txt", b"latin1-caf\xe9.txt"} <= names, (sub, names)
    _rg_cells_ok(run_dir)


class _Interrupt(Exception):
    """Stands for a run stopped right after an arm's set-up (Ctrl-C, a lost engine)."""


def test_a_resume_never_follows_a_link_planted_in_the_state_dir(world: World) -> None:
    """As root the resume would chown through the link; the refusal comes first, for any
    uid."""
    victim = world.bench / "victim"
    owners = {p: p.stat().st_uid for p in [victim / "secret.txt", victim / "sub",
                                           victim / "sub" / "inner.txt"]}
    assert set(owners.values()) == {os.getuid()}

    def stop_after_setup(arm: str, cell: str, outcome: str) -> None:
        if arm == "h-resume" and cell == "_setup":
            raise _Interrupt

    with pytest.raises(_Interrupt):
        runner.run(world.settings, RunOptions("resume"), [pool.one(world.engine)],
                   progress=stop_after_setup)
    (run_dir,) = world.settings.runs_dir.glob("run-resume-*")
    setup = json.loads((run_dir / "cells" / "h-resume" / "_setup" / "record.json").read_text())
    assert setup["outcome"] == "ok", setup
    link = run_dir / "work" / "h-resume" / "state" / "home"
    with workfs.opened(link.parents[1]):
        assert os.readlink(link) == str(victim)
    # The resume refuses the arm's work dir (fail closed: "start a new run") before it
    # creates a sandbox, chowns nothing, and leaves the link as the arm made it.
    with pytest.raises(SandbenchError) as refused:
        runner.run(world.settings, RunOptions("resume", resume=run_dir), [pool.one(world.engine)])
    assert refused.value.data["path"] == str(link)
    assert "is a symbolic link" in refused.value.what and "new run" in refused.value.fix
    assert {p: p.stat().st_uid for p in owners} == owners
    with workfs.opened(link.parents[1]):
        assert os.readlink(link) == str(victim)
    assert json.loads((run_dir / "run.json").read_text())["status"] == "failed"
    assert not (run_dir / "cells" / "h-resume" / TASKS[1]).exists()  # no cell ran


"""`sandbench corpus` end to end: exit codes, messages, JSON-only stdout, nothing written on
bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator import corpus
from orchestrator.cli import app

ROOT = Path(__file__).resolve().parents[2]
DEMO_SHA = corpus.load_lock(ROOT / "corpus.lock")["demo"].sha
assert DEMO_SHA is not None


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    return tmp_path / "bench"


def run(*args: str):
    return CliRunner().invoke(app, ["corpus", *args], catch_exceptions=False)


def test_fetch_ls_verify_the_demo_corpus(bench: Path) -> None:
    fetched = run("fetch", "demo", "--bench-root", str(bench))
    assert fetched.exit_code == 0, fetched.output
    assert f"fetched demo @ {DEMO_SHA}: 44 tracked files" in fetched.stdout
    assert (bench / "corpora" / "demo" / ".git").is_dir()

    listed = run("ls", "--bench-root", str(bench))
    assert listed.exit_code == 0
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["ID", "PIN", "STATUS", "FETCHED", "FILES"]
    assert any(line.split() == ["demo", DEMO_SHA[:12], "registered", "fetched", "44"]
               for line in lines)
    assert any(line.split()[:4] == ["csharp", "855cf1752c94", "registered", "absent"]
               for line in lines)

    verified = run("verify", "demo", "--bench-root", str(bench))
    assert verified.exit_code == 0
    assert verified.stdout.startswith(f"ok: demo @ {DEMO_SHA}")


def test_json_output_is_only_json(bench: Path) -> None:
    fetched = run("fetch", "demo", "--bench-root", str(bench), "--json")
    assert fetched.exit_code == 0
    assert json.loads(fetched.stdout)["sha"] == DEMO_SHA
    assert "corpus.fetched" in fetched.stderr
    rows = json.loads(run("ls", "--bench-root", str(bench), "--json").stdout)
    assert {r["id"]: r["fetched"] for r in rows}["demo"] == "fetched"
    record = json.loads(run("verify", "demo", "--bench-root", str(bench), "--json").stdout)
    assert record["tracked_files"] == 44


def test_verify_fails_loudly_on_a_tampered_pristine(bench: Path) -> None:
    run("fetch", "demo", "--bench-root", str(bench))
    target = bench / "corpora" / "demo" / "inventory" / "src" / "stock.rs"
    target.write_bytes(target.read_bytes().replace(b"self.on_hand - self.reserved",
                                                   b"self.on_hand + self.reserved"))
    result = run("verify", "demo", "--bench-root", str(bench), "--json")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "error: pristine copy of 'demo'" in result.stderr
    assert "worktree: expected clean" in result.stderr and "tree digest" in result.stderr
    assert "sandbench corpus fetch demo --force" in result.stderr
    assert "Traceback" not in result.output


def test_an_existing_destination_exits_2_and_force_replaces_it(bench: Path) -> None:
    run("fetch", "demo", "--bench-root", str(bench))
    again = run("fetch", "demo", "--bench-root", str(bench))
    assert again.exit_code == 2
    assert "already fetched" in again.stderr and "--force" in again.stderr
    forced = run("fetch", "demo", "--bench-root", str(bench), "--force")
    assert forced.exit_code == 0, forced.output
    assert "corpus.replacing" in forced.stderr


@pytest.mark.parametrize("args, message", [
    (["fetch", "nope"], "no corpus 'nope'"),
    (["verify", "nope"], "no corpus 'nope'"),
    (["fetch", "demo", "--from", "/nonexistent/source.bundle"], "no such file or directory"),
])
def test_bad_arguments_exit_2_and_write_nothing(bench: Path, args: list[str],
                                                message: str) -> None:
    result = run(*args, "--bench-root", str(bench))
    assert result.exit_code == 2
    assert message in result.stderr
    assert not (bench / "corpora" / "demo").exists()


def test_a_bad_lock_exits_2_names_file_table_key_and_writes_nothing(tmp_path: Path,
                                                                    bench: Path) -> None:
    text = (ROOT / "corpus.lock").read_text().replace(f'sha = "{DEMO_SHA}"', 'sha = "fdafffcc"')
    lock = tmp_path / "corpus.lock"
    lock.write_text(text)
    for args in (["fetch", "demo"], ["ls"], ["verify", "demo"]):
        result = run(*args, "--lock", str(lock), "--bench-root", str(bench))
        assert result.exit_code == 2, args
        assert f"{lock}:" in result.stderr and "demo.sha: expected a full commit sha" \
            in result.stderr
    assert not bench.exists()


def test_a_proposed_corpus_exits_2(tmp_path: Path, bench: Path) -> None:
    lock = tmp_path / "corpus.lock"
    lock.write_text('version = 1\n\n[later]\nid = "later"\nrepo = "acme/later"\n'
                    'url = "https://example.invalid/acme/later.git"\nlicense = "MIT"\n'
                    'kind = "target"\nstatus = "proposed"\nnote = ""\n')
    result = run("fetch", "later", "--lock", str(lock), "--bench-root", str(bench))
    assert result.exit_code == 2
    assert "'later' is proposed, not pinned" in result.stderr
    listed = run("ls", "--lock", str(lock), "--bench-root", str(bench))
    assert ["later", "-", "proposed", "absent"] in [line.split() for line in
                                                    listed.stdout.splitlines()]
    assert not bench.exists()

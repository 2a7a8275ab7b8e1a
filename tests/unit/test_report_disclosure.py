"""The environment disclosure block: the methodology's template, filled from run.json, with
absolute paths rewritten relative to the bench root and the host named only by architecture,
cores and memory."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from test_score_fixtures import RUN_ID, Arm, RunBuilder

from orchestrator.report.markdown import disclosure as block
from orchestrator import suite
from orchestrator.score import compute
from orchestrator.score.scorer import truth_made_by
from orchestrator.score.environment import bench_roots, disclosure, rewrite_paths

ROOTS = ["/srv/work/main/bench"]
TEMPLATE_LABELS = ["Date", "Corpus", "Tool version", "Build", "Host", "Baseline", "Bench root",
                   "Isolation", "Network", "Reps", "Deviations"]


def test_bench_paths_become_bench_relative() -> None:
    text = "copy at /srv/work/main/bench/runs/r1/work/rg/corpus failed"
    assert rewrite_paths(text, ROOTS) == "copy at bench/runs/r1/work/rg/corpus failed"
    assert rewrite_paths("root /srv/work/main/bench.", ROOTS) == "root bench."


def test_a_longer_name_is_not_the_bench_root() -> None:
    out = rewrite_paths("/srv/work/main/benchmarks/x.txt", ROOTS)
    assert out == "<outside bench>/x.txt"


def test_host_paths_outside_the_bench_keep_only_their_name() -> None:
    text = "binary /home/alice/devscout/target/release/devscout (sha 12)"
    assert rewrite_paths(text, ROOTS) == "binary <outside bench>/devscout (sha 12)"


def test_container_paths_and_urls_stay() -> None:
    text = "mount /corpus and /state/home; see https://ast-grep.github.io/a/b.html"
    assert rewrite_paths(text, ROOTS) == text


def test_the_bench_root_is_found_in_the_run_itself() -> None:
    run = {"run_id": "r1", "deviations": ["left /data/b/runs/r1/work/x behind"]}
    assert bench_roots(run) == ["/data/b"]
    run["bench_root"] = "/elsewhere/bench/"
    assert bench_roots(run) == ["/elsewhere/bench", "/data/b"]


def test_the_bench_root_is_found_from_where_the_run_dir_sits(tmp_path: Path) -> None:
    run_dir = tmp_path / "bench" / "runs" / "r1"
    run_dir.mkdir(parents=True)
    assert bench_roots({"run_id": "r1"}, run_dir) == [str((tmp_path / "bench").resolve())]


def test_the_block_follows_the_template_exactly(tmp_path: Path) -> None:
    b = RunBuilder(tmp_path, arms=[Arm("rg", tool_version="ripgrep 13.0.0"),
                                   Arm("devscout", unavailable="no binary")],
                   deviations=[f"arm devscout not run: see {tmp_path}/bench/runs/{RUN_ID}/x "
                               "and /home/alice/bin/devscout"],
                   tool_under_test="devscout").build()
    scores, _ = compute(b.run_dir, b.suite_dir)
    text = block(scores["environment"])
    lines = text.splitlines()
    assert lines[0] == "```text" and lines[-1] == "```"
    labels = [line for line in lines[1:-1] if not line.startswith(" ")]
    assert [next(lab for lab in TEMPLATE_LABELS if line.startswith(lab + " "))
            for line in labels] == TEMPLATE_LABELS
    env = scores["environment"]
    assert env["date"] == "2026-01-01"
    assert env["tool_version"] == "devscout n/a" and env["build"] == "n/a"
    assert env["host"] == "x86_64 host, idleness not recorded; 2 cores, 8.0 GiB RAM"
    assert env["baseline"] == "ripgrep 13.0.0"
    assert env["reps"] == "3 per cell (1 cold + 2 warm)"
    assert env["corpus"].startswith("example/mini @ ") and "(5 indexed files at the pin)" in \
        env["corpus"]
    assert env["deviations"][0] == (f"arm devscout not run: see bench/runs/{RUN_ID}/x and "
                                    "<outside bench>/devscout")
    assert ("the tool under test, arm devscout, was not measured (unavailable): Tool version, "
            "Build and Isolation are n/a") in env["deviations"]
    assert str(tmp_path) not in text and "Linux" not in text


def _measured_run(arms: dict) -> dict:
    return {"run_id": "r", "date": "2026-01-01", "deviations": [], "suite": {"reps": 3},
            "corpus": {"repo": "o/r", "sha": "a" * 40, "tracked_files": 9},
            "host": {"arch": "aarch64", "cores": 8, "memory_bytes": 16 << 30},
            "arms": {"rg": {"tool_version": "ripgrep 14.1.0"}, **arms}}


def test_a_measured_tool_under_test_fills_its_lines_from_its_own_records() -> None:
    """Version, build and isolation come from the arm's run.json record and its declared
    environment: a supplied binary is named with its digest, every variable pointing under
    /state is listed."""
    run = _measured_run({"devscout": {
        "tool_version": "devscout 0.9.0", "image": "devscout", "image_id": "sha256:" + "c" * 64,
        "artifact": {"name": "devscout", "path": "/x/devscout", "sha256": "b" * 64},
        "spec": {"env": {"HOME": "/state/home", "SCOUT_REGISTRY": "/state/repos.json",
                         "SCOUT_CONTENT_DB": "/state/content.db", "LANG": "C.UTF-8"}}}})
    env = disclosure(run, "rg", {"rg": "available", "devscout": "available"},
                     {"rg": True, "devscout": True}, [], [], tool_under_test="devscout")
    assert env["tool_version"] == "devscout 0.9.0"
    assert env["build"] == ("image devscout (sha256:cccccccccccc) from the pinned recipe "
                            "images/devscout/, its devscout binary supplied prebuilt (sha256 "
                            "bbbbbbbbbbbb)")
    assert env["isolation"] == ("HOME, SCOUT_REGISTRY and SCOUT_CONTENT_DB redirected under "
                                "bench/runs/r/work/devscout/state/")
    assert env["baseline"] == "ripgrep 14.1.0"
    assert env["network"] == "setup only; offline for every measured invocation"
    assert env["host"].startswith("aarch64 ") and "16.0 GiB" in env["host"]
    assert any("supplied prebuilt (sha256 bbbbbbbbbbbb)" in d for d in env["deviations"])


def test_a_suite_without_devscout_discloses_its_own_tool_and_never_devscout() -> None:
    run = _measured_run({"serena": {
        "tool_version": "serena 2.1.0", "image": "serena", "image_id": "sha256:" + "d" * 64,
        "artifact": None, "spec": {"env": {"SERENA_USAGE_REPORTING": "false"}}}})
    env = disclosure(run, "rg", {"rg": "available", "serena": "available"},
                     {"rg": True, "serena": True}, [], [], tool_under_test="serena")
    assert env["tool_version"] == "serena 2.1.0"
    assert env["build"] == ("image serena (sha256:dddddddddddd) from the pinned recipe "
                            "images/serena/")
    assert env["isolation"] == ("its state under bench/runs/r/work/serena/state/ (mounted at "
                                "/state); its environment names no path there")
    assert "devscout" not in str(env) and env["baseline"] == "ripgrep 14.1.0"


def test_a_suite_naming_no_tool_under_test_says_so() -> None:
    run = _measured_run({})
    env = disclosure(run, "rg", {"rg": "available"}, {"rg": True}, [], [],
                     tool_under_test=None)
    assert (env["tool_version"], env["build"], env["isolation"]) == ("n/a", "n/a", "n/a")
    assert ("the suite names no tool under test (tool_under_test in its suite.toml): Tool "
            "version, Build and Isolation are n/a") in env["deviations"]


def test_the_corpus_line_states_the_rule_and_rules_version_that_made_the_truth() -> None:
    """A suite's truth made by a declared rule names it and the rules' version; a suite made
    before versions says it records none; a suite whose truth no rule made says nothing."""
    the_suite = suite.load_suite(Path(__file__).resolve().parents[2] / "suites",
                                 "csharp-published-rg")
    run = _measured_run({})
    versioned = dataclasses.replace(the_suite, truth_rule_version=2)
    lines = {}
    for name, made_by in (("versioned", versioned), ("unversioned", the_suite),
                          ("by hand", dataclasses.replace(the_suite, truth_rule=None))):
        lines[name] = disclosure(run, "rg", {"rg": "available"}, {"rg": True}, [], [],
                                 tool_under_test=None, truth=truth_made_by(made_by))["corpus"]
    assert lines["versioned"].endswith("at the pin); truth by rule "
                                       "text-v1-declaring-admissible, truth rules version 2")
    assert lines["unversioned"].endswith("truth rules version not recorded (the suite "
                                         "predates versions: version 1)")
    assert lines["by hand"].endswith("indexed files at the pin)")


def test_an_unverified_guard_is_a_deviation() -> None:
    run = {"run_id": "r", "date": "2026-01-01", "deviations": [], "suite": {"reps": 1},
           "corpus": {"repo": "o/r", "sha": "a", "tracked_files": 1},
           "host": {"arch": "x86_64", "cores": 1, "memory_bytes": 1 << 30},
           "arms": {"rg": {"tool_version": "ripgrep 13.0.0"}}}
    env = disclosure(run, "rg", {"rg": "available"}, {"rg": None}, [], [], tool_under_test=None)
    assert env["network"] == "n/a"
    assert any("no stored passing guard verdict for: rg" in d for d in env["deviations"])


def _engines_run(engines: dict) -> dict:
    return {"run_id": "r", "date": "2026-01-01", "deviations": [], "suite": {"reps": 1},
            "corpus": {"repo": "o/r", "sha": "a", "tracked_files": 1},
            "host": {"arch": "x86_64", "cores": 2, "memory_bytes": 8 << 30},
            "engines": engines,
            "arms": {"rg": {"tool_version": "ripgrep 13.0.0", "engine": "engine-a"},
                     "ast-grep": {"tool_version": "ast-grep 0.51.1", "engine": "engine-b"}}}


def test_a_run_over_several_engines_lists_every_host_and_where_each_arm_ran() -> None:
    facts = {"version": "20.10.24", "arch": "x86_64", "cores": 2, "memory_bytes": 8 << 30,
             "on_this_host": True}
    run = _engines_run({"engine-a": facts, "engine-b": {**facts, "arch": "aarch64",
                                                        "cores": 4}})
    env = disclosure(run, "rg", {"rg": "available", "ast-grep": "available"},
                     {"rg": True, "ast-grep": True}, [], [], tool_under_test="ast-grep")
    assert env["host"] == (
        "x86_64 host, idleness not recorded; 2 cores, 8.0 GiB RAM; engines: engine-a (Docker "
        "20.10.24, x86_64, 2 cores, 8.0 GiB RAM, this host); engine-b (Docker 20.10.24, "
        "aarch64, 4 cores, 8.0 GiB RAM, this host)")
    assert ("the arms ran on 2 Docker engines, each arm's container on one: rg on engine-a; "
            "ast-grep on engine-b") in env["deviations"]


def test_a_one_engine_run_discloses_its_host_as_before() -> None:
    run = _engines_run({"engine-a": {"version": "1", "arch": "x86_64", "cores": 2,
                                     "memory_bytes": 8 << 30}})
    env = disclosure(run, "rg", {"rg": "available", "ast-grep": "available"},
                     {"rg": True, "ast-grep": True}, [], [], tool_under_test="ast-grep")
    assert env["host"] == "x86_64 host, idleness not recorded; 2 cores, 8.0 GiB RAM"
    assert not any("Docker engines" in d for d in env["deviations"])


def test_a_scored_suite_without_devscout_opens_with_its_own_tool(tmp_path: Path) -> None:
    """Scored end to end: the block's first tool lines are the declared tool under test's,
    from its own run record and environment; devscout is named nowhere in the block."""
    b = RunBuilder(tmp_path, arms=[Arm("rg", tool_version="ripgrep 13.0.0"),
                                   Arm("peer", tool_version="peer 1.2.3")],
                   tool_under_test="peer").build()
    scores, _ = compute(b.run_dir, b.suite_dir)
    text = block(scores["environment"])
    assert "devscout" not in text and scores["suite"]["tool_under_test"] == "peer"
    assert "Tool version peer 1.2.3" in text.splitlines()
    assert f"Isolation HOME redirected under bench/runs/{RUN_ID}/work/peer/state/" in text

"""The whole scorer on hand-made run directories: how every kind of cell is counted, the
written file, the self-check, and bad input (a clear error naming the file, nothing written)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_score_fixtures import Arm, Cell, RunBuilder, rg_rows

from orchestrator.errors import InputError
from orchestrator.line_index import PIN_LINES
from orchestrator.report.scores import problems
from orchestrator.score import SelfCheckFailed, compute, score_run

GOOD_REFS = rg_rows("src/a.cs:2:Money m;", "src/b.cs:2:Money m;", "src/d.cs:1:Money")


def cell(scores: dict, arm: str, task: str) -> dict:
    return next(c for c in scores["cells"] if c["arm"] == arm and c["task"] == task)


@pytest.fixture
def built(tmp_path: Path) -> RunBuilder:
    b = RunBuilder(tmp_path, arms=[
        Arm("rg", tool_version="ripgrep 13.0.0"),
        Arm("peer", kinds=("references", "impact", "locate"), setup_wall_ns=3_000_000_000,
            state_bytes=2048),
        Arm("devscout", unavailable="no devscout binary was supplied"),
        Arm("walled", refused="network_mode: expected none, found bridge"),
    ])
    b.cells[("rg", "ref-money")] = Cell(GOOD_REFS)
    b.cells[("rg", "loc-a")] = Cell(rg_rows("src/a.cs:1:class A"))
    b.cells[("rg", "imp-a")] = Cell(b"", outcome="timeout", walls=(60_000_000_000,) * 3)
    b.cells[("rg", "e2e-a")] = Cell(b"", outcome="sandbox-unavailable", walls=(None,) * 3)
    b.cells[("peer", "ref-money")] = Cell(rg_rows("src/a.cs:2:Money m;", "src/b.cs:2:"))
    b.cells[("peer", "imp-a")] = Cell(b"not rg output\n")
    b.cells[("peer", "loc-a")] = Cell(rg_rows("src/c.cs:1:class C"), warm_outcomes=("ok", "oom"))
    return b.build()


def test_every_kind_of_cell_is_counted_where_it_belongs(built: RunBuilder) -> None:
    scores, _ = compute(built.run_dir, built.suite_dir)
    assert cell(scores, "rg", "ref-money")["verdict"] == "correct"
    timeout = cell(scores, "rg", "imp-a")
    assert timeout["verdict"] == "wrong" and timeout["failure"] == "timeout"
    assert timeout["grade"]["recall"] == 0.0
    lost = cell(scores, "rg", "e2e-a")
    assert lost["verdict"] == "unscored" and lost["unscored"]["kind"] == "sandbox-unavailable"
    parse = cell(scores, "peer", "imp-a")
    assert parse["verdict"] == "wrong" and parse["failure"] == "parse-error"
    assert "not path:line:text" in parse["parse_error"]
    skipped = cell(scores, "peer", "e2e-a")
    assert skipped["verdict"] == "not_attempted"
    assert skipped["not_attempted"] == {"reason": "peer cannot e2e-retrieval",
                                        "source": "peer --help"}
    assert cell(scores, "devscout", "loc-a")["unscored"]["kind"] == "arm-unavailable"
    assert cell(scores, "walled", "loc-a")["unscored"]["kind"] == "guard-violation"
    rg_all = scores["summary"]["rg"]["all"]
    assert rg_all["counts"] == {"correct": 2, "partial": 0, "wrong": 1, "not_attempted": 0,
                                "unscored": 1}
    assert rg_all["graded"] == 3 and rg_all["failures"] == {"timeout": 1}
    assert rg_all["correct_share"] == pytest.approx(2 / 3, abs=1e-6)
    peer_all = scores["summary"]["peer"]["all"]
    assert peer_all["counts"]["not_attempted"] == 1 and peer_all["graded"] == 3


def test_reach_cost_calls_and_flags(built: RunBuilder) -> None:
    scores, index = compute(built.run_dir, built.suite_dir)
    assert index.available and index.source == PIN_LINES
    assert cell(scores, "rg", "ref-money")["reach"]["status"] == "reaches"
    bare = cell(scores, "peer", "ref-money")
    assert bare["reach"]["status"] == "fails"
    assert bare["reach"]["problems"] == {"no reason": 1}
    assert scores["summary"]["peer"]["references"]["reach"]["row_problems"] == {"no reason": 1}
    assert cell(scores, "rg", "ref-money")["cost"] == {"stdout_bytes": len(GOOD_REFS),
                                                       "tokens": -(-len(GOOD_REFS) // 4),
                                                       "truncated": False}
    assert cell(scores, "rg", "ref-money")["calls"] == 1
    assert cell(scores, "peer", "loc-a")["flags"] == ["warm-failures"]
    assert cell(scores, "rg", "ref-money")["argv"] == ["rg-references", "Money"]


def test_setup_and_break_even(built: RunBuilder) -> None:
    scores, _ = compute(built.run_dir, built.suite_dir)
    peer = scores["setup"]["peer"]
    assert peer["index"]["seconds"] == 3.0 and peer["on_disk_bytes"] == 2048
    assert peer["break_even"]["kind"] == "never"  # 3 s more set-up, no warm saving
    assert scores["setup"]["rg"]["break_even"] is None
    assert scores["setup"]["devscout"] is None


def test_the_written_scores_match_the_schema_and_hold_no_absolute_path(
        built: RunBuilder) -> None:
    scores = score_run(built.run_dir, built.suite_dir)
    text = (built.run_dir / "scores.json").read_text()
    assert problems(json.loads(text)) == []
    assert str(built.root) not in text and "/tmp/" not in text
    assert json.loads(text) == json.loads(json.dumps(scores))


def test_scoring_again_writes_the_same_bytes(built: RunBuilder) -> None:
    score_run(built.run_dir, built.suite_dir)
    first = (built.run_dir / "scores.json").read_bytes()
    score_run(built.run_dir, built.suite_dir)
    assert (built.run_dir / "scores.json").read_bytes() == first


def test_the_run_scores_from_its_pin_lines_alone(built: RunBuilder) -> None:
    """The scorer reads RUN_DIR/pin-lines.json and nothing of an arm's copy: a copy left in
    work/ (its .git the arm's own) changes nothing."""
    score_run(built.run_dir, built.suite_dir)
    first = (built.run_dir / "scores.json").read_bytes()
    pin_lines = (built.run_dir / PIN_LINES).read_bytes()
    copy = built.run_dir / "work" / "rg" / "corpus"
    copy.mkdir(parents=True)
    (copy / "src").mkdir()
    (copy / "src" / "Money.cs").write_text("\n" * 10_000)
    score_run(built.run_dir, built.suite_dir)
    assert (built.run_dir / "scores.json").read_bytes() == first
    assert (built.run_dir / PIN_LINES).read_bytes() == pin_lines


def test_the_self_check_names_every_grade_it_does_not_reproduce(built: RunBuilder) -> None:
    score_run(built.run_dir, built.suite_dir)
    path = built.run_dir / "scores.json"
    data = json.loads(path.read_text())
    for c in data["cells"]:
        if (c["arm"], c["task"]) == ("rg", "ref-money"):
            c["verdict"] = "partial"
            c["grade"]["recall"] = 0.5
    tampered = json.dumps(data)
    path.write_text(tampered)
    with pytest.raises(SelfCheckFailed) as err:
        score_run(built.run_dir, built.suite_dir)
    assert err.value.differences == ["rg/ref-money: verdict partial -> correct",
                                     "rg/ref-money: recall 0.5 -> 1.0"]
    assert err.value.exit_code == 1
    assert path.read_text() == tampered
    score_run(built.run_dir, built.suite_dir, update=True)
    assert "partial" not in json.dumps(cell(json.loads(path.read_text()), "rg", "ref-money"))


def test_a_changed_scorer_is_disclosed(tmp_path: Path) -> None:
    b = RunBuilder(tmp_path, sealed_overrides={"orchestrator/score/cost.py": "0" * 64}).build()
    scores, _ = compute(b.run_dir, b.suite_dir)
    assert scores["manifest"]["scorer_changed"] == ["orchestrator/score/cost.py"]
    row = next(r for r in scores["manifest"]["inputs"] if r["file"].endswith("cost.py"))
    assert row["status"] == "differs"
    assert any("orchestrator/score/cost.py" in d for d in scores["environment"]["deviations"])


# -- bad input --------------------------------------------------------------------------------

def _nothing_written(b: RunBuilder) -> None:
    assert not (b.run_dir / "scores.json").exists()


def test_a_missing_record_is_named(built: RunBuilder) -> None:
    record = built.run_dir / "cells" / "rg" / "loc-a" / "2" / "record.json"
    record.unlink()
    with pytest.raises(InputError, match="record.json is missing") as err:
        score_run(built.run_dir, built.suite_dir)
    assert err.value.data["file"] == str(record) and err.value.exit_code == 2
    _nothing_written(built)


def test_a_corrupt_record_is_named(built: RunBuilder) -> None:
    record = built.run_dir / "cells" / "peer" / "imp-a" / "0" / "record.json"
    record.write_text('{"schema": ')
    with pytest.raises(InputError, match="does not parse") as err:
        score_run(built.run_dir, built.suite_dir)
    assert err.value.data["file"] == str(record)
    _nothing_written(built)


def test_a_record_of_another_run_is_refused(built: RunBuilder) -> None:
    record = built.run_dir / "cells" / "rg" / "loc-a" / "0" / "record.json"
    record.write_text(record.read_text().replace("run-mini-2026", "run-else-2026"))
    with pytest.raises(InputError, match="run_id"):
        score_run(built.run_dir, built.suite_dir)
    _nothing_written(built)


def test_an_altered_stdout_is_named(built: RunBuilder) -> None:
    stdout = built.run_dir / "cells" / "rg" / "ref-money" / "0" / "stdout"
    stdout.write_bytes(GOOD_REFS.replace(b"src/d.cs", b"src/c.cs"))
    with pytest.raises(InputError, match="sha256") as err:
        score_run(built.run_dir, built.suite_dir)
    assert err.value.data["file"] == str(stdout)
    _nothing_written(built)


def test_a_corrupt_or_missing_run_json_is_named(built: RunBuilder) -> None:
    run_json = built.run_dir / "run.json"
    data = json.loads(run_json.read_text())
    del data["corpus"]["sha"]
    run_json.write_text(json.dumps(data))
    with pytest.raises(InputError, match="corpus.sha") as err:
        score_run(built.run_dir, built.suite_dir)
    assert err.value.data["file"] == str(run_json)
    run_json.unlink()
    with pytest.raises(InputError, match="run.json is missing"):
        score_run(built.run_dir, built.suite_dir)
    _nothing_written(built)


def test_an_unfinished_run_is_refused(built: RunBuilder) -> None:
    run_json = built.run_dir / "run.json"
    data = json.loads(run_json.read_text())
    for status in ("interrupted", "running", "failed", "pristine-changed"):
        run_json.write_text(json.dumps({**data, "status": status}))
        with pytest.raises(InputError, match="status") as err:
            score_run(built.run_dir, built.suite_dir)
        assert "'complete' or 'refused-arms'" in str(err.value)
        assert "--resume" in (err.value.fix or "")
    _nothing_written(built)


def test_a_run_with_a_refused_arm_is_scored_and_names_it_first(built: RunBuilder) -> None:
    """The arms that ran are graded; the refused one heads the disclosure's deviations,
    with why, and is unscored."""
    assert json.loads((built.run_dir / "run.json").read_text())["status"] == "refused-arms"
    scores = score_run(built.run_dir, built.suite_dir)
    assert scores["run"]["status"] == "refused-arms"
    assert scores["environment"]["deviations"][0] == (
        "arm walled refused by its isolation guards, not measured: network_mode: expected "
        "none, found bridge")
    assert not any(d.startswith("arm walled ") for d in scores["environment"]["deviations"][1:])
    assert scores["arms"]["walled"]["status"] == "refused"
    assert cell(scores, "rg", "ref-money")["verdict"] == "correct"


def test_a_suite_whose_seal_is_not_the_runs_is_named(built: RunBuilder) -> None:
    manifest = built.suite_dir / "manifest.json"
    manifest.write_text(manifest.read_text() + " ")
    with pytest.raises(InputError, match="seal is not the run's") as err:
        score_run(built.run_dir, built.suite_dir)
    assert err.value.data["file"] == str(manifest)
    _nothing_written(built)


def test_a_task_changed_since_the_seal_is_named(built: RunBuilder) -> None:
    task = built.suite_dir / "tasks" / "ref-money.toml"
    task.write_text(task.read_text().replace('"src/d.cs"', '"src/c.cs"'))
    with pytest.raises(InputError, match="differs from the seal") as err:
        score_run(built.run_dir, built.suite_dir)
    assert err.value.data["file"] == str(task)
    _nothing_written(built)


def test_a_task_added_after_the_seal_is_named(built: RunBuilder) -> None:
    extra = built.suite_dir / "tasks" / "zz-new.toml"
    extra.write_text((built.suite_dir / "tasks" / "e2e-a.toml").read_text()
                     .replace('"e2e-a"', '"zz-new"'))
    with pytest.raises(InputError, match="not in the seal"):
        score_run(built.run_dir, built.suite_dir)
    _nothing_written(built)


def test_the_wrong_suite_directory_is_named(built: RunBuilder, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere" / "demo"
    other.mkdir(parents=True)
    with pytest.raises(InputError, match="suite 'mini'"):
        score_run(built.run_dir, other)
    _nothing_written(built)


def test_a_corrupt_earlier_score_is_named_not_overwritten(built: RunBuilder) -> None:
    (built.run_dir / "scores.json").write_text("{")
    with pytest.raises(InputError, match="earlier scores"):
        score_run(built.run_dir, built.suite_dir)
    assert (built.run_dir / "scores.json").read_text() == "{"


def test_a_missing_graded_stdout_is_named_and_warm_streams_only_grade_their_reps(
        built: RunBuilder) -> None:
    """Without the warm streams (a trimmed copy of a run) every cell keeps its cold grade;
    a warm rep whose output differs from every graded one is then not graded, and says why;
    one whose record holds the cold rep's digests has the cold rep's grade."""
    first = score_run(built.run_dir, built.suite_dir)
    for warm in (built.run_dir / "cells").glob("*/*/[1-9]"):
        (warm / "stdout").unlink()
        (warm / "stderr").unlink()
    again = score_run(built.run_dir, built.suite_dir)
    strip = ("reps", "unstable")
    assert [{k: v for k, v in c.items() if k not in strip} for c in again["cells"]] == \
        [{k: v for k, v in c.items() if k not in strip} for c in first["cells"]]
    reps = [r for c in again["cells"] for r in c["reps"]]
    assert {r["not_graded"] for r in reps} == {None, "streams-not-kept"}
    assert all(r["verdict"] is None for r in reps if r["not_graded"])
    graded = built.run_dir / "cells" / "rg" / "loc-a" / "0" / "stdout"
    graded.unlink()
    (built.run_dir / "scores.json").unlink()
    with pytest.raises(InputError, match="stdout is missing") as err:
        score_run(built.run_dir, built.suite_dir)
    assert err.value.data["file"] == str(graded)


def test_a_listing_cut_at_a_walk_bound_is_carried_to_the_document(built: RunBuilder) -> None:
    """state.json says where a walk of the arm's files stopped; scores.json and results.md
    say it too, so a reader never takes a cut listing for a whole one."""
    from orchestrator.report.markdown import render_markdown
    path = built.run_dir / "arms" / "peer" / "state.json"
    state = json.loads(path.read_text())
    cut = {"guard": "depth", "limit": 256, "at": "deep/" * 3 + "d\n# Forged"}
    path.write_text(json.dumps({**state, "state_cut": [cut], "out_cut": None}))
    scores = score_run(built.run_dir, built.suite_dir)
    assert scores["state"]["peer"]["listings_cut"] == {"state": [cut]}
    assert scores["state"]["rg"]["listings_cut"] == {}
    assert problems(scores) == []
    document = render_markdown(scores)
    line = next(x for x in document.splitlines() if "listing cut" in x)
    assert line.startswith("  - state listing cut at its depth bound (256), first left out: ")
    assert "\n# Forged" not in document


def test_names_state_json_left_out_are_counted_in_scores_and_results(built: RunBuilder) -> None:
    """A state list cut to its first names (orchestrator/disclosure.py) keeps its count and
    bytes exact: scores.json carries what it left out, the state table counts every file and
    results.md says how many more there were; a time cut is shown in seconds."""
    from orchestrator.report.markdown import render_markdown
    from orchestrator.report.tables import state as state_table
    path = built.run_dir / "arms" / "peer" / "state.json"
    state = json.loads(path.read_text())
    left = {"count": 999_990, "bytes": 12_345}
    cut = {"guard": "time", "limit": 300, "at": "many/d0999"}
    path.write_text(json.dumps({**state, "state_files": [[f"f{i}", 1] for i in range(10)],
                                "state_files_omitted": left, "state_cut": [cut]}))
    scores = score_run(built.run_dir, built.suite_dir)
    assert scores["state"]["peer"]["state_files_omitted"] == left
    assert "state_files_omitted" not in scores["state"]["rg"]
    assert problems(scores) == []
    _, rows = state_table(scores)
    assert next(r for r in rows if r[0] == "peer")[2] == "1,000,000"
    document = render_markdown(scores)
    assert "  - state: 999,990 more files (12,345 bytes), past the names state.json lists" \
        in document.splitlines()
    assert "  - state listing cut at its time bound (300 s), first left out: many/d0999" \
        in document.splitlines()


def test_install_times_of_images_built_at_once_are_disclosed(tmp_path: Path) -> None:
    """An image built beside others (images build --jobs) has a shared wall time as its
    install time: the disclosure says so, naming those arms."""
    b = RunBuilder(tmp_path, arms=[Arm("rg", install_build_jobs=3),
                                   Arm("peer", install_build_jobs=3),
                                   Arm("solo", install_build_jobs=1)])
    b.cells[("rg", "ref-money")] = Cell(GOOD_REFS)
    scores, _ = compute(b.build().run_dir, b.suite_dir)
    shared = [d for d in scores["environment"]["deviations"] if "image builds at once" in d]
    assert shared == ["the install times of peer, rg were measured with up to 3 image builds at "
                      "once (images build --jobs): wall time shared with the other builds, not "
                      "each image's own"]

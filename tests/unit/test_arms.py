"""Arm specs: schema, placeholders and the not-attempted rule; every shipped arm loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator import arms
from orchestrator.kinds import ALL_KINDS, EDGE_KINDS
from orchestrator.errors import InputError

REPO = Path(__file__).resolve().parents[2]

GOOD = """
description = "x"
image = "rg"
parser = "rg"
[env]
HOME = "/state/home"
[tasks.references]
argv = ["rg", "-n", "-w", "-g", "*.{ext}", "{symbol}", "."]
[tasks.impact]
argv = ["chain", "{seed}", "{lang}"]
[tasks.locate]
argv = ["kw", "{ticket}"]
[not_attempted.e2e-retrieval]
reason = "quoted"
source = "its docs"
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "arm.toml"
    path.write_text(text)
    return path


def test_every_shipped_arm_loads_and_covers_every_kind() -> None:
    loaded = arms.load_arms(REPO / "arms")
    assert {a.name for a in loaded} >= {"rg", "ast-grep", "code-review-graph", "devscout"}
    assert {a.name for a in loaded if a.kind == "oracle"} == {"oracle-scip-typescript",
                                                              "oracle-rust-analyzer"}
    for arm in loaded:
        if arm.kind == "oracle":
            assert arm.oracle is not None and not arm.tasks and not arm.parser, arm.name
            continue
        declared = set(arm.tasks) | set(arm.not_attempted)
        # Every core kind; an edge kind only by the arms of suites/rust-edges.
        assert set(arms.KINDS) <= declared <= set(ALL_KINDS), arm.name
        assert not set(arm.tasks) & set(arm.not_attempted)
    edge_arms = {a.name for a in loaded if set(EDGE_KINDS) <= set(a.tasks) | set(a.not_attempted)}
    assert edge_arms == {"rg", "ast-grep", "code-review-graph"}


def test_the_serena_arm_is_a_typescript_references_mcp_arm_writing_under_state() -> None:
    arm = arms.load_arm(REPO / "arms" / "serena.toml")
    assert arm.protocol == "mcp" and arm.mcp is not None and arm.parser == "serena"
    assert arm.mcp.argv == ("sandbench-serena", "/corpus") and not arm.mcp.setup_calls
    assert set(arm.calls) == {"references"}
    assert set(arm.not_attempted) == {"impact", "locate", "e2e-retrieval"}
    call = arm.calls["references"].render({"symbol": 'a"b', "ext": "ts", "lang": "typescript"})
    assert call.tool == "find_referencing_symbols"
    assert call.arguments == {"name_path": 'a"b', "relative_path": ""}
    assert arm.env["SERENA_USAGE_REPORTING"] == "false"
    assert arm.env["SERENA_HOME"].startswith("/state/") and arm.env["HOME"].startswith("/state/")
    # The set-up cell is the server's start and initialize.
    assert arm.setup is not None and arm.setup.argv == ("initialize", "sandbench-serena",
                                                        "/corpus")


def test_render_fills_placeholders_without_a_shell(tmp_path: Path) -> None:
    arm = arms.load_arm(_write(tmp_path, GOOD))
    argv = arm.render("references", {"symbol": "Money", "ext": "cs", "lang": "csharp"})
    assert argv == ["rg", "-n", "-w", "-g", "*.cs", "Money", "."]
    ticket = "a ticket; with $(shell) {braces: here} and 'quotes'"
    assert arm.render("locate", {"ticket": ticket, "ext": "cs", "lang": "csharp"}) == \
        ["kw", ticket]


@pytest.mark.parametrize(("old", "new", "key"), [
    ('parser = "rg"', 'parser = "nope"', "parser"),
    ('[tasks.locate]', '[tasks.find]', "tasks.find"),
    ('"{symbol}"', '"{sym}"', "tasks.references.argv"),
    ('"{seed}"', '"{ticket}"', "tasks.impact.argv"),
    ('[not_attempted.e2e-retrieval]\nreason = "quoted"\nsource = "its docs"', '',
     "tasks.e2e-retrieval"),
    ('reason = "quoted"', 'reason = ""', "not_attempted.e2e-retrieval.reason"),
    ('image = "rg"', 'image = "rg"\ncolour = "red"', "colour"),
    ('HOME = "/state/home"', 'HOME = 3', "env.HOME"),
])
def test_bad_arm_specs_name_file_and_key(tmp_path: Path, old: str, new: str, key: str) -> None:
    assert old in GOOD
    path = _write(tmp_path, GOOD.replace(old, new))
    with pytest.raises(InputError) as err:
        arms.load_arm(path)
    assert err.value.data["key"] == key
    assert str(path) in str(err.value) and err.value.exit_code == 2


def test_an_unknown_arm_lists_the_known_ones() -> None:
    with pytest.raises(InputError, match="(?s)unknown arm 'nope'.*rg"):
        arms.load_arms(REPO / "arms", ["nope"])


ORACLE = """
kind = "oracle"
image = "oracle-scip-typescript"

[oracle]
argv = ["scip-oracle", "{project}"]
language = "typescript"
format = "scip"
"""


def test_an_oracle_renders_its_project(tmp_path: Path) -> None:
    oracle = arms.load_arm(_write(tmp_path, ORACLE))
    assert oracle.kind == "oracle" and oracle.oracle is not None
    assert oracle.oracle.render("web") == ["scip-oracle", "web"]


@pytest.mark.parametrize(("old", "new", "key"), [
    ('"{project}"', '"{symbol}"', "oracle.argv"),
    ('format = "scip"', 'format = "lsif"', "oracle.format"),
    ('kind = "oracle"', 'kind = "oracle"\nparser = "rg"', "parser"),
    ('kind = "oracle"', 'kind = "judge"', "kind"),
    ('kind = "oracle"\n', '', "oracle"),
])
def test_bad_oracle_specs_name_file_and_key(tmp_path: Path, old: str, new: str, key: str) -> None:
    path = _write(tmp_path, ORACLE.replace(old, new))
    with pytest.raises(InputError) as err:
        arms.load_arm(path)
    assert err.value.data["key"] == key and err.value.exit_code == 2

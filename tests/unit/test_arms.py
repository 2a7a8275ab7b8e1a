"""Arm specs: schema, placeholders and the not-attempted rule; every shipped arm loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator import arms
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
    for arm in loaded:
        assert set(arm.tasks) | set(arm.not_attempted) == set(arms.KINDS), arm.name
        assert not set(arm.tasks) & set(arm.not_attempted)


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

"""docs/cli.md is what `python -m orchestrator.cli.reference` renders from the typer app now,
and the rendering depends on the app alone (no terminal width, colour or environment)."""

from __future__ import annotations

import pytest

from orchestrator.cli import reference


def test_the_committed_reference_is_what_the_cli_renders_now() -> None:
    committed = reference.REFERENCE.read_text(encoding="utf-8")
    assert committed == reference.render(), (
        f"{reference.REFERENCE} is stale: the CLI changed since it was rendered; "
        f"fix: {reference.REGENERATE}")


def test_the_rendering_depends_on_nothing_but_the_app(monkeypatch: pytest.MonkeyPatch) -> None:
    plain = reference.render()
    for name, value in (("COLUMNS", "37"), ("TERM", "xterm-256color"), ("FORCE_COLOR", "1"),
                        ("SANDBENCH_ROOT", "/elsewhere"), ("SANDBENCH_ENGINES", "unix://x")):
        monkeypatch.setenv(name, value)
    assert reference.render() == plain
    assert "\x1b" not in plain


def test_every_command_option_and_default_is_in_the_reference() -> None:
    text = reference.render()
    for heading in ("## `sandbench run`", "### `sandbench images build`",
                    "#### `sandbench truth rule fix`", "### `sandbench suite add-tasks`"):
        assert heading in text
    run = text.split("## `sandbench run`", 1)[1].split("\n## ", 1)[0]
    assert "- `--jobs N` (default `1`)" in run
    assert "- `--engine URL` (repeatable; environment `SANDBENCH_ENGINES`)" in run
    assert "- `--on-engine-refused [move|stop]` (default `stop`)" in run
    assert "default ``" not in text  # an empty default is no default


def test_check_names_the_fix_when_stale(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(reference, "REFERENCE", tmp_path / "cli.md")
    assert reference.main(["--check"]) == 1
    assert f"fix: {reference.REGENERATE}" in capsys.readouterr().err
    assert reference.main([]) == 0
    assert reference.main(["--check"]) == 0

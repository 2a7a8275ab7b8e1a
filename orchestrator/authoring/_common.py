"""What the authoring commands share: one way to name a bad command-line or file value."""

from __future__ import annotations

from orchestrator.errors import InputError

CLI = "the command line"


def bad(key: str, expected: str, found: object, where: object = CLI,
        fix: str | None = None) -> InputError:
    """A bad value of an option (`where` the command line) or of a file's key."""
    return InputError.bad_value(where, key, expected, found, fix=fix)

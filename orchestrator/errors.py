"""The one error type a person sees: what failed, why, and how to fix it.

Every error carries its data (file, key, guard, expected, found) so that a message can be
acted on without a traceback, and so that tests can assert on fields rather than prose.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from orchestrator.untrusted.text import terminal, terminal_lines


class SandbenchError(Exception):
    """A failure the user can act on. Printed without a traceback; exits with `exit_code`."""

    exit_code = 1

    def __init__(self, what: str, *, why: str | None = None, fix: str | None = None,
                 **data: Any) -> None:
        super().__init__(what)
        self.what = what
        self.why = why
        self.fix = fix
        self.data: Mapping[str, Any] = data

    def render(self) -> str:
        """The message for a terminal. Any part may quote a tool's bytes (a file name, a
        stderr tail): `what` is kept to one line, and every control in any part is shown as
        its escape (`untrusted.text`), so nothing printed can act on the terminal; a line
        break inside `why` or `fix` is kept but indented under its label, so no quoted line
        can pass for one of the message's own."""
        lines = [f"error: {terminal(self.what)}"]
        for label, text in (("why", self.why), ("fix", self.fix)):
            if text:
                lines.append(f"  {label}: " + terminal_lines(text).replace(
                    "\n", "\n" + " " * (len(label) + 4)))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.render()


class InputError(SandbenchError):
    """A file, key or argument the user gave is wrong. Nothing was written."""

    exit_code = 2

    @classmethod
    def bad_value(cls, file: object, key: str, expected: str, found: object,
                  fix: str | None = None) -> InputError:
        return cls(f"{file}: {key}: expected {expected}, found {found!r}",
                   fix=fix, file=str(file), key=key, expected=expected, found=found)


class EngineError(SandbenchError):
    """The Docker engine is absent, refused a call, or failed in a way we cannot retry."""


class EngineNotFound(EngineError):
    """The engine has no such container, image or exec (often: already removed)."""


class ContainerFailed(EngineError):
    """A short-lived container the engine ran for us exited non-zero."""


class GuardViolation(SandbenchError):
    """An isolation guard could not be verified: the arm is refused (fail closed)."""

    def __init__(self, arm: str, failures: list[Any]) -> None:
        detail = "; ".join(f"{f.guard}: expected {f.expected}, found {f.found}" for f in failures)
        super().__init__(f"arm {arm!r} refused: {len(failures)} isolation guard(s) failed",
                         why=detail, fix="fix the sandbox configuration; sandbench never "
                         "runs a measured command in a container whose guards fail",
                         arm=arm, failures=failures)

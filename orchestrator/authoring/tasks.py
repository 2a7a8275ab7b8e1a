"""`sandbench suite add-tasks`: task files from a records file, their truth computed by the
suite's declared rule on the pristine corpus and the mirror (pinned inputs, never an arm's
output), each quoting its rule and the commands that made it; all of them or none."""

from __future__ import annotations

import datetime
import os
import re
import shutil
import tempfile
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator import corpus, suite as suite_mod
from orchestrator.authoring import toml_text
from orchestrator.authoring._common import bad as _bad
from orchestrator.authoring.declared import (Declared, read_declared, task_tables, unreachable,
                                             unreachable_fix)
from orchestrator.authoring.new_suite import KIND_RULES
from orchestrator.authoring.records import Record, read_records
from orchestrator.corpus.foreign import Foreign, opened_if
from orchestrator.errors import InputError
from orchestrator.fsutil import atomic_write_bytes, atomic_write_text
from orchestrator.kinds import INPUT_KEY
from orchestrator.settings import Settings
from orchestrator.truth import rules as truth_rules, sources as truth_sources
from orchestrator.untrusted.text import markdown_cell, markdown_code_span


LANG_EXT = suite_mod.LANGUAGES
RECORDS_DIR = suite_mod.RECORDS_DIR


@dataclass(frozen=True)
class Made:
    """One task file to write: its id, kind and TOML text, and the record it came from."""

    id: str
    kind: str
    text: str
    record: Record
    unreachable: str | None = None  # why it can never be correct, kept as its record accepts


class _Context:
    """What every record's truth is computed from: the pristine corpus at the pin, its mirror,
    the suite's declared choices, and the command quoted into each task."""

    def __init__(self, checkout: Foreign, sha: str, declared: Declared,
                 language: str, mirror: Foreign | None, command: str) -> None:
        self.declared, self.rule = declared, declared.rule
        self.language, self.mirror = language, mirror
        self.ext = LANG_EXT[language]
        self.corpus, self.sha = declared.corpus, sha
        self.command = command
        self.pristine = checkout.path
        if mirror is not None and mirror.commit(sha) is None:
            raise _bad("--mirror", f"the corpus's mirror, holding its pin {sha}",
                       str(mirror.path))
        self.sources = truth_sources.Sources(checkout)
        self.at_pin = set(self.sources.tracked(self.ext))

    def bad(self, record: Record, key: str, expected: str, found: object,
            fix: str | None = None) -> InputError:
        return _bad(f"{record.key}.{key}", expected, found, record.file, fix)

    def resolve_fixes(self, record: Record) -> list[str]:
        """Each fix commit as its full sha: a commit of the mirror, after the pin."""
        if self.mirror is None:
            raise _bad("--mirror", f"the corpus's mirror ({record.file} {record.key} names fix "
                       "commits)", None)
        full = []
        for sha in record.fix:
            full_sha = self.mirror.commit(sha)
            if full_sha is None:
                raise self.bad(record, "fix", f"a commit of the mirror {self.mirror.path}", sha)
            if not self.mirror.is_ancestor(self.sha, full_sha):
                raise self.bad(record, "fix", f"a commit after the pin {self.sha[:12]} "
                               "(a fix merged after the corpus was pinned)", sha)
            full.append(full_sha)
        return full


def _fix_command(ctx: _Context, shas: Sequence[str]) -> str:
    ext = "" if ctx.ext == "cs" else f" --ext {ctx.ext}"
    return f"sandbench truth rule fix MIRROR {' '.join(shas)}{ext}"


def _origin(ctx: _Context, record: Record, kind: str) -> str:
    """Where the task comes from, the command that made it and the rule its truth follows."""
    issue = " ".join(part for part in (record.issue, f'"{record.title}"' if record.title
                                       else None) if part)
    source = f"{issue}, record {record.id!r}" if issue else f"Record {record.id!r}"
    return (f"{source}. Made by `{ctx.command}`. Rule ({kind}, the suite's declared "
            f"{ctx.rule}): {KIND_RULES[kind]}. MIRROR is the corpus's bare mirror, PRISTINE "
            f"its pristine copy at the pin (`sandbench corpus fetch {ctx.corpus}`).")


def _ticket(record: Record, e2e: bool) -> str:
    if e2e and record.e2e_ticket != record.ticket:
        return " Ticket: the record's e2e_ticket."
    return " Ticket: the record's ticket." if record.ticket != record.title else \
        " Ticket: the issue's title (the record gives no ticket text)."


def _fix_truth(ctx: _Context, record: Record, shas: list[str]
               ) -> tuple[list[tuple[str, int]], list[str], str]:
    """(rows at the pin, files the fix added, the sentence quoting the command and its rows)."""
    rows = truth_rules.fix_files(ctx.mirror, shas, ctx.ext) if ctx.mirror else []
    kept = [(p, n) for p, n in rows if p in ctx.at_pin]
    added = [p for p, _ in rows if p not in ctx.at_pin]
    listed = ", ".join(f"{p} ({n})" for p, n in rows) or "no file"
    said = (f"`{_fix_command(ctx, shas)}` prints {len(rows)} .{ctx.ext} file(s), by lines "
            f"changed: {listed}.")
    if added:
        said += f" Not at the pin (added by the fix), so left out: {', '.join(added)}."
    return kept, added, said


def _task_text(task_id: str, kind: str, language: str, explanation: str,
               inputs: dict[str, str], truth: dict[str, Any]) -> str:
    lines = [f"id = {toml_text.string(task_id)}", f"kind = {toml_text.string(kind)}",
             f"language = {toml_text.string(language)}",
             f"explanation = {toml_text.multiline(_wrap(explanation))}", "", "[input]"]
    lines += [f"{k} = {toml_text.string(v)}" for k, v in inputs.items()]
    lines += ["", "[truth]"]
    for key, value in truth.items():
        shown = toml_text.string(value) if isinstance(value, str) else toml_text.array(value)
        lines.append(f"{key} = {shown}")
    return "\n".join(lines) + "\n"


def _wrap(text: str, width: int = 96) -> str:
    """Paragraphs wrapped at `width` (long paths and commands stay whole on their line)."""
    return "\n\n".join(textwrap.fill(p, width, break_long_words=False, break_on_hyphens=False)
                       for p in text.split("\n\n"))


def _tasks_of(ctx: _Context, record: Record) -> list[Made]:
    made: list[Made] = []
    shas = ctx.resolve_fixes(record) if record.fix else []

    def add(kind: str, explanation: str, value: str, truth: dict[str, Any]) -> None:
        task_id = f"{kind}-{record.id}"
        why = unreachable(ctx.declared, kind, truth)
        accepted = kind in record.accept_unreachable
        if why and not accepted:
            raise ctx.bad(record, "kinds", f"tasks that can be graded correct under the "
                          f"suite's cut and cap ({ctx.declared.path})", f"{task_id}: {why}",
                          fix=unreachable_fix(record.id, kind))
        if accepted and not why:
            raise ctx.bad(record, "accept_unreachable", "only kinds whose task can never be "
                          "graded correct", kind, fix=f"remove {kind!r} from it")
        if why:
            explanation += (f" It can never be graded correct: {why}. Kept as its record "
                            f"accepts (accept_unreachable), disclosed in the preregistration.")
        text = _task_text(task_id, kind, ctx.language, explanation, {INPUT_KEY[kind]: value},
                          truth) + task_tables(ctx.declared, record.key, record, kind)
        made.append(Made(task_id, kind, text, record, why))

    if {"locate", "e2e-retrieval"} & set(record.kinds):
        kept, _, said = _fix_truth(ctx, record, shas)
        files = [p for p, _ in kept]
        tests = [p for p in files if truth_sources.is_test(p)]
        if ctx.declared.test_files == "exclude":
            files = [p for p in files if p not in tests]
            said += (f" Test files left out (the suite's test_files = \"exclude\"): "
                     f"{', '.join(tests) or 'none'}.")
        elif tests:
            said += " Test files kept (the suite's test_files = \"include\")."
        if not files:
            raise ctx.bad(record, "fix", f"fix commits touching a .{ctx.ext} file tracked "
                          "at the pin (else locate and e2e-retrieval have no truth)"
                          + (", not a test file" if ctx.declared.test_files == "exclude"
                             else ""), record.fix)
        assert record.ticket is not None and record.e2e_ticket is not None
        if "locate" in record.kinds:
            primary = next((p for p in files if not truth_sources.is_test(p)), None)
            if primary is None:
                raise ctx.bad(record, "fix", "fix commits touching a file that is not a "
                              "test file (the primary fix file)", record.fix)
            types = truth_sources.declared_types(ctx.pristine / primary) if ctx.ext == "cs" \
                else []
            add("locate", _origin(ctx, record, "locate") + " " + said
                + f" So primary = {primary}; touched = the other {len(files) - 1}; types = "
                  f"{', '.join(types) or 'none'}." + _ticket(record, False), record.ticket,
                {"primary": primary, "touched": [p for p in files if p != primary],
                 "types": types})
        if "e2e-retrieval" in record.kinds:
            add("e2e-retrieval", _origin(ctx, record, "e2e-retrieval") + " " + said
                + f" So touched = those {len(files)}." + _ticket(record, True),
                record.e2e_ticket, {"touched": files})
    if "references" in record.kinds:
        assert record.symbol is not None
        refs = truth_rules.refs(ctx.sources, record.symbol, ctx.ext, ctx.rule)
        if not refs.core:
            raise ctx.bad(record, "symbol", "a symbol named in code by some file (an "
                          "empty core set satisfies every band vacuously)", record.symbol)
        ext = "" if ctx.ext == "cs" else f" --ext {ctx.ext}"
        declaring = ", ".join(refs.declaring) or "none"
        add("references", _origin(ctx, record, "references") + " "
            + f"`sandbench truth rule refs PRISTINE {record.symbol}{ext} --rule {ctx.rule}` "
              f"prints {len(refs.core)} core and {len(refs.admissible)} admissible file(s); "
              f"declaring {record.symbol}: {declaring}.", record.symbol,
            {"core": refs.core, "admissible": refs.admissible})
    if "impact" in record.kinds:
        assert record.seed is not None
        if record.seed not in ctx.at_pin:
            raise ctx.bad(record, "seed", "a file tracked at the pin", record.seed)
        result = truth_rules.impact(ctx.sources, record.seed, ctx.mirror, shas)
        graded = [p for p in result.graded if p in ctx.at_pin]
        if not graded:
            raise ctx.bad(record, "seed", "a seed with a non-empty graded set (an empty one "
                          "satisfies every band vacuously)", record.seed)
        fixes = f" --mirror MIRROR {' '.join('--fix ' + s for s in shas)}" if shas else ""
        beyond = ", ".join(result.fix_beyond_seed) or "none"
        added = [p for p in result.graded if p not in ctx.at_pin]
        left_out = f" Not at the pin (added by the fix), so left out: {', '.join(added)}." \
            if added else ""
        add("impact", _origin(ctx, record, "impact") + " "
            + f"`sandbench truth rule impact PRISTINE {record.seed}{fixes}` prints: types "
              f"{', '.join(result.types) or 'none'}; fix beyond seed: {beyond}; graded: "
              f"{len(result.graded)} file(s).{left_out}", record.seed, {"graded": graded})
    return made


def add_tasks(settings: Settings, name: str, records_file: Path, mirror: Path | None,
              today: str | None = None) -> list[Path]:
    """Make the task files of every record, copy the records file into the suite (sealed with
    it, quoted by its path there) and append the tasks' list to the preregistration; nothing is
    written unless every task is made and checked. The task files written."""
    folder = settings.suites_dir / name
    if not (folder / "suite.toml").is_file():
        raise InputError(f"unknown suite {name!r}", fix=f"sandbench suite new {name} ...")
    if (folder / suite_mod.MANIFEST).exists():
        raise InputError(f"suite {name!r} is sealed ({folder / suite_mod.MANIFEST}): tasks are "
                         "added before the seal, as the preregistration says",
                         fix="make a new suite for new tasks", file=str(folder))
    declared = read_declared(folder / "suite.toml")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", records_file.name):
        raise _bad("--records", "a file named with letters, digits, dots, dashes and "
                   "underscores (it is copied into the suite under its name)", records_file.name)
    language, records = read_records(records_file)
    quoted = f"{settings.suites_dir.name}/{name}/{RECORDS_DIR}/{records_file.name}"
    command = f"sandbench suite add-tasks {name} --records {quoted}" + (
        " --mirror MIRROR" if mirror is not None else "")
    lock = corpus.lock_path(settings)
    pin = corpus.pin_for(corpus.load_lock(lock), declared.corpus, lock)
    pristine = corpus.corpus_dir(settings, declared.corpus)
    fetched = pristine if (pristine / ".git").is_dir() else None
    with opened_if(fetched, "the pristine copy") as checkout:
        if checkout is None or pin.sha is None or checkout.head() != pin.sha:
            raise InputError(f"corpus {declared.corpus!r} is not fetched at its pin "
                             f"({pristine})", fix=pin.fetch_hint(), file=str(pristine))
        with opened_if(mirror, "--mirror") as fixes:
            ctx = _Context(checkout, pin.sha, declared, language, fixes, command)
            made = [task for record in records for task in _tasks_of(ctx, record)]
    tasks_dir = folder / "tasks"
    for task in made:
        if (existing := tasks_dir / f"{task.id}.toml").exists():
            raise _bad(f"{task.record.key}.id", "a record whose tasks do not exist yet "
                       "(add-tasks never overwrites)", task.record.id, task.record.file,
                       fix=f"{existing} exists: give the record another id")
    copy, copied = _records_copy(folder, records_file)
    tasks_dir.mkdir(exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".add-tasks-", dir=tasks_dir))
    try:
        for task in made:
            atomic_write_text(staging / f"{task.id}.toml", task.text)
            _read_back(staging / f"{task.id}.toml", task)
        prereg = folder / suite_mod.PREREGISTRATION
        section = _prereg_section(quoted, command, declared.rule, made,
                                  today or datetime.datetime.now(datetime.UTC).date().isoformat())
        text = prereg.read_text(encoding="utf-8") if prereg.is_file() else ""
        if copied is not None:
            copy.parent.mkdir(exist_ok=True)
            atomic_write_bytes(copy, copied)
        written = []
        for task in made:
            os.rename(staging / f"{task.id}.toml", dest := tasks_dir / f"{task.id}.toml")
            written.append(dest)
        atomic_write_text(prereg, text.rstrip("\n") + "\n\n" + section)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return written


def _records_copy(folder: Path, records_file: Path) -> tuple[Path, bytes | None]:
    """Where the records file is copied in the suite, and its bytes to write (None: the same
    file is there already); a different file of that name is never overwritten."""
    copy = folder / RECORDS_DIR / records_file.name
    data = records_file.read_bytes()
    if copy.is_file() and copy.read_bytes() != data:
        raise _bad("--records", f"a records file whose name is not taken in {copy.parent} "
                   "(each records file is copied and sealed with the suite)", records_file.name,
                   fix=f"{copy} holds other records: rename your file")
    return copy, None if copy.is_file() else data


def _read_back(path: Path, task: Made) -> None:
    """The task file reads back as a valid task; else the error names the record it came from
    (a record's commands and published tables are checked here, by the task loader)."""
    try:
        suite_mod.load_task(path)
    except InputError as err:
        raise InputError(f"{task.record.file}: {task.record.key} (id {task.record.id!r}) makes "
                         f"task {task.id}, which the task loader refuses: {err.what}",
                         fix="fix the record's commands or published tables as said",
                         file=task.record.file, key=task.record.key) from err


def _prereg_section(records_file: str, command: str, rule: str, made: list[Made],
                    today: str) -> str:
    rows: list[str] = []
    by_record: dict[str, list[Made]] = {}
    for task in made:
        by_record.setdefault(task.record.id, []).append(task)
    for record_id, tasks in by_record.items():
        record = tasks[0].record
        issue = " ".join(p for p in (record.issue, f'"{record.title}"' if record.title
                                     else None) if p) or "none"
        fix = ", ".join(markdown_code_span(s[:12]) for s in record.fix) or "none"
        rows.append(f"| {markdown_cell(record_id)} | {markdown_cell(issue)} | {fix} | "
                    + ", ".join(markdown_cell(t.id) for t in tasks) + " |")
    accepted = [f"- {markdown_cell(t.id)} can never be graded correct: {t.unreachable} "
                "(its record's accept_unreachable)." for t in made if t.unreachable]
    return "\n".join([
        f"## Tasks from {markdown_code_span(records_file.rpartition('/')[2])} (added {today})\n",
        f"{len(made)} tasks made by {markdown_code_span(command)} before any arm has run, "
        f"their truth by the declared rule `{rule}`; each task file quotes its rule and the "
        f"command that printed its sets. The records file is copied into the suite as "
        f"{markdown_code_span(records_file)} and sealed with it.\n",
        "| record | issue | fix | tasks |", "| --- | --- | --- | --- |", *rows,
        *(["", "Kept although they can never be graded correct under the suite's cut or "
            "cap:\n", *accepted] if accepted else [])]) + "\n"

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

from orchestrator import corpus, toml_text, truth_rules
from orchestrator import suite as suite_mod
from orchestrator.authoring._common import bad as _bad
from orchestrator.authoring.new_suite import KIND_RULES
from orchestrator.corpus.foreign import Foreign, opened_if
from orchestrator.errors import InputError
from orchestrator.fsutil import atomic_write_text, read_toml
from orchestrator.kinds import INPUT_KEY
from orchestrator.settings import Settings
from orchestrator.shared_checks import repo_path
from orchestrator.untrusted.text import markdown_cell, markdown_code_span


RECORD_KEYS = {"id": str, "issue": str, "title": str, "ticket": str, "e2e_ticket": str,
               "fix": list, "symbol": str, "seed": str, "kinds": list}
RECORDS_KEYS = {"version", "language", "record"}
LANG_EXT = suite_mod.LANGUAGES


@dataclass(frozen=True)
class Record:
    """One line of work: an issue and its fix (locate, e2e-retrieval), a symbol (references),
    a seed (impact). `file` and `key` (record[i]) name it in errors."""

    file: str
    key: str
    id: str
    kinds: tuple[str, ...]
    issue: str | None = None
    title: str | None = None
    ticket: str | None = None
    e2e_ticket: str | None = None
    fix: tuple[str, ...] = ()
    symbol: str | None = None
    seed: str | None = None


def read_records(path: Path) -> tuple[str, list[Record]]:
    """The records file, or one InputError naming its key (record[i].KEY):

        version = 1
        language = "csharp"                  # optional: csharp (default) or typescript
        [[record]]
        id = "fault-headers"                 # the tasks' names: locate-ID, e2e-retrieval-ID, ...
        issue = "MassTransit#6168"           # optional: where the record comes from
        title = "Trim exception messages"    # optional: the issue's title
        ticket = "When a consumer throws..." # optional: locate's input (default: the title)
        e2e_ticket = "..."                   # optional: e2e-retrieval's input (default: ticket)
        fix = ["333b5d6b6"]                  # optional: fix commits in the mirror (unioned)
        symbol = "ExceptionUtil"             # optional: a references task
        seed = "src/.../ExceptionUtil.cs"    # optional: an impact task (the fix unioned)
        kinds = ["references"]               # optional: only these of the kinds it can make

    A title or ticket with fix commits makes locate and e2e-retrieval, a symbol references, a
    seed impact; (language, records)."""
    data = read_toml(path)
    if unknown := sorted(set(data) - RECORDS_KEYS):
        raise _bad(unknown[0], f"one of {sorted(RECORDS_KEYS)}", unknown[0], path)
    if data.get("version") != 1:
        raise _bad("version", "1", data.get("version"), path)
    language = data.get("language", "csharp")
    if language not in ("csharp", "typescript"):
        raise _bad("language", "csharp or typescript (the text rules' languages)", language,
                   path)
    table = data.get("record")
    if not isinstance(table, list) or not table:
        raise _bad("record", "one or more [[record]] tables", table, path)
    records, seen = [], set()
    for i, body in enumerate(table):
        records.append(record := _record(path, i, body, language))
        if record.id in seen:
            raise _bad(f"record[{i}].id", "an id no other record has", record.id, path)
        seen.add(record.id)
    return language, records


def _record(path: Path, i: int, body: dict[str, Any], language: str) -> Record:
    def bad(key: str, expected: str, found: object) -> InputError:
        return _bad(f"record[{i}].{key}", expected, found, path)

    if unknown := sorted(set(body) - set(RECORD_KEYS)):
        raise bad(unknown[0], f"one of {sorted(RECORD_KEYS)}", unknown[0])
    for key, kind in RECORD_KEYS.items():
        if key in body and (not isinstance(body[key], kind) or not body[key]):
            raise bad(key, "a non-empty list" if kind is list else "a non-empty string",
                      body[key])
    if not isinstance(body.get("id"), str) or not suite_mod.TASK_ID.match(body["id"]):
        raise bad("id", "a record id of lower-case letters, digits and dashes", body.get("id"))
    fixes = body.get("fix", [])
    for sha in fixes:
        if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{7,40}", sha):
            raise bad("fix", "commits of 7 to 40 lower-case hex digits", sha)
    ticket = body.get("ticket") or body.get("title")
    possible = [*(("locate", "e2e-retrieval") if fixes and ticket else ()),
                *(("references",) if "symbol" in body else ()),
                *(("impact",) if "seed" in body else ())]
    kinds = body.get("kinds", possible)
    if not possible:
        raise bad("kinds", "a record that makes a task: a title or ticket with fix commits "
                  "(locate, e2e-retrieval), a symbol (references) or a seed (impact)", None)
    if unmade := [k for k in kinds if k not in possible]:
        raise bad("kinds", f"kinds this record's fields make: {possible}", unmade[0])
    if "impact" in kinds and language != "csharp":
        raise bad("seed", "no seed: the impact rule declares C# types only", body["seed"])
    if "seed" in body:
        repo_path(f"{path} record[{i}]", "seed", body["seed"])
    if "symbol" in body and not re.fullmatch(r"[A-Za-z_]\w*", body["symbol"]):
        raise bad("symbol", "an identifier (letters, digits, underscores)", body["symbol"])
    return Record(file=str(path), key=f"record[{i}]", id=body["id"], kinds=tuple(kinds),
                  issue=body.get("issue"), title=body.get("title"), ticket=ticket,
                  e2e_ticket=body.get("e2e_ticket") or ticket, fix=tuple(fixes),
                  symbol=body.get("symbol"), seed=body.get("seed"))


@dataclass(frozen=True)
class Made:
    """One task file to write: its id, kind and TOML text, and the record it came from."""

    id: str
    kind: str
    text: str
    record: Record


class _Context:
    """What every record's truth is computed from: the pristine corpus at the pin, its mirror,
    the rule, and the command quoted into each task."""

    def __init__(self, checkout: Foreign, sha: str, corpus_id: str, rule: str,
                 language: str, mirror: Foreign | None, command: str) -> None:
        self.rule, self.language, self.mirror = rule, language, mirror
        self.ext = LANG_EXT[language]
        self.corpus, self.sha = corpus_id, sha
        self.command = command
        self.pristine = checkout.path
        if mirror is not None and mirror.commit(sha) is None:
            raise _bad("--mirror", f"the corpus's mirror, holding its pin {sha}",
                       str(mirror.path))
        self.sources = truth_rules.Sources(checkout)
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
        made.append(Made(task_id, kind, _task_text(task_id, kind, ctx.language, explanation,
                                                   {INPUT_KEY[kind]: value}, truth), record))

    if {"locate", "e2e-retrieval"} & set(record.kinds):
        kept, _, said = _fix_truth(ctx, record, shas)
        files = [p for p, _ in kept]
        if not files:
            raise ctx.bad(record, "fix", f"fix commits touching a .{ctx.ext} file tracked "
                          "at the pin (else locate and e2e-retrieval have no truth)", record.fix)
        assert record.ticket is not None and record.e2e_ticket is not None
        if "locate" in record.kinds:
            primary = next((p for p in files if not truth_rules.is_test(p)), None)
            if primary is None:
                raise ctx.bad(record, "fix", "fix commits touching a file that is not a "
                              "test file (the primary fix file)", record.fix)
            types = truth_rules.declared_types(ctx.pristine / primary) if ctx.ext == "cs" \
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
              command: str, today: str | None = None) -> list[Path]:
    """Make the task files of every record and append their list to the preregistration;
    nothing is written unless every task is made and checked. The files written."""
    folder = settings.suites_dir / name
    if not (folder / "suite.toml").is_file():
        raise InputError(f"unknown suite {name!r}", fix=f"sandbench suite new {name} ...")
    if (folder / suite_mod.MANIFEST).exists():
        raise InputError(f"suite {name!r} is sealed ({folder / suite_mod.MANIFEST}): tasks are "
                         "added before the seal, as the preregistration says",
                         fix="make a new suite for new tasks", file=str(folder))
    declared = read_toml(folder / "suite.toml")
    rule = suite_mod.truth_rule(folder / "suite.toml", declared.get("truth_rule"))
    if rule is None:
        raise _bad("truth_rule", f"one of {list(suite_mod.TRUTH_RULES)} (the rule add-tasks "
                   "computes truth by)", None, folder / "suite.toml")
    if suite_mod.truth_rule_version(folder / "suite.toml", declared) != truth_rules.VERSION:
        raise _bad("truth_rule_version", f"{truth_rules.VERSION} (the version of the rules "
                   "add-tasks computes truth by: one suite's truth is made by one version)",
                   declared.get("truth_rule_version"), folder / "suite.toml",
                   fix=f"make the suite again with `sandbench suite new` (it records version "
                   f"{truth_rules.VERSION}), or set truth_rule_version = {truth_rules.VERSION} "
                   "if no task was made yet")
    if not isinstance(corpus_id := declared.get("corpus"), str):
        raise _bad("corpus", "the id of a corpus in corpus.lock", corpus_id,
                   folder / "suite.toml")
    language, records = read_records(records_file)
    lock = corpus.lock_path(settings)
    pin = corpus.pin_for(corpus.load_lock(lock), corpus_id, lock)
    pristine = corpus.corpus_dir(settings, corpus_id)
    fetched = pristine if (pristine / ".git").is_dir() else None
    with opened_if(fetched, "the pristine copy") as checkout:
        if checkout is None or pin.sha is None or checkout.head() != pin.sha:
            raise InputError(f"corpus {corpus_id!r} is not fetched at its pin ({pristine})",
                             fix=pin.fetch_hint(), file=str(pristine))
        with opened_if(mirror, "--mirror") as fixes:
            ctx = _Context(checkout, pin.sha, corpus_id, rule, language, fixes, command)
            made = [task for record in records for task in _tasks_of(ctx, record)]
    tasks_dir = folder / "tasks"
    for task in made:
        if (existing := tasks_dir / f"{task.id}.toml").exists():
            raise _bad(f"{task.record.key}.id", "a record whose tasks do not exist yet "
                       "(add-tasks never overwrites)", task.record.id, task.record.file,
                       fix=f"{existing} exists: give the record another id")
    tasks_dir.mkdir(exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".add-tasks-", dir=tasks_dir))
    try:
        for task in made:
            atomic_write_text(staging / f"{task.id}.toml", task.text)
            suite_mod.load_task(staging / f"{task.id}.toml")  # reads back as a valid task
        prereg = folder / suite_mod.PREREGISTRATION
        section = _prereg_section(records_file, command, rule, made,
                                  today or datetime.datetime.now(datetime.UTC).date().isoformat())
        text = prereg.read_text(encoding="utf-8") if prereg.is_file() else ""
        written = []
        for task in made:
            os.rename(staging / f"{task.id}.toml", dest := tasks_dir / f"{task.id}.toml")
            written.append(dest)
        atomic_write_text(prereg, text.rstrip("\n") + "\n\n" + section)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return written


def _prereg_section(records_file: Path, command: str, rule: str, made: list[Made],
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
    return "\n".join([
        f"## Tasks from {markdown_code_span(records_file.name)} (added {today})\n",
        f"{len(made)} tasks made by {markdown_code_span(command)} before any arm has run, "
        f"their truth by the declared rule `{rule}`; each task file quotes its rule and the "
        "command that printed its sets.\n",
        "| record | issue | fix | tasks |", "| --- | --- | --- | --- |", *rows]) + "\n"

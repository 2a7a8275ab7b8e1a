"""Authoring by command: pin a corpus from a mirror or a URL (`corpus add`), create a suite with
its declared choices and a preregistration stating them (`suite new`), and make task files from
a file of records, their truth computed by the suite's declared rule (`suite add-tasks`).

Everything is checked before anything is written, and every write is atomic: a corpus.lock
entry, a suite folder, a set of task files appears whole or not at all. The truth rules run git
on the pristine corpus and the mirror only (pinned inputs, never an arm's output).
"""

from __future__ import annotations

import datetime
import os
import re
import shutil
import tempfile
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator import corpus, toml_text, truth_rules
from orchestrator import suite as suite_mod
from orchestrator.corpus.git import Git, clean_git
from orchestrator.corpus.lock import parse_lock, read_lock_text, where
from orchestrator.errors import InputError
from orchestrator.fsutil import atomic_write_text, read_toml
from orchestrator.kinds import INPUT_KEY
from orchestrator.settings import Settings
from orchestrator.shared_checks import repo_path
from orchestrator.untrusted.text import markdown_cell, markdown_code_span

SHA = re.compile(r"[0-9a-f]{40}")
REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
SPDX = re.compile(r"[A-Za-z0-9.+-]+(?: (?:AND|OR|WITH) [A-Za-z0-9.+-]+)*")
KINDS = ("target", "held-out")
STATUSES = ("registered", "proposed")
# The methodology's bands, every existing suite's values: the default of `suite new`.
DEFAULT_BANDS: dict[str, float] = {
    "references_correct_recall": 0.75, "references_correct_max_outside": 2,
    "references_partial_recall": 0.40, "impact_partial_fraction": 0.5}
CLI = "the command line"


def _bad(key: str, expected: str, found: object, where: object = CLI,
         fix: str | None = None) -> InputError:
    return InputError.bad_value(where, key, expected, found, fix=fix)


# -- corpus add ---------------------------------------------------------------------------------

def _repo_of_url(url: str) -> str | None:
    """owner/name from a git URL (https://host/owner/name(.git), git@host:owner/name.git)."""
    tail = re.split(r"[:/]", url.rstrip("/").removesuffix(".git"))[-2:]
    return "/".join(tail) if len(tail) == 2 and REPO.fullmatch("/".join(tail)) else None


def _repo_of_path(mirror: Path) -> str | None:
    """owner/name from where a mirror lies: a folder `owner+name` (the mirror's own name or its
    parent's, as .../owner+name/repo), or .../owner/name.git."""
    for name in (mirror.name, mirror.parent.name):
        if name.count("+") == 1 and REPO.fullmatch(name.replace("+", "/")):
            return name.replace("+", "/")
    if mirror.name.endswith(".git"):
        repo = f"{mirror.parent.name}/{mirror.name.removesuffix('.git')}"
        return repo if REPO.fullmatch(repo) else None
    return None


def _mirror_facts(git: Git, mirror: Path, sha: str) -> str | None:
    """The mirror's https origin URL, if it names one; the sha must be a commit in it."""
    if not mirror.is_dir():
        raise _bad("--from", "a local clone or bare mirror (a directory)", str(mirror))
    probe = git.run("rev-parse", "--git-dir", cwd=mirror, check=False)
    if probe.returncode != 0:
        raise _bad("--from", "a git repository (a clone or bare mirror)", str(mirror))
    found = git.run("cat-file", "-e", f"{sha}^{{commit}}", cwd=mirror, check=False)
    if found.returncode != 0:
        raise _bad("--sha", f"a commit of the mirror {mirror}", sha,
                   fix="pin a commit the mirror holds (git -C MIRROR log), or bring a newer "
                       "mirror")
    origin = git.run("config", "--get", "remote.origin.url", cwd=mirror, check=False)
    url = origin.stdout.decode("utf-8", "replace").strip()
    return url if url.startswith("https://") else None


def add_corpus(lock: Path, corpus_id: str, *, sha: str, license_id: str, kind: str, note: str,
               mirror: Path | None = None, url: str | None = None, repo: str | None = None,
               status: str = "registered") -> corpus.CorpusPin:
    """Check a new pin and append it to the lock at `lock`; the pin written."""
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", corpus_id):
        raise _bad("ID", "a corpus id of lower-case letters, digits and dashes", corpus_id)
    if not SHA.fullmatch(sha):
        raise _bad("--sha", "a full commit sha: 40 lower-case hex digits", sha)
    if not SPDX.fullmatch(license_id):
        raise _bad("--license", "an SPDX licence identifier (Apache-2.0, MIT, ...)", license_id)
    if kind not in KINDS:
        raise _bad("--kind", " or ".join(KINDS), kind)
    if status not in STATUSES:
        raise _bad("--status", " or ".join(STATUSES), status)
    if not note.strip():
        raise _bad("--note", "a sentence saying what the corpus is for", note)
    if mirror is None and url is None:
        raise _bad("--from/--url", "a mirror to check the sha in, or the URL (or both)", None)
    if url is not None and not url.startswith("https://"):
        raise _bad("--url", "an https:// git URL", url)
    if mirror is not None:
        with clean_git() as git:
            origin = _mirror_facts(git, mirror, sha)
        url = url or origin
        if url is None:
            raise _bad("--url", f"the https:// git URL of the corpus (the mirror {mirror} "
                       "names no https remote to take it from)", None)
        repo = repo or _repo_of_path(mirror) or _repo_of_url(url)
    assert url is not None
    repo = repo or _repo_of_url(url)
    if repo is None or not REPO.fullmatch(repo):
        raise _bad("--repo", "owner/name (it cannot be read from the mirror's path or the URL)",
                   repo)
    pin = corpus.CorpusPin(id=corpus_id, repo=repo, url=url, sha=sha, license=license_id,
                           kind=kind, status=status, note=note)
    add_pin(lock, pin)
    return pin


def pin_table(pin: corpus.CorpusPin) -> str:
    """The pin as a corpus.lock table, its fields in the order of the lock's own tables."""
    fields = {"id": pin.id, "repo": pin.repo, "url": pin.url, "sha": pin.sha,
              "license": pin.license, "kind": pin.kind, "status": pin.status, "note": pin.note}
    return f"[{pin.id}]\n" + "".join(f"{key} = {toml_text.string(value)}\n"
                                     for key, value in fields.items() if value is not None)


def add_pin(path: Path, pin: corpus.CorpusPin) -> None:
    """Append `pin` to the lock at `path`, atomically: the lock as it is and as it would be are
    both checked as load_lock checks them, and nothing is written unless both pass."""
    text = read_lock_text(path)
    pins = parse_lock(path, text)
    if pin.id in pins:
        raise InputError.bad_value(where(path, text, pin.id, "id"), f"{pin.id}.id",
                                   "an id not yet in the lock", pin.id,
                                   fix="choose another id, or edit the existing table")
    new_text = text.rstrip("\n") + "\n\n" + pin_table(pin)
    if parse_lock(path, new_text).get(pin.id) != pin:
        raise InputError(f"{path}: the table for {pin.id!r} does not read back as written",
                         file=str(path), key=pin.id)
    atomic_write_text(path, new_text)


# -- suite new ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class SuiteChoices:
    """What `suite new` declares: every key of suite.toml, and the one-sentence purpose the
    header comment and the preregistration open with (left out when not given)."""

    name: str
    corpus: str
    arms: tuple[str, ...]
    baseline: str
    tool_under_test: str | None = None
    reps: int = 3
    timeout_s: float = 120
    precision_cap: int = 20
    top_k: int = 5
    truth_rule: str = truth_rules.DEFAULT_RULE
    bands: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_BANDS))
    purpose: str | None = None


def _check_choices(settings: Settings, c: SuiteChoices) -> corpus.CorpusPin:
    if not suite_mod.TASK_ID.match(c.name):
        raise _bad("NAME", "a suite name of lower-case letters, digits and dashes", c.name)
    if (settings.suites_dir / c.name).exists():
        raise _bad("NAME", "a suite that does not exist yet (suite new never overwrites)",
                   c.name, fix=f"choose another name, or add tasks with `sandbench suite "
                   f"add-tasks {c.name}`")
    lock = corpus.lock_path(settings)
    pin = corpus.pin_for(corpus.load_lock(lock), c.corpus, lock)
    if pin.sha is None:
        raise _bad("--corpus", f"a corpus pinned at a commit in {lock}", c.corpus)
    if not c.arms or len(set(c.arms)) != len(c.arms):
        raise _bad("--arms", "a comma-separated list of arms, each once", ",".join(c.arms))
    for arm in c.arms:
        if not (settings.arms_dir / f"{arm}.toml").is_file():
            raise _bad("--arms", f"arms with a spec in {settings.arms_dir}", arm)
    if c.baseline not in c.arms:
        raise _bad("--baseline", f"one of the arms {list(c.arms)}", c.baseline)
    if c.tool_under_test is not None and (c.tool_under_test not in c.arms
                                          or c.tool_under_test == c.baseline):
        raise _bad("--tool-under-test", f"one of the arms {list(c.arms)} other than the "
                   f"baseline", c.tool_under_test)
    for key, value in (("--reps", c.reps), ("--precision-cap", c.precision_cap),
                       ("--top-k", c.top_k)):
        if value < 1:
            raise _bad(key, "a positive integer", value)
    if not c.timeout_s > 0:
        raise _bad("--timeout-s", "a positive number of seconds", c.timeout_s)
    truth_rules.rule_name(c.truth_rule)
    if set(c.bands) != set(DEFAULT_BANDS):
        raise _bad("--band", f"the keys {sorted(DEFAULT_BANDS)}", sorted(c.bands))
    for key, band in c.bands.items():
        whole = key == "references_correct_max_outside"
        if whole and (band != int(band) or band < 0) or not whole and not 0 <= band <= 1:
            raise _bad(f"--band {key}", "a whole number of files, 0 or more" if whole
                       else "a fraction from 0 to 1", band)
    if c.purpose is not None and (not c.purpose.strip() or "\n" in c.purpose):
        raise _bad("--purpose", "one line saying what the suite measures", c.purpose)
    return pin


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


def suite_toml(c: SuiteChoices, pin: corpus.CorpusPin) -> str:
    """suite.toml: the declared choices, each with the comment the existing suites give it."""
    assert pin.sha is not None
    purpose = f" {c.purpose.rstrip('.')}." if c.purpose else ""
    header = (f"The {c.name} suite on corpus `{c.corpus}` ({pin.repo} @{pin.sha[:7]})."
              f"{purpose} Tasks are made from records by `sandbench suite add-tasks`, their "
              "truth by the mechanical rule `truth_rule` names (orchestrator/truth_rules.py), "
              "each task file quoting its rule and the command that printed its sets. "
              "Declared choices are stated in preregistration.md.")
    lines = [
        *textwrap.wrap(header, 96, initial_indent="# ", subsequent_indent="# ",
                       break_long_words=False, break_on_hyphens=False),
        "version = 1",
        f"name = {toml_text.string(c.name)}",
        f"corpus = {toml_text.string(c.corpus)}",
        f"arms = {toml_text.array(list(c.arms))}",
        f"baseline = {toml_text.string(c.baseline)}",
    ]
    if c.tool_under_test is not None:
        lines += ["# The tool under test: the disclosure block opens with its version, build "
                  "and isolation.", f"tool_under_test = {toml_text.string(c.tool_under_test)}"]
    lines += [
        "# Warm repeats after the one cold invocation of each task.",
        f"reps = {c.reps}",
        "# Seconds one invocation may run before its process tree is killed.",
        f"timeout_s = {_number(c.timeout_s)}",
        "# impact: an answer naming more than this many files is over the precision cap.",
        f"precision_cap = {c.precision_cap}",
        "# locate and e2e-retrieval: a ranked answer is cut at its first top_k files.",
        f"top_k = {c.top_k}",
        "# The mechanical rule `sandbench suite add-tasks` computes each task's truth by.",
        f"truth_rule = {toml_text.string(c.truth_rule)}",
        "",
        "[bands]",
        *(f"{key} = {_number(c.bands[key])}" for key in DEFAULT_BANDS),
    ]
    return "\n".join(lines) + "\n"


KIND_RULES = {
    "locate": "the files the fix commits touched that are tracked at the pin (`truth rule fix`, "
              "unioned over the commits); primary = the most changed one that is not a test "
              "file, touched = the others, types = the types the primary declares",
    "e2e-retrieval": "touched = the files the fix commits touched that are tracked at the pin",
    "references": "core = the files naming the symbol as a word in code, admissible = the files "
                  "naming it only in comments or strings (`truth rule refs`; under "
                  "text-v1-declaring-admissible the files declaring it are admissible)",
    "impact": "graded = the fix commits' files beyond the seed that are tracked at the pin, "
              "unioned with every file naming in code a type the seed declares (`truth rule "
              "impact`)",
}


def preregistration(c: SuiteChoices, pin: corpus.CorpusPin, today: str) -> str:
    """preregistration.md: the declared choices, generated from them; the tasks are appended by
    `suite add-tasks`, one section per records file."""
    assert pin.sha is not None
    arms = ", ".join(f"`{a}`" for a in c.arms)
    tool = f"tool under test `{c.tool_under_test}`" if c.tool_under_test else \
        "no tool under test declared"
    bands = c.bands
    parts = [
        f"# {c.name} suite: preregistration\n",
        f"Registered {today} by `sandbench suite new`, before any arm has run against this "
        "suite. Nothing here is changed after a run; a correction is added as a dated note "
        "below the original text, and the original stays.\n",
        *([f"{c.purpose.rstrip('.')}.\n"] if c.purpose else []),
        f"Corpus: `{c.corpus}` = {pin.repo} @ `{pin.sha}` (licence {pin.license}, kind "
        f"{pin.kind}, status {pin.status}).\n",
        "## Declared choices\n",
        f"- **Arms:** {arms}; baseline `{c.baseline}`; {tool}.",
        f"- **Reps:** 1 cold + {c.reps} warm per task; time limit {_number(c.timeout_s)} s per "
        "invocation.",
        f"- **Top-{c.top_k} cut** for `locate` and `e2e-retrieval`: a ranked answer is cut to "
        f"its first {c.top_k} files before grading; an answer without ranks is taken in its "
        "output order.",
        f"- **`e2e-retrieval` band:** `correct` = every touched file in the top {c.top_k}; "
        "`partial` = some.",
        f"- **Impact precision cap: {c.precision_cap} files.** An answer naming more is over "
        "the cap (neither correct nor partial; recall and precision still printed).",
        f"- **Truth rule `{c.truth_rule}`** ({truth_rules.RULES[c.truth_rule]}; stated in "
        "orchestrator/truth_rules.py): each task's truth is computed mechanically from a "
        "record by `sandbench suite add-tasks`, on the pristine corpus and the corpus's "
        "mirror, before any arm runs; no arm's tool is run to produce it. Per kind:",
        *(f"  - `{kind}`: {rule}." for kind, rule in KIND_RULES.items()),
        "- **Bands:**\n",
        "| kind | `correct` | `partial` |",
        "| --- | --- | --- |",
        "| `locate` | names the primary fix file | names another touched file, or the right "
        "type in the wrong file |",
        f"| `references` | ≥{bands['references_correct_recall']:.0%} of the core set with "
        f"≤{_number(bands['references_correct_max_outside'])} files outside core ∪ "
        f"admissible | ≥{bands['references_partial_recall']:.0%} |",
        "| `impact` | every file in the graded set appears, under the precision cap | at least "
        f"{bands['impact_partial_fraction']:.0%} of it |",
        f"| `e2e-retrieval` | every touched file in the top {c.top_k} | some touched file in "
        f"the top {c.top_k} |",
    ]
    return "\n".join(_wrap_line(line) for line in parts) + "\n"


def _wrap_line(line: str, width: int = 96) -> str:
    """A paragraph or a list item wrapped at `width` (a table row, a heading stay whole)."""
    if line.startswith(("|", "#")):
        return line
    indent = " " * (len(line) - len(line.lstrip(" ")) + (2 if line.lstrip().startswith("- ")
                                                         else 0))
    return textwrap.fill(line, width, subsequent_indent=indent, break_long_words=False,
                         break_on_hyphens=False) + ("\n" if line.endswith("\n") else "")


def new_suite(settings: Settings, c: SuiteChoices, today: str | None = None) -> Path:
    """Create suites/NAME with suite.toml and preregistration.md, whole or not at all."""
    pin = _check_choices(settings, c)
    today = today or datetime.datetime.now(datetime.UTC).date().isoformat()
    settings.suites_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{c.name}.new-", dir=settings.suites_dir))
    try:
        (staging / "tasks").mkdir()
        atomic_write_text(staging / "suite.toml", suite_toml(c, pin))
        atomic_write_text(staging / suite_mod.PREREGISTRATION, preregistration(c, pin, today))
        staging.chmod(0o755)
        dest = settings.suites_dir / c.name
        if dest.exists():  # made since the check: still never overwrite
            raise _bad("NAME", "a suite that does not exist yet", c.name)
        os.rename(staging, dest)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return dest


# -- suite add-tasks ----------------------------------------------------------------------------

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
    """The records file: `version = 1`, an optional `language` (default csharp) and one
    `[[record]]` table per record; (language, records), or one InputError naming the key."""
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

    def __init__(self, git: Git, settings: Settings, corpus_id: str, rule: str,
                 language: str, mirror: Path | None, command: str) -> None:
        self.git, self.rule, self.language, self.mirror = git, rule, language, mirror
        self.ext = LANG_EXT[language]
        self.corpus = corpus_id
        self.command = command
        lock = corpus.lock_path(settings)
        self.pin = corpus.pin_for(corpus.load_lock(lock), corpus_id, lock)
        self.pristine = corpus.corpus_dir(settings, corpus_id)
        head = git.run("rev-parse", "--verify", "-q", "HEAD^{commit}", cwd=self.pristine,
                       check=False) if (self.pristine / ".git").is_dir() else None
        self.sha = self.pin.sha or ""
        if head is None or not self.sha or head.stdout.decode().strip() != self.sha:
            raise InputError(f"corpus {corpus_id!r} is not fetched at its pin "
                             f"({self.pristine})", fix=self.pin.fetch_hint(),
                             file=str(self.pristine))
        self.sources = truth_rules.Sources(git, self.pristine)
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
            found = self.git.run("rev-parse", "--verify", "-q", f"{sha}^{{commit}}",
                                 cwd=self.mirror, check=False)
            if found.returncode != 0:
                raise self.bad(record, "fix", f"a commit of the mirror {self.mirror}", sha)
            full_sha = found.stdout.decode().strip()
            after = self.git.run("merge-base", "--is-ancestor", self.sha, full_sha,
                                 cwd=self.mirror, check=False)
            if after.returncode != 0:
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
    rows = truth_rules.fix_files(ctx.git, ctx.mirror, shas, ctx.ext) if ctx.mirror else []
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
    if not isinstance(corpus_id := declared.get("corpus"), str):
        raise _bad("corpus", "the id of a corpus in corpus.lock", corpus_id,
                   folder / "suite.toml")
    language, records = read_records(records_file)
    with clean_git() as git:
        ctx = _Context(git, settings, corpus_id, rule, language, mirror, command)
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

"""A hand-made run directory and sealed suite, for the scorer's and the report's tests: real
files in the run directory layout (run.json, records, stdout, state, guards, a git corpus copy
at a pinned commit), no engine. The tests at the end check the builder itself."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator import line_index, suite as suite_mod
from orchestrator.fsutil import canonical_json, sha256_file
from orchestrator.score.inputs import SOURCE_ROOT

RUN_ID = "run-mini-20260101T000000Z-abcdef"
KINDS = ("locate", "references", "impact", "e2e-retrieval")
BANDS = {"references_correct_recall": 0.75, "references_correct_max_outside": 2,
         "references_partial_recall": 0.4, "impact_partial_fraction": 0.5}


@dataclass(frozen=True)
class R:
    """A parsed row as the correctness grader reads it."""
    path: str
    line: int | None = 1
    reason: str | None = "x"


CORPUS_FILES = {
    "src/a.cs": "class A {\n  Money m;\n}\n",
    "src/b.cs": "class B {\n  Money m;\n  int x;\n}\n",
    "src/c.cs": "class C { }\n",
    "src/d.cs": "class D { Money m; }",
    "web/e.ts": "export const e = 1;\n",
}
TASKS = {
    "loc-a": {"kind": "locate", "language": "csharp", "input": {"ticket": "a breaks"},
              "truth": {"primary": "src/a.cs", "touched": ["src/b.cs"], "types": ["A"]}},
    "ref-money": {"kind": "references", "language": "csharp", "input": {"symbol": "Money"},
                  "truth": {"core": ["src/a.cs", "src/b.cs", "src/d.cs"],
                            "admissible": ["src/c.cs"]}},
    "imp-a": {"kind": "impact", "language": "csharp", "input": {"seed": "src/a.cs"},
              "truth": {"graded": ["src/b.cs", "src/d.cs"]}},
    "e2e-a": {"kind": "e2e-retrieval", "language": "csharp", "input": {"ticket": "a again"},
              "truth": {"touched": ["src/a.cs"]}},
}
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_AUTHOR_DATE": "2020-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2020-01-01T00:00:00Z", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.devnull}


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(value)


def toml(data: dict[str, Any]) -> str:
    lines = [f"{k} = {toml_value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    for k, v in data.items():
        if isinstance(v, dict):
            lines.append(f"\n[{k}]")
            lines += [f"{kk} = {toml_value(vv)}" for kk, vv in v.items()]
    return "\n".join(lines) + "\n"


def record(arm: str, argv: list[str], stdout: bytes, stderr: bytes, outcome: str,
           wall_ns: int | None, flags: list[str] | None = None,
           bytes_total: int | None = None) -> dict[str, Any]:
    def stream(name: str, data: bytes, total: int | None) -> dict[str, Any]:
        return {"path": name, "bytes_total": len(data) if total is None else total,
                "bytes_kept": len(data), "truncated": total is not None and total > len(data),
                "sha256": hashlib.sha256(data).hexdigest()}
    return {"schema": "sandbench.exec-record/1", "run_id": RUN_ID, "arm": arm, "argv": argv,
            "env": {"HOME": "/state/home"}, "workdir": "/corpus", "user": "1000:1000",
            "image_id": "sha256:" + "0" * 64, "container_id": "c0ffee",
            "limits": {"memory_bytes": 1 << 30, "pids": 256, "cpus": 1.0, "tmp_bytes": 1 << 26,
                       "timeout_s": 60.0, "grace_s": 2.0, "cap_bytes": 8 << 20},
            "started_at": "2026-01-01T00:00:00Z",
            "timing": {"wall_ns": wall_ns, "user_us": 1, "sys_us": 1, "maxrss_kb": 1,
                       "host_bracket_ns": (wall_ns or 0) + 50_000_000},
            "exit": {"exit_code": 0 if outcome == "ok" else 1, "signal": None,
                     "timed_out": outcome == "timeout", "host_timed_out": False,
                     "oom_killed": False, "oom_kills": 0, "spawn_error": None,
                     "stray_killed": 0},
            "stdout": stream("stdout", stdout, bytes_total), "stderr": stream("stderr", stderr,
                                                                              None),
            "helper": {"version": "0.1.0", "exit_code": 0, "errors": [], "protocol_error": None,
                       "stderr_tail": ""},
            "outcome": outcome, "flags": flags or []}


@dataclass
class Cell:
    stdout: bytes
    outcome: str = "ok"
    walls: tuple[int | None, ...] = (30_000_000, 10_000_000, 11_000_000)
    stderr: bytes = b""
    warm_outcomes: tuple[str, ...] | None = None
    flags: tuple[list[str], ...] | None = None
    warm_stdouts: tuple[bytes, ...] | None = None  # REP 1.. print these (default: stdout)


@dataclass
class Arm:
    name: str
    parser: str = "rg"
    kinds: tuple[str, ...] = KINDS
    unavailable: str | None = None
    refused: str | None = None
    setup_wall_ns: int | None = None
    install_seconds: float | None = 10.0
    install_build_jobs: int = 1
    state_bytes: int = 0
    tool_version: str = ""
    env: dict[str, str] = field(default_factory=lambda: {"HOME": "/state/home"})


@dataclass
class RunBuilder:
    """Writes a sealed suite under ROOT/project/suites/mini and a complete run under
    ROOT/bench/runs/RUN_ID; `cells[(arm, task)]` is what each invocation printed."""

    root: Path
    arms: list[Arm] = field(default_factory=lambda: [Arm("rg", tool_version="ripgrep 13.0.0"),
                                                      Arm("peer")])
    cells: dict[tuple[str, str], Cell] = field(default_factory=dict)
    reps: int = 2
    top_k: int = 3
    precision_cap: int = 3
    tasks: dict[str, dict[str, Any]] = field(default_factory=lambda: dict(TASKS))
    pin_lines: bool = True  # the run saved its line index, read from the pristine copy
    deviations: list[str] = field(default_factory=list)
    sealed_overrides: dict[str, str] = field(default_factory=dict)
    tool_under_test: str | None = None  # suite.toml's tool_under_test, when set
    suite_toml_tail: str = ""  # TOML text appended to suite.toml ([grading], ...)
    task_toml_tails: dict[str, str] = field(default_factory=dict)  # task id -> TOML appended

    @property
    def suite_dir(self) -> Path:
        return self.root / "project" / "suites" / "mini"

    @property
    def run_dir(self) -> Path:
        return self.root / "bench" / "runs" / RUN_ID

    def _corpus(self, dest: Path) -> str:
        for rel, text in CORPUS_FILES.items():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            (dest / rel).write_text(text)
        env = {**os.environ, **GIT_ENV}
        subprocess.run(["git", "init", "-q", str(dest)], check=True, env=env)
        subprocess.run(["git", "-C", str(dest), "add", "."], check=True, env=env)
        subprocess.run(["git", "-C", str(dest), "commit", "-q", "-m", "pin"], check=True, env=env)
        return subprocess.run(["git", "-C", str(dest), "rev-parse", "HEAD"], check=True,
                              env=env, capture_output=True, text=True).stdout.strip()

    def arm_spec(self, arm: Arm) -> dict[str, Any]:
        tasks = {k: [f"{arm.name}-{k}", "{" + _input_key(k) + "}"] for k in arm.kinds}
        not_attempted = {k: {"reason": f"{arm.name} cannot {k}", "source": f"{arm.name} --help"}
                         for k in KINDS if k not in arm.kinds}
        return {"name": arm.name, "image": arm.name, "description": f"the {arm.name} arm",
                "env": arm.env, "parser": arm.parser, "limits": {},
                "setup": None if arm.setup_wall_ns is None else {"argv": [arm.name, "index"],
                                                                 "timeout_s": 600.0},
                "tasks": tasks, "not_attempted": not_attempted}

    def build(self) -> RunBuilder:
        sha = self._corpus(self.root / "pin")
        suite_text = toml({"version": 1, "name": "mini", "corpus": "mini",
                           "arms": [a.name for a in self.arms], "baseline": self.arms[0].name,
                           **({} if self.tool_under_test is None
                              else {"tool_under_test": self.tool_under_test}),
                           "reps": self.reps, "timeout_s": 60,
                           "precision_cap": self.precision_cap, "top_k": self.top_k,
                           "bands": BANDS})
        suite_text = suite_text.replace("precision_cap =", "# impact: the cap.\nprecision_cap =")
        suite_text += self.suite_toml_tail
        (self.suite_dir / "tasks").mkdir(parents=True)
        (self.suite_dir / "suite.toml").write_text(suite_text)
        (self.suite_dir / "preregistration.md").write_text("# predictions\n")
        for task_id, task in self.tasks.items():
            body = {"id": task_id, "kind": task["kind"], "language": task["language"],
                    "explanation": "hand-made", "input": task["input"], "truth": task["truth"]}
            (self.suite_dir / "tasks" / f"{task_id}.toml").write_text(
                toml(body) + self.task_toml_tails.get(task_id, ""))
        inputs = {f"suites/mini/{p.relative_to(self.suite_dir).as_posix()}": sha256_file(p)
                  for p in sorted(self.suite_dir.rglob("*")) if p.is_file()}
        specs = {a.name: self.arm_spec(a) for a in self.arms}
        for a in self.arms:
            inputs[f"arms/{a.name}.toml"] = hashlib.sha256(a.name.encode()).hexdigest()
        for file in suite_mod.scorer_sources(SOURCE_ROOT, {a.parser for a in self.arms}):
            inputs[file.relative_to(SOURCE_ROOT).as_posix()] = sha256_file(file)
        inputs.update(self.sealed_overrides)
        pin = {"id": "mini", "repo": "example/mini", "sha": sha}
        manifest = self.suite_dir / "manifest.json"
        manifest.write_text(canonical_json({"version": 1, "suite": "mini", "corpus": pin,
                                            "inputs": inputs}))
        run = {
            "schema": "sandbench.run/1", "run_id": RUN_ID, "sandbench_version": "0.1.0",
            "date": "2026-01-01", "started_at": "2026-01-01T00:00:00Z",
            "status": "refused-arms" if any(a.refused for a in self.arms) else "complete",
            "suite": {"name": "mini", "manifest_sha256": sha256_file(manifest),
                      "reps": self.reps, "timeout_s": 60.0, "baseline": self.arms[0].name,
                      "precision_cap": self.precision_cap, "top_k": self.top_k, "bands": BANDS},
            "corpus": {**pin, "tracked_files": len(CORPUS_FILES),
                       "languages": {"csharp": 4, "typescript": 1},
                       "pristine_digest_before": "d" * 64, "pristine_digest_after": "d" * 64},
            "arms": {}, "engine": {"version": "26.1.5", "api_version": "1.45",
                                   "kernel": "6.1.0", "os": "linux"},
            "host": {"arch": "x86_64", "cores": 2, "memory_bytes": 8 << 30, "os": "Linux"},
            "user": "1000:1000", "deviations": list(self.deviations), "resumes": [],
        }
        for a in self.arms:
            entry: dict[str, Any] = {
                "image": a.name, "image_id": "sha256:" + "1" * 64, "tool_version": a.tool_version,
                "spec_sha256": inputs[f"arms/{a.name}.toml"], "spec": specs[a.name],
                "unavailable": a.unavailable, "install_seconds": a.install_seconds,
                "install_build_jobs": a.install_build_jobs, "image_size_bytes": 1000,
                "artifact": None}
            if a.refused:
                entry["refused"] = a.refused
            run["arms"][a.name] = entry
            if a.unavailable:
                continue
            guards = self.run_dir / "guards" / a.name
            guards.mkdir(parents=True)
            (guards / "verdict.json").write_text(json.dumps(
                [{"guard": "network_mode", "ok": not a.refused, "side": "outside",
                  "expected": "none", "found": "none"}]))
            if a.refused:
                continue
            entry["state_bytes"] = a.state_bytes
            (self.run_dir / "arms" / a.name).mkdir(parents=True)
            (self.run_dir / "arms" / a.name / "state.json").write_text(json.dumps(
                {"corpus_changes": [], "state_files": [["home/x", a.state_bytes]] if
                 a.state_bytes else [], "state_bytes": a.state_bytes, "corpus_added_bytes": 0}))
            if a.setup_wall_ns is not None:
                self._write_cell(a.name, self.run_dir / "cells" / a.name / "_setup",
                                 [a.name, "index"], b"", b"", "ok", a.setup_wall_ns, [])
            for task_id, task in self.tasks.items():
                if task["kind"] not in a.kinds:
                    continue
                cell = self.cells.get((a.name, task_id), Cell(b""))
                argv = [f"{a.name}-{task['kind']}", next(iter(task["input"].values()))]
                for rep in range(self.reps + 1):
                    outcome = cell.outcome if rep == 0 else (
                        cell.warm_outcomes[rep - 1] if cell.warm_outcomes else "ok")
                    wall = cell.walls[rep] if rep < len(cell.walls) else cell.walls[-1]
                    flags = cell.flags[rep] if cell.flags else []
                    stdout = cell.warm_stdouts[rep - 1] if rep and cell.warm_stdouts \
                        else cell.stdout
                    self._write_cell(a.name, self.run_dir / "cells" / a.name / task_id /
                                     str(rep), argv, stdout, cell.stderr, outcome, wall,
                                     flags)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / "run.json").write_text(canonical_json(run))
        if self.pin_lines:
            index = line_index.load_index(self.run_dir, sha, self.root / "pin")
            (self.run_dir / line_index.PIN_LINES).write_text(line_index.pin_lines_text(index))
        return self

    def _write_cell(self, arm: str, cell_dir: Path, argv: list[str], stdout: bytes,
                    stderr: bytes, outcome: str, wall: int | None, flags: list[str]) -> None:
        cell_dir.mkdir(parents=True)
        (cell_dir / "stdout").write_bytes(stdout)
        (cell_dir / "stderr").write_bytes(stderr)
        (cell_dir / "record.json").write_text(canonical_json(
            record(arm, argv, stdout, stderr, outcome, wall, flags)))


def _input_key(kind: str) -> str:
    return {"locate": "ticket", "e2e-retrieval": "ticket", "references": "symbol",
            "impact": "seed"}[kind]


def rg_rows(*rows: str) -> bytes:
    """rg's path:line:text lines."""
    return "".join(r + "\n" for r in rows).encode()


def test_the_builder_writes_a_run_the_scorer_loads(tmp_path: Path) -> None:
    from orchestrator.score.inputs import load
    built = RunBuilder(tmp_path).build()
    inputs = load(built.run_dir, built.suite_dir)
    assert [a.name for a in inputs.arms] == ["rg", "peer"]
    assert len(inputs.reps[("rg", "loc-a")]) == 3


def test_the_builder_seals_its_suite(tmp_path: Path) -> None:
    built = RunBuilder(tmp_path).build()
    manifest = json.loads((built.suite_dir / "manifest.json").read_text())
    assert "suites/mini/tasks/loc-a.toml" in manifest["inputs"]
    assert "orchestrator/parsers/__init__.py" in manifest["inputs"]
    assert "orchestrator/parsers/rg.py" in manifest["inputs"]

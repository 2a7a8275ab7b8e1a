"""The committed schemas are valid JSON Schema, and each new one refuses a bad document with
an InputError naming the file and the dotted key, worded as the readers always worded it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from orchestrator import arms, corpus
from orchestrator.errors import InputError
from orchestrator.kinds import ALL_KINDS
from orchestrator.settings import PACKAGE_DIR
from orchestrator.sandbox.shared_checks import load_schema
from orchestrator.isolation.policy import GuardPolicy

REPO = PACKAGE_DIR.parent
POLICY = Path(__file__).parent / "bad_input/fixtures/guards/rg/policy.json"


@pytest.mark.parametrize("path", sorted((PACKAGE_DIR / "schemas").glob("*.schema.json")),
                         ids=lambda p: p.name)
def test_every_schema_is_a_valid_schema(path: Path) -> None:
    Draft202012Validator.check_schema(json.loads(path.read_text()))


def test_the_schemas_name_the_kinds_the_code_knows() -> None:
    arm = load_schema("arm.schema.json")["properties"]
    assert list(arm["tasks"]["properties"]) == list(ALL_KINDS)
    assert list(arm["not_attempted"]["properties"]) == list(ALL_KINDS)
    assert arm["tasks"]["x-unknown"] == f"a task kind among {list(ALL_KINDS)}"
    assert set(arm["limits"]["properties"]) == {*arms.MIB_LIMITS, "pids", "cpus"}


def _arm(tmp_path: Path, edit: str) -> Path:
    text = (REPO / "arms/rg.toml").read_text()
    path = tmp_path / "rg.toml"
    key = edit.split(" = ")[0]
    lines = text.splitlines()
    if edit.startswith("["):  # a table, after the rest
        lines.append(edit)
    else:  # a top-level key, replacing the one written there
        lines = [edit] + [line for line in lines if not line.startswith(key + " =")]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(("edit", "message"), [
    ('colour = "red"', "colour: expected one of ['description', 'env', 'image', 'kind', "
     "'limits', 'mcp', 'not_attempted', 'oracle', 'parser', 'protocol', 'setup', 'tasks'], "
     "found 'colour'"),
    ('protocol = "lsp"', "protocol: expected \"cli\" (the default) or \"mcp\", found 'lsp'"),
    ("description = 1", "description: expected a string, found 1"),
    ("[limits]\ncpus = true", "limits.cpus: expected a positive number, found True"),
    ("[limits]\npid = 3", "limits.pid: expected one of ['corpus_margin_mib', 'cpus', "
     "'memory_mib', 'out_mib', 'pids', 'state_mib', 'tmp_mib'], found 'pid'"),
    ("[tasks.lookup]\nargv = [\"x\"]", "tasks.lookup: expected a task kind among "
     "['locate', 'references', 'impact', 'e2e-retrieval', 'call-edges', 'test-edges'], "
     "found 'lookup'"),
    ("[setup]\nargv = [\"x\", 2]", "setup.argv: expected a non-empty list of strings, "
     "found ['x', 2]"),
    ("[setup]\ncommand = [\"x\"]", "setup: expected a table with argv and an optional "
     "timeout_s, found {'command': ['x']}"),
])
def test_the_arm_schema_refuses(tmp_path: Path, edit: str, message: str) -> None:
    path = _arm(tmp_path, edit)
    with pytest.raises(InputError) as err:
        arms.load_arm(path)
    assert err.value.what == f"{path}: {message}"
    assert err.value.data["file"] == str(path)


@pytest.mark.parametrize(("old", "new", "message"), [
    ('kind = "demo"', "kind = 1", "demo.kind: expected a string, found 1"),
    ('kind = "demo"', 'kinds = "demo"', "demo.kinds: expected only the fields id, repo, url, "
     "sha, license, kind, status, note, found 'kinds'"),
    ('kind = "demo"', 'kind = "Demo"', "demo.kind: expected target or held-out or demo, "
     "found 'Demo'"),
    ('license = "Apache-2.0"\nkind = "demo"', 'kind = "demo"',
     "demo.license: expected the field to be present, found None"),
    ("version = 1", 'version = "1"', "version: expected version = 1, found '1'"),
])
def test_the_corpus_lock_schema_refuses(tmp_path: Path, old: str, new: str,
                                        message: str) -> None:
    text = (REPO / "corpus.lock").read_text()
    head, demo = text.split("[demo]")
    assert old in (head if old == "version = 1" else demo)
    path = tmp_path / "corpus.lock"
    path.write_text((head.replace(old, new) if old == "version = 1" else head)
                    + "[demo]" + (demo if old == "version = 1" else demo.replace(old, new)))
    with pytest.raises(InputError) as err:
        corpus.load_lock(path)
    file, _, rest = err.value.what.partition(": ")
    assert file.startswith(str(path)) and rest == message
    assert err.value.data["key"] == message.split(":")[0]


def test_a_sha_with_a_trailing_newline_is_refused(tmp_path: Path) -> None:
    """JSON Schema patterns run with Python's re.search, where `$` also matches before a
    final newline: the lock's patterns forbid it explicitly."""
    text = (REPO / "corpus.lock").read_text()
    sha = corpus.load_lock(REPO / "corpus.lock")["demo"].sha
    path = tmp_path / "corpus.lock"
    path.write_text(text.replace(f'sha = "{sha}"', f'sha = "{sha}\\n"'))
    with pytest.raises(InputError, match=r"demo\.sha: expected a full commit sha"):
        corpus.load_lock(path)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.update(colour="red"), "colour: expected one of ['arm', 'engine', "
     "'engine_pids', 'env', 'exec_path', 'executor_user', 'helper', 'image_id', 'labels', "
     "'memory_bytes', 'mounts', 'nano_cpus', 'pids', 'run_id', 'runtime', 'tmpfs', "
     "'tool_writable', 'unbounded_limits_accepted', 'user'], found 'colour'"),
    (lambda d: d.update(runtime="kata"), "runtime: expected 'runc' or 'runsc', found 'kata'"),
    (lambda d: d.update(pids="512"), "pids: expected int, found '512'"),
    (lambda d: d.pop("arm"), "arm: expected present, found None"),
    (lambda d: d.update(env=["A=1", 2]), "env: expected list[str], found ['A=1', 2]"),
    (lambda d: d.update(user="root"), "user: expected uid:gid, found 'root'"),
    (lambda d: d["mounts"][1].pop("target"), "mounts[1].target: expected str, found None"),
])
def test_the_guard_policy_schema_refuses(tmp_path: Path, edit, message: str) -> None:
    data = json.loads(POLICY.read_text())
    edit(data)
    path = tmp_path / "policy.json"
    with pytest.raises(InputError) as err:
        GuardPolicy.from_json(data, path)
    assert err.value.what == f"{path}: {message}"

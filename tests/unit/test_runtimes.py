"""An arm's container runtime (runc or runsc) is one isolation setting: declared by the suite
or the run, checked from outside (the engine's runtime) and inside (the kernel the probe
talked to), and carried by every output the table folds."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from orchestrator import corpus, suite
from orchestrator.sandbox import runtimes
from orchestrator.errors import InputError, SandbenchError
from orchestrator.sandbox.container import Sandbox
from orchestrator.sandbox.spec import SandboxSpec
from orchestrator.exports import compose, k8s
from orchestrator.isolation import folds, guards, inside
from orchestrator.isolation.policy import GuardPolicy, GuardResult
from test_isolation import spec_of as isolation_spec

REPO = Path(__file__).resolve().parents[2]
IMAGE_ENV = ["PATH=/usr/bin:/bin"]
# The status lines and root mount the helper's probe read in a real container of this host
# under each runtime (Debian's runsc 0.0~20221219 with --oci-seccomp).
ZERO = "0000000000000000"
STATUS = {
    "runc": {"CapInh": ZERO, "CapPrm": ZERO, "CapEff": ZERO, "CapBnd": ZERO, "CapAmb": ZERO,
             "NoNewPrivs": 1, "Seccomp": 2},
    "runsc": {"CapInh": ZERO, "CapPrm": ZERO, "CapEff": ZERO, "CapBnd": ZERO, "CapAmb": None,
              "NoNewPrivs": None, "Seccomp": 2},
}
ROOT = {
    "runc": {"mount_point": "/", "fstype": "overlay", "source": "overlay",
             "options": "ro,relatime",
             "super_options": "rw,lowerdir=/var/lib/docker/overlay2/l/A,upperdir=/var/lib/"
                              "docker/overlay2/b/diff,workdir=/var/lib/docker/overlay2/b/work"},
    "runsc": {"mount_point": "/", "fstype": "9p", "source": "none", "options": "ro",
              "super_options": "ro,trans=fd,rfdno=4,wfdno=4,aname=/,dfltuid=4294967294,"
                               "dfltgid=4294967294,cache=fscache,overlayfs_stale_read"},
}


def _spec(tmp_path: Path, runtime: str) -> SandboxSpec:
    return isolation_spec(tmp_path, runtime=runtime)


def _policy(spec: SandboxSpec) -> GuardPolicy:
    return Sandbox(None, spec)._policy(spec.image_id, IMAGE_ENV)  # type: ignore[arg-type]


def _facts(runtime: str, **status: Any) -> dict[str, Any]:
    return {"status": {**STATUS[runtime], **status}, "mounts": [ROOT[runtime]]}


def _inside(policy: GuardPolicy, facts: dict[str, Any]) -> dict[str, GuardResult]:
    return {r.guard: r for r in guards.check_inside(policy, {"facts": facts})}


# -- the suite's choice and the run's override -----------------------------------------------

def test_a_run_override_wins_over_the_suite_and_the_suite_over_the_default() -> None:
    choice = runtimes.choice({"default": "runsc", "arms": {"rg": "runc"}})
    assert (choice.of("rg"), choice.of("ctags")) == ("runc", "runsc")
    assert choice.of("rg", "runsc") == "runsc"
    assert runtimes.choice(None).of("rg") == "runc"


@pytest.mark.parametrize(("table", "key", "found"), [
    ({"default": "kata"}, "runtime.default", "kata"),
    ({"arms": {"rg": "gvisor"}}, "runtime.arms.rg", "gvisor"),
    ({"arms": {"grep": "runsc"}}, "runtime.arms.grep", "grep"),
    ({"kernel": "runsc"}, "runtime.kernel", "kernel"),
    ({"arms": ["rg"]}, "runtime.arms", ["rg"]),
    ("runsc", "runtime", "runsc"),
])
def test_a_bad_runtime_table_names_its_key(tmp_path: Path, table: Any, key: str,
                                           found: Any) -> None:
    assert runtimes.problem(table, ["rg", "ctags"])[:1] == (key,)  # type: ignore[index]
    assert runtimes.problem(table, ["rg", "ctags"])[2] == found  # type: ignore[index]


def test_a_suite_declares_its_runtimes_and_a_bad_one_is_refused(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    folder = suites / "demo"
    shutil.copytree(REPO / "suites" / "demo", folder)
    shutil.copytree(REPO / "arms", tmp_path / "arms")
    shutil.copy(REPO / "corpus.lock", tmp_path / "corpus.lock")
    toml = folder / "suite.toml"
    text = toml.read_text()
    toml.write_text(text + '\n[runtime]\ndefault = "runsc"\narms = { rg = "runc" }\n')
    loaded = suite.load_suite(suites, "demo")
    assert loaded.runtime.of("rg") == "runc"
    assert loaded.runtime.of("ctags") == "runsc"
    toml.write_text(text + '\n[runtime]\ndefault = "kata"\n')
    with pytest.raises(InputError, match=r"runtime\.default: expected one of \['runc', "
                                         r"'runsc'\], found 'kata'"):
        suite.load_suite(suites, "demo")


# -- the setting in every output -------------------------------------------------------------

def test_runsc_reaches_the_engine_the_policy_compose_and_the_job(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "runsc")
    assert spec.create_kwargs()["runtime"] == "runsc"
    assert _policy(spec).to_json()["runtime"] == "runsc"
    assert compose.service(spec)["runtime"] == "runsc"
    assert folds.k8s_parts(spec)["pod"]["runtimeClassName"] == "sandbench-runsc"
    runc = _spec(tmp_path, "runc")
    assert runc.create_kwargs()["runtime"] == "runc"
    assert "runtimeClassName" not in folds.k8s_parts(runc)["pod"]


def test_the_job_of_a_runsc_arm_and_its_runtime_class_validate(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "runsc")
    the_suite = suite.load_suite(REPO / "suites", "demo")
    pin = corpus.pin_for(corpus.load_lock(REPO / "corpus.lock"), the_suite.corpus,
                         REPO / "corpus.lock")
    job = k8s.job(spec, the_suite, pin, "sandbench/x:0", 1)
    runtime_class = k8s.runtime_class("runsc", spec.run_id)
    assert runtime_class["handler"] == "runsc"
    assert job["spec"]["template"]["spec"]["runtimeClassName"] == \
        runtime_class["metadata"]["name"]
    assert k8s.validate([runtime_class, job]) == 2
    # A run that verified runsc and a Job without the class differ on the runtime.
    del job["spec"]["template"]["spec"]["runtimeClassName"]
    assert [d for d in k8s.drift(job, _policy(spec), IMAGE_ENV) if d.startswith("runtime")] \
        == ["runtime: policy 'sandbench-runsc', manifest None"]


# -- the outside guard -----------------------------------------------------------------------

def test_an_arm_that_claims_runsc_on_a_runc_container_is_refused(tmp_path: Path) -> None:
    policy = _policy(_spec(tmp_path, "runsc"))
    found = {r.guard: r for r in guards.check_outside(
        policy, {"HostConfig": {"Runtime": "runc"}}, {})}["runtime"]
    assert (found.ok, found.expected, found.found) == (False, "runsc", "runc")
    held = {r.guard: r for r in guards.check_outside(
        policy, {"HostConfig": {"Runtime": "runsc"}}, {})}["runtime"]
    assert held.ok


def test_a_policy_recorded_before_runtimes_has_no_runtime_or_kernel_guard(
        tmp_path: Path) -> None:
    """Stored verdicts of older runs are recomputed by audit: they must not grow guards."""
    policy = _policy(_spec(tmp_path, "runc"))
    old = dataclasses.replace(policy, values={k: v for k, v in policy.values.items()
                                              if k != "runtime"})
    assert old.runtime is None
    assert "runtime" not in [r.guard for r in guards.check_outside(old, {}, {})]
    assert "kernel" not in _inside(old, _facts("runc"))
    stored = old.to_json()
    assert "runtime" not in stored
    assert GuardPolicy.from_json(stored, Path("policy.json")).runtime is None


# -- the pids limit under runsc --------------------------------------------------------------

def test_gvisors_own_pids_are_added_to_the_arms_under_runsc_alone() -> None:
    assert runtimes.engine_pids(runtimes.RUNC, 512) == 512
    assert runtimes.runsc_pids_overhead(64) == runtimes.RUNSC_PIDS_IDLE + \
        runtimes.RUNSC_PIDS_PER_TASK * 64
    assert runtimes.engine_pids(runtimes.RUNSC, 64) == 64 + runtimes.runsc_pids_overhead(64)
    # What was measured (runtimes.py): 1,087 host pids with 100 tasks of the tool's, 64 idle.
    assert runtimes.engine_pids(runtimes.RUNSC, 100) >= 1087
    assert runtimes.runsc_pids_overhead(0) >= 64


def test_a_runsc_arm_asks_the_engine_for_more_and_states_both(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "runsc")
    declared, asked = spec.limits.pids, runtimes.engine_pids("runsc", spec.limits.pids)
    assert asked > declared
    assert spec.create_kwargs()["pids_limit"] == compose.service(spec)["pids_limit"] == asked
    policy = _policy(spec)
    assert (policy.values["pids"], policy.values["engine_pids"]) == (declared, asked)
    assert folds.record_limits(spec.limits, "runsc")["pids"] == declared
    assert folds.record_limits(spec.limits, "runsc")["engine_pids"] == asked
    checked = {r.guard: r for r in guards.check_outside(
        policy, {"HostConfig": {"PidsLimit": asked}}, {})}["pids_limit"]
    assert (checked.ok, checked.expected) == (True, asked)
    short = {r.guard: r for r in guards.check_outside(
        policy, {"HostConfig": {"PidsLimit": declared}}, {})}["pids_limit"]
    assert (short.ok, short.expected, short.found) == (False, asked, declared)
    runc = _spec(tmp_path, "runc")
    assert runc.create_kwargs()["pids_limit"] == runc.limits.pids
    assert "engine_pids" not in _policy(runc).to_json()
    assert "engine_pids" not in folds.record_limits(runc.limits, "runc")


def test_the_pids_benchmark_holds_each_count_against_the_engines_limit() -> None:
    from benchmarks import runsc_pids

    # A count measured with the pinned build (python -m benchmarks.runsc_pids): covered.
    assert runsc_pids.summary(100, 39, 891, 1093) == {
        "k": 100, "idle": 39, "live": 891, "after": 1093, "per_task": 10.33, "covered": True}
    # One host pid past the engine's limit for the count's tasks is not.
    over = runtimes.engine_pids("runsc", 100 + runsc_pids.CELL_TASKS) + 1
    assert runsc_pids.summary(100, 39, 891, over)["covered"] is False


@pytest.mark.parametrize("runtime", [None, "runc", "runsc"])
def test_a_policy_recorded_before_engine_pids_keeps_its_verdict(tmp_path: Path,
                                                                runtime: str | None) -> None:
    """Runs recorded before (no runtime, runc, or runsc asked for the arm's pids alone) are
    re-audited against the limit they asked for, so their stored verdicts stand."""
    policy = _policy(_spec(tmp_path, runtime or "runc"))
    values = {k: v for k, v in policy.values.items() if k != "engine_pids"}
    if runtime is None:
        del values["runtime"]
    else:
        values["runtime"] = runtime
    stored = dataclasses.replace(policy, values=values).to_json()
    old = GuardPolicy.from_json(stored, Path("policy.json"))
    checked = {r.guard: r for r in guards.check_outside(
        old, {"HostConfig": {"PidsLimit": old.values["pids"]}}, {})}["pids_limit"]
    assert (checked.ok, checked.expected) == (True, old.values["pids"])


# -- the inside guards -----------------------------------------------------------------------

@pytest.mark.parametrize("runtime", runtimes.RUNTIMES)
def test_the_kernel_guard_holds_for_the_kernel_the_runtime_gives(tmp_path: Path,
                                                                 runtime: str) -> None:
    other = "runc" if runtime == "runsc" else "runsc"
    policy = _policy(_spec(tmp_path, runtime))
    assert _inside(policy, _facts(runtime))["kernel"].ok
    wrong = _inside(policy, _facts(other))["kernel"]
    assert not wrong.ok and wrong.found == inside.kernel_of(_facts(other))


def test_a_kernel_whose_facts_disagree_is_unknown() -> None:
    """A gofer root with a NoNewPrivs line (or the reverse) is neither kernel."""
    mixed = {"status": STATUS["runc"], "mounts": [ROOT["runsc"]]}
    assert inside.kernel_of(mixed).startswith("unknown")
    assert inside.kernel_of({"status": STATUS["runsc"], "mounts": [ROOT["runc"]]}) \
        .startswith("unknown")
    assert inside.kernel_of({}).startswith("unknown")


@pytest.mark.parametrize(("guard", "line", "stands_for"), [
    ("cap_amb", "CapAmb", "CapPrm"), ("no_new_privs", "NoNewPrivs", "CapBnd")])
def test_a_line_gvisor_does_not_print_is_stood_for_only_under_runsc(
        tmp_path: Path, guard: str, line: str, stands_for: str) -> None:
    gvisor = _policy(_spec(tmp_path, "runsc"))
    assert _inside(gvisor, _facts("runsc"))[guard].ok
    assert not _inside(gvisor, _facts("runsc", **{stands_for: "0000000000000001"}))[guard].ok
    host = _policy(_spec(tmp_path, "runc"))
    assert not _inside(host, _facts("runc", **{line: None}))[guard].ok


def test_every_inside_guard_says_what_it_means_under_gvisor(tmp_path: Path) -> None:
    """No guard is skipped under runsc: each one runs, and the policy says what it means."""
    policy = _policy(_spec(tmp_path, "runsc"))
    checked = {r.guard for r in guards.check_inside(policy, {})}
    assert checked == set(folds.VERDICT_ORDER) == set(inside.UNDER_GVISOR)


# -- the engine and the scripts --------------------------------------------------------------

class _EngineWithout:
    address = "unix:///var/run/docker.sock"

    def info(self) -> dict[str, Any]:
        return {"Runtimes": {"runc": {"path": "runc"}}}

    def inspect_image(self, ref: str) -> dict[str, Any]:
        raise AssertionError("no image is looked at before the runtime is refused")


def test_an_engine_without_runsc_refuses_the_arm_by_name_with_the_fix(tmp_path: Path) -> None:
    box = Sandbox(_EngineWithout(), _spec(tmp_path, "runsc"))  # type: ignore[arg-type]
    with pytest.raises(SandbenchError) as caught:
        box.start()
    assert "arm 'rg' asks for the container runtime 'runsc'" in caught.value.what
    assert caught.value.fix == runtimes.REGISTER_FIX
    assert box.container_id is None


def test_ensure_docker_installs_and_registers_the_runsc_runtimes_declares() -> None:
    script = (REPO / "scripts" / "ensure-docker").read_text()

    def assigned(name: str) -> str:
        found = re.search(rf"^{name}=(.*)$", script, re.M)
        assert found is not None, name
        return found.group(1)

    assert tuple(json.loads(assigned("runsc_args").strip("'"))) == runtimes.RUNSC_ARGS
    assert assigned("runsc_suite") == runtimes.RUNSC_SUITE
    assert assigned("runsc_version") == runtimes.RUNSC_VERSION
    path = assigned("runsc_dir").replace("$runsc_version", assigned("runsc_version"))
    assert assigned("runsc_path").replace("$runsc_dir", path) == runtimes.RUNSC_PATH


# -- the report's disclosure -----------------------------------------------------------------

def test_the_disclosure_says_which_arms_ran_under_which_runtime() -> None:
    from orchestrator.score import environment

    mixed = {"arms": {"rg": {"runtime": "runc"}, "ctags": {"runtime": "runsc"},
                      "ast-grep": {"runtime": "runsc"}}}
    line = environment._runtimes(mixed)
    assert line is not None
    assert line.startswith("container runtimes: runc (the host's kernel) for rg; runsc (gVisor")
    assert line.endswith("for ast-grep and ctags")
    assert environment._runtimes({"arms": {"rg": {"runtime": "runc"}}}) == \
        "container runtime runc (the host's kernel) for every arm"
    assert environment._runtimes({"arms": {"rg": {}}}) is None  # recorded before runtimes


def test_the_disclosure_states_each_runsc_arms_pids_as_the_engine_was_asked() -> None:
    from orchestrator.score import environment

    def arm(runtime: str | None) -> dict[str, Any]:
        return {"runtime": runtime, "spec": {"limits": {"pids": 64}}}

    def verdict(expected: Any) -> list[dict[str, Any]]:
        return [{"guard": "memory_bytes", "expected": 1}, {"guard": "pids_limit",
                                                             "expected": expected}]

    run = {"arms": {"rg": arm("runc"), "ctags": arm("runsc"), "ast-grep": arm("runsc"),
                    "old": arm(None)}}
    asked = runtimes.engine_pids("runsc", 64)
    line = environment.runsc_pids(run, {"rg": verdict(64), "ctags": verdict(asked),
                                        "ast-grep": verdict(asked), "old": verdict(64)})
    assert line is not None and line.endswith(
        f"ast-grep 64 of its own + {asked - 64}; ctags 64 of its own + {asked - 64}")
    # Runsc runs recorded before asked for the arm's pids alone; a runc run states nothing.
    assert environment.runsc_pids(run, {"ctags": verdict(64), "ast-grep": None}) is None
    assert environment.runsc_pids({"arms": {"rg": arm("runc")}}, {"rg": verdict(64)}) is None
    assert environment.runsc_pids(run, {"ctags": verdict("6208"), "ast-grep": [None]}) is None


def test_the_preflight_names_each_arm_whose_runtime_the_engine_lacks() -> None:
    """A run and its --dry-run refuse before any container starts (orchestrator.run.preflight)."""
    from types import SimpleNamespace

    from orchestrator.run import preflight

    plan = SimpleNamespace(suite=SimpleNamespace(runtime=runtimes.Choice(arms={"ctags": "runsc"})),
                           available=[SimpleNamespace(name="rg"), SimpleNamespace(name="ctags")])
    found = preflight.runtime_problems(plan, None, [_EngineWithout()])  # type: ignore[arg-type]
    assert [(p.exit_code, p.text.split(" (fix:")[0]) for p in found] == [
        (1, "arm 'ctags' asks for the container runtime 'runsc', which the engine "
            "unix:///var/run/docker.sock does not have")]
    assert len(preflight.runtime_problems(plan, "runsc", [_EngineWithout()])) == 2  # type: ignore[arg-type]
    assert preflight.runtime_problems(plan, "runc", [_EngineWithout()]) == []  # type: ignore[arg-type]

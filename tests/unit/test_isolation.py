"""The isolation policy is one table: every output a setting shows in is folded from it, and
the table agrees with the guards and the stored documents' schemas."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator import arms, corpus, suite
from orchestrator.sandbox import podman, runtimes
from orchestrator.images import ImageLock
from orchestrator.sandbox.container import Sandbox
from orchestrator.sandbox.spec import DOCKER_EXEC, RESIDENT, Limits, SandboxSpec, for_arm
from orchestrator.exports import compose, k8s
from orchestrator.isolation import folds, guards, table
from orchestrator.isolation.policy import GuardPolicy
from orchestrator.isolation.setting import (AGENT, BUILD, BUILD_HELPER, HOLDER, MANIFEST,
                                            OWN_CONTAINERS, Setting, own)
from orchestrator.isolation.values import TOOL_USER, Probe, View

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = REPO / "orchestrator" / "schemas"
IMAGE_ENV = ["PATH=/usr/bin:/bin"]
# The bounds a run adds to an exec record's limits per command, beside the settings'.
PER_COMMAND = {"timeout_s", "grace_s", "cap_bytes"}


def spec_of(tmp_path: Path, arm_name: str = "rg", exec_path: str = RESIDENT,
          runtime: str = runtimes.DEFAULT) -> SandboxSpec:
    arm = arms.load_arms(REPO / "arms", [arm_name])[0]
    lock = ImageLock(tmp_path / "images.lock", {
        arm.image: {"image_id": "sha256:" + "1" * 64, "tag": f"sandbench/{arm.image}:0",
                    "tool_version": "1"},
        "base": {"image_id": "sha256:" + "f" * 64,
                 "helper": {"path": "helper/sandbench-exec-abab", "sha256": "ab" * 32,
                            "size_bytes": 1}}})
    sizes = {"corpus": 64 << 20, "state": 4 << 30, "out": 1 << 30}
    return for_arm(lock, arm, "run-x", tmp_path / "work", "65532:65532", sizes, exec_path,
                   runtime=runtime)


def _policy(spec: SandboxSpec) -> GuardPolicy:
    return Sandbox(None, spec)._policy(spec.image_id, IMAGE_ENV)  # type: ignore[arg-type]


def _job(spec: SandboxSpec) -> dict[str, Any]:
    the_suite = suite.load_suite(REPO / "suites", "demo")
    pin = corpus.pin_for(corpus.load_lock(REPO / "corpus.lock"), the_suite.corpus,
                         REPO / "corpus.lock")
    return k8s.job(spec, the_suite, pin, "sandbench/x:0", 1)


FAKE = Setting(
    "fake", create=lambda s: {"fake_create": s.limits.pids},
    outside=lambda p, v: [("fake_guard", p.values["fake_value"], v.host_config.get("Fake"), None)],
    own=own({"fake_own": True}, holder="the fake needs no holder"),
    inside=lambda p, probe: [("fake_inside", p.values["fake_value"], probe.facts.get("fake"),
                              None)],
    record=lambda limits, _: {"fake_limit": limits.pids},
    policy=lambda s: {"fake_value": s.limits.pids},
    compose=lambda s, c: {"x-fake": c["fake_create"]},
    k8s=lambda s: {"annotations": {"sandbench.fake": str(s.limits.pids)}, "pod": {"fakePod": True},
                   "volumes": [{"name": "fake", "emptyDir": {}}]},
    k8s_read=lambda p, job: [("fake", str(p.values["fake_value"]),
                              job.annotations.get("sandbench.fake"))])


def test_a_setting_added_to_the_table_reaches_every_output(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing downstream lists the settings again: one entry shows everywhere (create
    arguments, both guards, records, policy, compose, the Job and its drift, and sandbench's
    own containers)."""
    spec = spec_of(tmp_path, exec_path=DOCKER_EXEC)
    pids = spec.limits.pids
    monkeypatch.setattr(table, "SETTINGS", (*table.SETTINGS, FAKE))
    assert spec.create_kwargs()["fake_create"] == pids
    policy = _policy(spec)
    assert policy.values["fake_value"] == pids
    assert policy.to_json()["fake_value"] == pids
    results = guards.check_outside(policy, {"HostConfig": {"Fake": pids}}, {})
    assert [r.ok for r in results if r.guard == "fake_guard"] == [True]
    inside = guards.check_inside(policy, {"facts": {"fake": pids}})
    assert (inside[-1].guard, inside[-1].ok) == ("fake_inside", True), \
        "a guard added since the stored verdicts' order follows them"
    wrong = guards.check_inside(policy, {"facts": {"fake": pids + 1}})
    assert [r.ok for r in wrong if r.guard == "fake_inside"] == [False]
    assert folds.record_limits(spec.limits)["fake_limit"] == pids
    assert compose.service(spec)["x-fake"] == pids
    job = _job(spec)
    pod = job["spec"]["template"]["spec"]
    assert job["metadata"]["annotations"]["sandbench.fake"] == str(pids)
    assert pod["fakePod"] is True
    assert {"name": "fake", "emptyDir": {}} in pod["volumes"]
    assert k8s.drift(job, policy, IMAGE_ENV) == []
    job["metadata"]["annotations"]["sandbench.fake"] = "0"
    assert k8s.drift(job, policy, IMAGE_ENV) == [f"fake: policy '{pids}', manifest '0'"]
    assert folds.own_create(AGENT)["fake_own"] is True
    assert folds.own_create(MANIFEST)["fake_own"] is True
    assert "fake_own" not in folds.own_create(HOLDER)


def test_a_setting_adds_items_to_the_jobs_lists(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    listed = dataclasses.replace(FAKE, k8s=lambda s: {"volumes": [{"name": "fake"}],
                                                      "mounts": [{"name": "fake"}]})
    monkeypatch.setattr(table, "SETTINGS", (*table.SETTINGS, listed))
    pod = _job(spec_of(tmp_path))["spec"]["template"]["spec"]
    assert pod["volumes"][-2] == {"name": "fake"}  # before the pristine corpus's claim
    assert pod["containers"][0]["volumeMounts"][-1] == {"name": "fake"}


def test_every_setting_says_what_each_own_container_takes_of_it() -> None:
    """sandbench's own containers take their hardening from the table: each setting gives
    each of them its create arguments or says why it does not apply."""
    for s in table.SETTINGS:
        assert set(s.own) == set(OWN_CONTAINERS), s.name
        assert all(part if isinstance(part, str) else isinstance(part, dict)
                   for part in s.own.values()), s.name
    # What each container was hardened with by hand before: nothing lost.
    assert folds.own_create(AGENT) == {
        "network_mode": "none", "privileged": False, "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges:true"], "log_config": {"type": "json-file"},
        "healthcheck": {"test": ["NONE"]}}
    assert folds.own_create(MANIFEST) == {
        "network_mode": "none", "privileged": False, "cap_drop": ["ALL"], "read_only": True,
        "user": TOOL_USER, "security_opt": ["no-new-privileges:true"],
        "healthcheck": {"test": ["NONE"]}}
    assert folds.own_create(HOLDER) == folds.own_create(BUILD_HELPER) == {"network_mode": "none"}
    assert folds.own_create(BUILD) == {}
    network = next(s for s in table.SETTINGS if s.name == "network")
    assert "mirror" in str(network.own[BUILD])


def test_a_key_two_settings_give_is_refused(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    twin = dataclasses.replace(FAKE, name="twin", create=lambda s: {"pids_limit": 1})
    monkeypatch.setattr(table, "SETTINGS", (*table.SETTINGS, twin))
    with pytest.raises(ValueError, match="'twin' gives 'pids_limit' again"):
        spec_of(tmp_path).create_kwargs()


@pytest.mark.parametrize("limit", sorted(folds.record_limits(Limits())))
def test_each_recorded_limit_reaches_every_output(tmp_path: Path, limit: str) -> None:
    """A limit the records state is what the engine is asked for, what the guards expect,
    and what the compose service and the Job say."""
    spec = spec_of(tmp_path)
    changed = dataclasses.replace(spec, limits=dataclasses.replace(
        spec.limits, **{limit: getattr(spec.limits, limit) * 2}))
    assert spec.create_kwargs() != changed.create_kwargs()
    assert _policy(spec).values != _policy(changed).values
    assert compose.service(spec) != compose.service(changed)
    assert folds.k8s_parts(spec) != folds.k8s_parts(changed)


def _schema(name: str) -> dict[str, Any]:
    return json.loads((SCHEMAS / name).read_text())


def test_the_record_limits_are_the_record_schemas_and_the_arm_schemas() -> None:
    limits = _schema("exec-record.schema.json")["properties"]["limits"]
    recorded = set(folds.record_limits(Limits()))
    assert set(limits["required"]) == recorded | PER_COMMAND
    # What only a runsc record states is optional: records under runc, or made before it,
    # lack it.
    under_runsc = set(folds.record_limits(Limits(), runtimes.RUNSC)) - recorded
    assert under_runsc == {"engine_pids"}
    assert set(limits["properties"]) == recorded | under_runsc | PER_COMMAND
    assert "absent under runc" in limits["properties"]["engine_pids"]["description"]
    declared = {arms.MIB_LIMITS.get(k, k)
                for k in _schema("arm.schema.json")["properties"]["limits"]["properties"]}
    assert recorded <= declared


def test_the_policy_values_are_the_policy_schemas(tmp_path: Path) -> None:
    schema = _schema("guard-policy.schema.json")
    on_podman = dataclasses.replace(spec_of(tmp_path), engine=podman.PODMAN)
    unbounded = dataclasses.replace(spec_of(tmp_path), unbounded_limits_accepted=True)
    stored = {**_policy(spec_of(tmp_path)).to_json(),
              **_policy(spec_of(tmp_path, runtime=runtimes.RUNSC)).to_json(),
              **_policy(on_podman).to_json(), **_policy(unbounded).to_json()}
    assert set(stored) == set(schema["properties"])
    # A value a setting added later is optional: runs recorded before it lack it, and the
    # schema says so.
    later = {*folds.policy_values(spec_of(tmp_path, runtime=runtimes.RUNSC)),
             *folds.policy_values(on_podman),
             *folds.policy_values(unbounded)} - set(schema["required"])
    assert later == {"runtime", "engine_pids", "executor_user", "tool_writable", "engine",
                     "unbounded_limits_accepted"}
    assert all("recorded before" in schema["properties"][k]["description"] for k in later)


def test_every_guard_belongs_to_one_setting(tmp_path: Path) -> None:
    """Each outside guard comes from one setting, each inside guard is claimed by one."""
    spec = spec_of(tmp_path)
    policy = _policy(spec)
    outside = [r.guard for r in guards.check_outside(policy, {}, {})]
    assert len(outside) == len(set(outside))
    assert all(s.outside(policy, View({}, {})) for s in table.SETTINGS), \
        "every setting is checked from outside"
    inside = [r.guard for r in guards.check_inside(policy, {})]
    claimed = [g for s in table.SETTINGS for g, *_ in s.inside(policy, Probe.of({}))]
    assert sorted(claimed) == sorted(inside) and len(inside) == len(set(inside))
    # Stored verdicts are compared in order: today's guards keep the order they were stored in.
    assert inside == list(folds.VERDICT_ORDER)

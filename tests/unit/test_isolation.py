"""The isolation policy is one table: every output a setting shows in is folded from it, and
the table agrees with the guards and the stored documents' schemas."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator import arms, compose, corpus, guards, isolation, k8s, podman, runtimes, suite
from orchestrator.images import ImageLock
from orchestrator.sandbox import Sandbox
from orchestrator.sandbox_spec import DOCKER_EXEC, RESIDENT, Limits, SandboxSpec, for_arm

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = REPO / "orchestrator" / "schemas"
IMAGE_ENV = ["PATH=/usr/bin:/bin"]
# The bounds a run adds to an exec record's limits per command, beside the settings'.
PER_COMMAND = {"timeout_s", "grace_s", "cap_bytes"}


def _spec(tmp_path: Path, arm_name: str = "rg", exec_path: str = RESIDENT,
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


def _policy(spec: SandboxSpec) -> guards.GuardPolicy:
    return Sandbox(None, spec)._policy(spec.image_id, IMAGE_ENV)  # type: ignore[arg-type]


def _job(spec: SandboxSpec) -> dict[str, Any]:
    the_suite = suite.load_suite(REPO / "suites", "demo")
    pin = corpus.pin_for(corpus.load_lock(REPO / "corpus.lock"), the_suite.corpus,
                         REPO / "corpus.lock")
    return k8s.job(spec, the_suite, pin, "sandbench/x:0", 1)


FAKE = isolation.Setting(
    "fake", create=lambda s: {"fake_create": s.limits.pids},
    outside=lambda p, v: [("fake_guard", p.values["fake_value"], v.host_config.get("Fake"), None)],
    record=lambda limits, _: {"fake_limit": limits.pids},
    policy=lambda s: {"fake_value": s.limits.pids},
    compose=lambda s, c: {"x-fake": c["fake_create"]},
    k8s=lambda s: {"annotations": {"sandbench.fake": "1"}, "pod": {"fakePod": True},
                   "volumes": [{"name": "fake"}], "mounts": [{"name": "fake"}]})


def test_a_setting_added_to_the_table_reaches_every_output(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing downstream lists the settings again: one entry shows everywhere."""
    spec = _spec(tmp_path, exec_path=DOCKER_EXEC)
    monkeypatch.setattr(isolation, "SETTINGS", (*isolation.SETTINGS, FAKE))
    assert spec.create_kwargs()["fake_create"] == spec.limits.pids
    policy = _policy(spec)
    assert policy.values["fake_value"] == spec.limits.pids
    assert policy.to_json()["fake_value"] == spec.limits.pids
    results = guards.check_outside(policy, {"HostConfig": {"Fake": spec.limits.pids}}, {})
    assert [r.ok for r in results if r.guard == "fake_guard"] == [True]
    assert isolation.record_limits(spec.limits)["fake_limit"] == spec.limits.pids
    assert compose._service(spec)["x-fake"] == spec.limits.pids
    job = _job(spec)
    pod = job["spec"]["template"]["spec"]
    assert job["metadata"]["annotations"]["sandbench.fake"] == "1"
    assert pod["fakePod"] is True
    assert {"name": "fake"} in pod["volumes"]
    assert {"name": "fake"} in pod["containers"][0]["volumeMounts"]


def test_a_key_two_settings_give_is_refused(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    twin = dataclasses.replace(FAKE, name="twin", create=lambda s: {"pids_limit": 1})
    monkeypatch.setattr(isolation, "SETTINGS", (*isolation.SETTINGS, twin))
    with pytest.raises(ValueError, match="'twin' gives 'pids_limit' again"):
        _spec(tmp_path).create_kwargs()


@pytest.mark.parametrize("limit", sorted(isolation.record_limits(Limits())))
def test_each_recorded_limit_reaches_every_output(tmp_path: Path, limit: str) -> None:
    """A limit the records state is what the engine is asked for, what the guards expect,
    and what the compose service and the Job say."""
    spec = _spec(tmp_path)
    changed = dataclasses.replace(spec, limits=dataclasses.replace(
        spec.limits, **{limit: getattr(spec.limits, limit) * 2}))
    assert spec.create_kwargs() != changed.create_kwargs()
    assert _policy(spec).values != _policy(changed).values
    assert compose._service(spec) != compose._service(changed)
    assert isolation.k8s_parts(spec) != isolation.k8s_parts(changed)


def _schema(name: str) -> dict[str, Any]:
    return json.loads((SCHEMAS / name).read_text())


def test_the_record_limits_are_the_record_schemas_and_the_arm_schemas() -> None:
    limits = _schema("exec-record.schema.json")["properties"]["limits"]
    recorded = set(isolation.record_limits(Limits()))
    assert set(limits["required"]) == recorded | PER_COMMAND
    # What only a runsc record states is optional: records under runc, or made before it,
    # lack it.
    under_runsc = set(isolation.record_limits(Limits(), runtimes.RUNSC)) - recorded
    assert under_runsc == {"engine_pids"}
    assert set(limits["properties"]) == recorded | under_runsc | PER_COMMAND
    assert "absent under runc" in limits["properties"]["engine_pids"]["description"]
    declared = {arms.MIB_LIMITS.get(k, k)
                for k in _schema("arm.schema.json")["properties"]["limits"]["properties"]}
    assert recorded <= declared


def test_the_policy_values_are_the_policy_schemas(tmp_path: Path) -> None:
    schema = _schema("guard-policy.schema.json")
    on_podman = dataclasses.replace(_spec(tmp_path), engine=podman.PODMAN)
    unbounded = dataclasses.replace(_spec(tmp_path), unbounded_limits_accepted=True)
    stored = {**_policy(_spec(tmp_path)).to_json(),
              **_policy(_spec(tmp_path, runtime=runtimes.RUNSC)).to_json(),
              **_policy(on_podman).to_json(), **_policy(unbounded).to_json()}
    assert set(stored) == set(schema["properties"])
    # A value a setting added later is optional: runs recorded before it lack it, and the
    # schema says so.
    later = {*isolation.policy_values(_spec(tmp_path, runtime=runtimes.RUNSC)),
             *isolation.policy_values(on_podman),
             *isolation.policy_values(unbounded)} - set(schema["required"])
    assert later == {"runtime", "engine_pids", "executor_user", "tool_writable", "engine",
                     "unbounded_limits_accepted"}
    assert all("recorded before" in schema["properties"][k]["description"] for k in later)


def test_every_guard_belongs_to_one_setting(tmp_path: Path) -> None:
    """Each outside guard comes from one setting, each inside guard is claimed by one."""
    spec = _spec(tmp_path)
    policy = _policy(spec)
    outside = [r.guard for r in guards.check_outside(policy, {}, {})]
    assert len(outside) == len(set(outside))
    assert all(s.outside(policy, isolation.View({}, {})) for s in isolation.SETTINGS), \
        "every setting is checked from outside"
    inside = [r.guard for r in guards.check_inside(policy, {})]
    claimed = [g for s in isolation.SETTINGS for g in s.inside]
    assert sorted(claimed) == sorted(inside)

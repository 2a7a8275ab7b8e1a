"""`sandbench k8s export`: every manifest valid for the pinned Kubernetes version, each Job
giving its arm the isolation the guard policy of a run demands, and drift named."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from orchestrator import arms, corpus, suite
from orchestrator.errors import SandbenchError
from orchestrator.images import ImageLock
from orchestrator.sandbox.container import Sandbox
from orchestrator.isolation.values import HELPER_PATH as HELPER
from orchestrator.sandbox.spec import SandboxSpec, for_arm
from orchestrator.exports import k8s

REPO = Path(__file__).resolve().parents[2]
HELPER_SHA = "ab" * 32
IMAGE_ENV = ["PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"]


def _lock(tmp_path: Path, names: set[str]) -> ImageLock:
    images: dict[str, dict[str, Any]] = {
        name: {"image_id": f"sha256:{i:064x}", "tag": f"sandbench/{name}:0", "tool_version": "1"}
        for i, name in enumerate(sorted(names), start=1)}
    images["base"] = {**images.get("base", {"image_id": "sha256:" + "f" * 64}),
                      "helper": {"path": "helper/sandbench-exec-abababababab",
                                 "sha256": HELPER_SHA, "size_bytes": 1}}
    return ImageLock(tmp_path / "images.lock", images)


def _demo(tmp_path: Path) -> tuple[suite.Suite, corpus.CorpusPin, list[SandboxSpec]]:
    the_suite = suite.load_suite(REPO / "suites", "demo")
    specs = arms.load_arms(REPO / "arms", list(the_suite.arms))
    lock = _lock(tmp_path, {a.image for a in specs})
    sizes = {"corpus": 64 << 20, "state": 4 << 30, "out": 1 << 30}
    pin = corpus.pin_for(corpus.load_lock(REPO / "corpus.lock"), the_suite.corpus,
                         REPO / "corpus.lock")
    return the_suite, pin, [for_arm(lock, a, "run-demo-20261203T085820Z-2b9a22",
                                    tmp_path / "work" / a.name, "65532:65532", sizes)
                            for a in specs]


def _docs(tmp_path: Path) -> tuple[list[dict[str, Any]], list[SandboxSpec]]:
    the_suite, pin, specs = _demo(tmp_path)
    return ([k8s.deny_all(specs[0].run_id)]
            + [k8s.job(s, the_suite, pin, "sandbench/x:0", 84) for s in specs], specs)


def test_every_manifest_is_valid_for_the_pinned_kubernetes(tmp_path: Path) -> None:
    docs, specs = _docs(tmp_path)
    # The NetworkPolicy and a Job for each of the demo suite's six arms (an MCP arm's Job is
    # the same idle sandbox: its sessions arrive as execs of the client).
    assert k8s.validate(docs) == len(specs) + 1 == 7


@pytest.mark.parametrize(("where", "value", "named"), [
    (("securityContext", "privileged"), "no", "containers.0.securityContext.privileged"),
    (("securityContext", "bogus"), True, "'bogus' was unexpected"),
    (("resources", "limits", "memory"), [1], "containers.0.resources.limits.memory"),
])
def test_a_manifest_the_schema_refuses_is_named(tmp_path: Path, where: tuple[str, ...],
                                                value: Any, named: str) -> None:
    docs, _ = _docs(tmp_path)
    bad = copy.deepcopy(docs[1])
    node = bad["spec"]["template"]["spec"]["containers"][0]
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    with pytest.raises(SandbenchError) as caught:
        k8s.validate([docs[0], bad])
    assert caught.value.what.startswith(f"Job {bad['metadata']['name']!r}: ")
    assert named in caught.value.what


def test_every_isolation_setting_is_in_each_job(tmp_path: Path) -> None:
    docs, specs = _docs(tmp_path)
    policy, *jobs = docs
    assert policy["spec"] == {"podSelector": {"matchLabels": {"sandbench.run": specs[0].run_id}},
                              "policyTypes": ["Ingress", "Egress"]}
    for job in jobs:
        pod = job["spec"]["template"]["spec"]
        assert job["spec"]["template"]["metadata"]["labels"]["sandbench.run"] == specs[0].run_id
        assert pod["automountServiceAccountToken"] is False
        assert pod["enableServiceLinks"] is False
        assert not (pod["hostNetwork"] or pod["hostPID"] or pod["hostIPC"])
        assert pod["securityContext"]["runAsNonRoot"] is True
        tool = {"runAsNonRoot": True, "runAsUser": 65532, "runAsGroup": 65532,
                "readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False,
                "privileged": False, "capabilities": {"drop": ["ALL"]},
                "seccompProfile": {"type": "RuntimeDefault"}}
        # The corpus copy runs as the tool; the arm's PID 1 is the executor.
        assert pod["initContainers"][0]["securityContext"] == tool
        assert pod["containers"][0]["securityContext"] == {
            **tool, "runAsNonRoot": False, "runAsUser": 0, "runAsGroup": 0,
            "capabilities": {"drop": ["ALL"], "add": ["SETGID", "SETUID"]}}
        assert job["metadata"]["annotations"]["sandbench.tool-user"] == "65532:65532"
        for box in (*pod["initContainers"], *pod["containers"]):
            assert box["resources"]["limits"] == box["resources"]["requests"]
            assert box["image"].startswith("sha256:") and box["imagePullPolicy"] == "Never"
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert volumes["tmp"]["emptyDir"]["sizeLimit"] == str(512 << 20)
        for name in ("corpus", "state", "out"):
            assert volumes[name]["ephemeral"]["volumeClaimTemplate"]["spec"]["resources"]
        assert volumes["pristine"]["persistentVolumeClaim"]["readOnly"] is True
        assert {m["mountPath"]: m.get("readOnly", False)
                for m in pod["containers"][0]["volumeMounts"]} == {
            "/corpus": False, "/state": False, "/out": False, "/tmp": False, HELPER: True}
        assert "docker.sock" not in str(job)


def test_each_job_gives_the_isolation_a_run_verifies(tmp_path: Path) -> None:
    """Drift: a Job against the guard policy the run builds for the same arm."""
    docs, specs = _docs(tmp_path)
    for job, spec in zip(docs[1:], specs, strict=True):
        policy = Sandbox(None, spec)._policy(spec.image_id, IMAGE_ENV)  # type: ignore[arg-type]
        assert k8s.drift(job, policy, IMAGE_ENV) == []


@pytest.mark.parametrize(("change", "named"), [
    (lambda box, pod: box.update(image="sha256:" + "0" * 64), "image"),
    (lambda box, pod: box["securityContext"].update(runAsUser=1000), "user"),
    (lambda box, pod: box["securityContext"]["capabilities"].update(add=["SYS_ADMIN"]),
     "cap_add"),
    (lambda box, pod: box["env"].append({"name": "EXTRA", "value": "1"}), "env"),
    (lambda box, pod: box["resources"]["limits"].update(memory="1"), "memory_bytes"),
    (lambda box, pod: box["resources"]["limits"].update(cpu="500m"), "nano_cpus"),
    (lambda box, pod: pod["volumes"][3]["emptyDir"].update(sizeLimit="1"), "tmp_bytes"),
    (lambda box, pod: pod["volumes"][1]["ephemeral"]["volumeClaimTemplate"]["spec"]
     ["resources"]["requests"].update(storage="1"), "mounts"),
    (lambda box, pod: box["volumeMounts"][4].update(readOnly=False), "mounts"),
    (lambda box, pod: box["securityContext"].update(readOnlyRootFilesystem=False),
     "read_only_root"),
    (lambda box, pod: box["securityContext"]["capabilities"].update(drop=[]), "cap_drop"),
    (lambda box, pod: box["securityContext"].update(allowPrivilegeEscalation=True),
     "no_new_privileges"),
    (lambda box, pod: pod["volumes"][4]["hostPath"].update(path="/x/sandbench-exec-00"),
     "helper"),
])
def test_drift_names_the_setting_that_changed(tmp_path: Path, change: Any, named: str) -> None:
    docs, specs = _docs(tmp_path)
    job = copy.deepcopy(docs[1])
    pod = job["spec"]["template"]["spec"]
    change(pod["containers"][0], pod)
    policy = Sandbox(None, specs[0])._policy(specs[0].image_id, IMAGE_ENV)  # type: ignore[arg-type]
    problems = k8s.drift(job, policy, IMAGE_ENV)
    assert [p.split(":")[0] for p in problems] == [named]


def test_a_root_user_is_refused(tmp_path: Path) -> None:
    the_suite, pin, specs = _demo(tmp_path)
    with pytest.raises(SandbenchError, match="non-root numeric uid:gid"):
        k8s.job(dataclasses.replace(specs[0], user="0:0"), the_suite, pin, "sandbench/x:0", 1)

"""Each setting's Kubernetes read-back: where an arm's Job (exports/k8s.py) differs from the
guard policy a run verified for that arm, as (what, the policy's value, the Job's) pairs that
`k8s drift` folds from the table (folds.k8s_drift). A setting the Job cannot show (the pod has
no key for it, see the export's header) has none, and the table says why."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.sandbox import runtimes
from orchestrator.isolation.facets import k8s_runtime_class
from orchestrator.isolation.setting import Pair
from orchestrator.isolation.values import EXECUTOR_CAPS, HELPER_PATH, Job

if TYPE_CHECKING:  # the policy only arrives as an argument
    from orchestrator.isolation.policy import GuardPolicy


def capabilities(policy: GuardPolicy, job: Job) -> list[Pair]:
    caps = job.security.get("capabilities", {})
    return [("cap_drop", ["ALL"], caps.get("drop")),
            ("cap_add", sorted(EXECUTOR_CAPS) if policy.executor_user else [],
             sorted(caps.get("add") or []))]


def read_only_root(policy: GuardPolicy, job: Job) -> list[Pair]:
    return [("read_only_root", True, job.security.get("readOnlyRootFilesystem"))]


def user(policy: GuardPolicy, job: Job) -> list[Pair]:
    """The container's user is the executor's (or, before the split, the tool's); the tool's
    is the annotation each kubectl exec's `--as` reads."""
    return [("user", policy.executor_user or policy.user,
             f"{job.security.get('runAsUser')}:{job.security.get('runAsGroup')}"),
            ("tool_user", policy.user if policy.executor_user else None,
             job.annotations.get("sandbench.tool-user"))]


def no_new_privileges(policy: GuardPolicy, job: Job) -> list[Pair]:
    return [("no_new_privileges", False, job.security.get("allowPrivilegeEscalation"))]


def memory(policy: GuardPolicy, job: Job) -> list[Pair]:
    return [("memory_bytes", policy.values["memory_bytes"],
             int(job.limits.get("memory", -1)))]


def pids(policy: GuardPolicy, job: Job) -> list[Pair]:
    return [("pids", policy.values["pids"], int(job.annotations.get("sandbench.pids", -1)))]


def cpus(policy: GuardPolicy, job: Job) -> list[Pair]:
    return [("nano_cpus", policy.values["nano_cpus"],
             int(str(job.limits.get("cpu", "-1m")).removesuffix("m")) * 1_000_000)]


def helper(policy: GuardPolicy, job: Job) -> list[Pair]:
    path = job.volumes.get("helper", {}).get("hostPath", {}).get("path", "")
    return [("helper", Path(policy.helper.get("source", "")).name, Path(path).name),
            ("helper_sha256", policy.helper.get("sha256"),
             job.annotations.get("sandbench.helper.sha256"))]


def _tmp_bytes(options: str) -> int | None:
    for option in options.split(","):
        if option.startswith("size="):
            return int(option.removeprefix("size="))
    return None


def mounts(policy: GuardPolicy, job: Job) -> list[Pair]:
    """Each mount's mode and bound (an ephemeral volume's requested storage), and /tmp's."""
    volumes = job.volumes
    found = {}
    for m in job.box.get("volumeMounts", []):
        volume = volumes.get(m["name"], {})
        storage = (volume.get("ephemeral", {}).get("volumeClaimTemplate", {}).get("spec", {})
                   .get("resources", {}).get("requests", {}).get("storage"))
        found[m["mountPath"]] = (bool(m.get("readOnly")),
                                 int(storage) if storage is not None else None)
    declared = {m.target: (m.read_only, m.size_bytes) for m in policy.mounts}
    declared[HELPER_PATH] = (True, None)
    declared["/tmp"] = (False, None)
    return [("tmp_bytes", _tmp_bytes(policy.tmpfs.get("/tmp", "")),
             int(volumes.get("tmp", {}).get("emptyDir", {}).get("sizeLimit", -1))),
            ("mounts", dict(sorted(declared.items())), dict(sorted(found.items())))]


def runtime(policy: GuardPolicy, job: Job) -> list[Pair]:
    wanted = (k8s_runtime_class(policy.runtime)
              if policy.runtime not in (None, runtimes.RUNC) else None)
    return [("runtime", wanted, job.pod.get("runtimeClassName"))]


def image(policy: GuardPolicy, job: Job) -> list[Pair]:
    return [("image", policy.image_id, job.box.get("image"))]


def env(policy: GuardPolicy, job: Job) -> list[Pair]:
    """The policy's environment includes the image's own ENV (`job.image_env`)."""
    found = {**dict(e.split("=", 1) for e in job.image_env),
             **{e["name"]: e["value"] for e in job.box.get("env", [])}}
    return [("env", sorted(policy.env), sorted(f"{k}={v}" for k, v in found.items()))]


def pod_labels(policy: GuardPolicy, job: Job) -> list[Pair]:
    return [("labels", policy.labels, {k: job.pod_labels.get(k) for k in policy.labels})]

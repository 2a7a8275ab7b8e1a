"""The values the isolation policy shares with every module that uses it: the helper's paths,
the exec paths, the users, what an opt-out looks like, the Kubernetes places a setting can
write and the views its checks read (the engine's inspect, the helper's probe, a Kubernetes
Job). A leaf: it imports nothing of the policy, which is the table of settings in
`orchestrator/isolation/table.py`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from orchestrator import labels

# The host's static timing helper, bind-mounted read-only here in every sandbox; no image
# provides this path, and PID 1, the probe and every exec run it by this path alone.
HELPER_PATH = "/.sandbench/sandbench-exec"
HELPER_IDLE = f"{HELPER_PATH} idle"
HELPER_SERVE = f"{HELPER_PATH} serve"
# How a measured command reaches the container: requests on PID 1's attach stream, answered
# by the helper's `serve` (no runtime exec per call), or one `docker exec` each (the fallback,
# chosen per run and disclosed in the report).
RESIDENT = "resident"
DOCKER_EXEC = "docker-exec"
EXEC_PATHS = (RESIDENT, DOCKER_EXEC)
TOOL_USER = "65532:65532"  # owns nothing on the host, nor in any image sandbench builds
SHA256_HEX = re.compile(r"[0-9a-f]{64}")
UNCONFINED = {"seccomp=unconfined", "apparmor=unconfined", "label=disable"}
NO_OPT_OUT = "no seccomp, apparmor or label opt-out"
HOST_NAMESPACES = ("PidMode", "IpcMode", "UTSMode", "UsernsMode", "CgroupnsMode")
# Labels that differ per run or per build: a compose file, the same on every machine, omits
# them.
PER_RUN_LABELS = (labels.LABEL_RUN, labels.LABEL_TOOL_VERSION)
COMPOSE_HELPER = "${SANDBENCH_HELPER:?write bench/compose/*.env with sandbench compose export}"
COMPOSE_USER = "${SANDBENCH_USER:-65532:65532}"
# The executor (PID 1 and the runners it starts) is the container's uid 0 holding only the
# two capabilities that start a command as the tool's uid; the tool is the run's non-root
# uid with none (images/base/sandbench-exec.c, "Two uids"). The mask is the two bits as
# /proc/PID/status prints the sets (CAP_SETGID 6, CAP_SETUID 7).
# The policy key of a sandbox whose engine cannot enforce its limits, run because the user
# accepted that (--accept-unbounded-limits): its inside limit guards report, never refuse.
UNBOUNDED_ACCEPTED = "unbounded_limits_accepted"
EXECUTOR_USER = "0:0"
EXECUTOR_CAPS = ("SETGID", "SETUID")
EXECUTOR_CAP_MASK = (1 << 6) | (1 << 7)
# Where a node keeps the host's timing helper: a ConfigMap cannot hold it (over 1 MiB once
# base64-encoded), so it is a read-only hostPath file, as it is a bind mount in a run.
NODE_HELPER_DIR = "/var/lib/sandbench/helper"

# One guard's verdict as a setting's outside check states it: (guard, expected, found, ok);
# ok None means "expected == found".
Check = tuple[str, Any, Any, bool | None]
# A Kubernetes facet: place -> what the setting puts there. The places: "pod" (the pod's
# spec), "pod_security" (its securityContext), "container" (the arm's container),
# "security" and "resources" (the securityContext and resource limits of every container),
# "executor" (what the arm's container, whose PID 1 is the executor, has over "security"),
# "annotations" and "labels" (the Job's); and two lists, "volumes" (the pod's) and "mounts"
# (the arm container's volumeMounts).
K8S_PLACES = ("pod", "pod_security", "container", "security", "executor", "resources",
              "annotations", "labels")
K8S_LISTS = ("volumes", "mounts")
K8S_MANAGED_BY = "app.kubernetes.io/managed-by"


@dataclass(frozen=True)
class View:
    """The engine's inspect of a container and the host's snapshot, as the checks read it."""

    inspect: dict[str, Any]
    host_facts: dict[str, Any]

    @property
    def host_config(self) -> dict[str, Any]:
        return self.inspect.get("HostConfig") or {}

    @property
    def config(self) -> dict[str, Any]:
        return self.inspect.get("Config") or {}

    @property
    def mounts(self) -> list[tuple[Any, Any, Any, bool]]:
        """(type, source, target, writable) of every mount; a volume is named by its name
        (its Source is the engine's own directory for it)."""
        return sorted((m.get("Type"), m.get("Name") if m.get("Type") == "volume"
                       else m.get("Source"), m.get("Destination"), bool(m.get("RW")))
                      for m in self.inspect.get("Mounts") or [])



@dataclass(frozen=True)
class Probe:
    """The helper's probe from inside a container (its facts) and what the host-side
    loopback canary saw while it ran, as the inside checks read them."""

    facts: dict[str, Any]
    canary: dict[str, Any]

    @classmethod
    def of(cls, probe: dict[str, Any]) -> Probe:
        return cls(probe.get("facts") or {}, probe.get("canary") or {})

    @property
    def status(self) -> dict[str, Any]:
        return self.facts.get("status") or {}


@dataclass(frozen=True)
class Job:
    """A Kubernetes Job of an arm, as a setting's read-back finds its keys again, and the
    image's own ENV (which a run's policy includes beside the arm's environment)."""

    manifest: dict[str, Any]
    image_env: tuple[str, ...] = ()

    @property
    def pod(self) -> dict[str, Any]:
        return self.manifest["spec"]["template"]["spec"]

    @property
    def box(self) -> dict[str, Any]:
        """The arm's container."""
        return self.pod["containers"][0]

    @property
    def security(self) -> dict[str, Any]:
        return self.box.get("securityContext", {})

    @property
    def limits(self) -> dict[str, Any]:
        return self.box.get("resources", {}).get("limits", {})

    @property
    def volumes(self) -> dict[str, Any]:
        return {v["name"]: v for v in self.pod.get("volumes", [])}

    @property
    def annotations(self) -> dict[str, Any]:
        return self.manifest["metadata"]["annotations"]

    @property
    def pod_labels(self) -> dict[str, Any]:
        return self.manifest["spec"]["template"]["metadata"]["labels"]

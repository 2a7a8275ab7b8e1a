"""The values the isolation policy shares with every module that uses it: the helper's paths,
what an opt-out looks like, the Kubernetes places a setting can write, the `View` a check reads
and the `Setting` type itself. A leaf: it imports nothing of the policy, which is the table
of settings in `orchestrator/isolation.py`."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from orchestrator import labels

if TYPE_CHECKING:  # the policy and the spec only arrive as arguments
    from orchestrator.guards import GuardPolicy
    from orchestrator.sandbox_spec import Limits, SandboxSpec

# The host's static timing helper, bind-mounted read-only here in every sandbox; no image
# provides this path, and PID 1, the probe and every exec run it by this path alone.
HELPER_PATH = "/.sandbench/sandbench-exec"
HELPER_IDLE = f"{HELPER_PATH} idle"
HELPER_SERVE = f"{HELPER_PATH} serve"
RESIDENT = "resident"
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


def nothing(*_: Any) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class Setting:
    """One isolation setting and every place it shows. A facet left at its default has
    nothing to say there, and the table says why in a comment."""

    name: str
    create: Callable[[SandboxSpec], dict[str, Any]]  # the engine's create arguments
    outside: Callable[[GuardPolicy, View], list[Check]]
    inside: tuple[str, ...] = ()  # the probe's guards (guards.check_inside) that see it
    # An exec record's `limits`, from the arm's limits and the runtime it ran under.
    record: Callable[[Limits, str], dict[str, Any]] = nothing
    policy: Callable[[SandboxSpec], dict[str, Any]] = nothing  # the guard policy's values
    # The compose service's keys, from the spec and this setting's own create arguments.
    compose: Callable[[SandboxSpec, dict[str, Any]], dict[str, Any]] = nothing
    k8s: Callable[[SandboxSpec], dict[str, Any]] = nothing

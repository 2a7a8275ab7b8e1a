"""The isolation policy: every setting that confines an arm's container, declared once.

Each `Setting` (isolation/setting.py) says, for one concern, what the engine is asked for at
create, which guards check it from outside (the engine's inspect, the host's hash of the
helper) and inside (the helper's probe: isolation/inside.py), what an exec record and the
guard policy store of it, how a compose service and a Kubernetes Job express it, how a Job is
read back against a run's policy (isolation/k8s_read.py), and what sandbench's own containers
(the engine agent, the image build's) take of it or why not. Every one of those is folded
from `SETTINGS` (isolation/folds.py), so a setting added here reaches all of them, and a test
fails when one of them is left without it (tests/unit/test_isolation.py). A new setting (a
container runtime per arm, say) is one entry here, and the key it stores in the guard policy
or the exec record declared in that document's schema.

The table's order is the order of the outside guards in a verdict (stored verdicts are
compared with recomputed ones), and of the mount lists the facets build. Nothing here talks
to the engine.
"""

from __future__ import annotations

from orchestrator import labels
from orchestrator.sandbox import podman, runtimes
from orchestrator.isolation import facets, inside, k8s_read
from orchestrator.isolation.setting import Setting, nothing, own
from orchestrator.isolation.values import (
    EXECUTOR_CAPS, EXECUTOR_USER, HOST_NAMESPACES, NO_OPT_OUT, PER_RUN_LABELS, RESIDENT,
    TOOL_USER, UNBOUNDED_ACCEPTED, UNCONFINED)

# Why a setting does not apply to one of sandbench's own containers (setting.own).
BUILD_NETWORK = ("the build needs the package mirror: only an offline recipe's RUN steps get "
                 "no network (images/build.py)")
AGENT_WRITES = ("not asked: its scripts (mkfs, losetup, git) have not been shown to run on a "
                "read-only root")
AGENT_USER = "each call's own: root to make file systems, the arm's owner to seed them"
AGENT_DEVICES = "none, but the loop devices when it makes file systems (remote.RemoteSite)"
MANIFEST_LOG = ("its stdout is read back: the engine's run_once keeps one bounded json-file "
                "(SHORT_CONTAINER_LOG)")
OWN_LIMITS = ("an arm's limits bound an arm's tool: sandbench's own commands are bounded in "
              "time (remote.AGENT_TIMEOUT_S, run_once's timeout)")
OWN_NAMESPACES = ("the engine's defaults: none is shared with the host; the arms ask theirs "
                  "private because their guards check it")
OWN_RUNTIME = ("the engine's default: sandbench's scripts, or a version command offline with "
               "no capability")

SETTINGS: tuple[Setting, ...] = (
    # The deny-all NetworkPolicy beside the Jobs is the rest of the Kubernetes side.
    Setting("network",  # no interface but lo, no name service
            own=own({"network_mode": "none"}, holder={"network_mode": "none"},
                build_helper={"network_mode": "none"}, build=BUILD_NETWORK),
            create=lambda s: {"network_mode": "none"},
            outside=lambda p, v: [
                ("network_mode", "none", v.host_config.get("NetworkMode"), None),
                ("networks", ["none"], podman.networks_none(
                    (v.inspect.get("NetworkSettings") or {}).get("Networks") or {},
                    podman.on_podman(p.values)), None)],
            inside=inside.network,
            compose=lambda s, c: dict(c),
            # Name lookups go to the pod's own loopback, where nothing answers.
            k8s=lambda s: {"pod": {"hostNetwork": False, "dnsPolicy": "None",
                                   "dnsConfig": {"nameservers": ["127.0.0.1"]}}}),
    # Privilege shows inside as the capability sets the probe reads (`capabilities`).
    Setting("privileged",  # no device or kernel access beyond a plain container
            own=own({"privileged": False}),
            create=lambda s: {"privileged": False},
            outside=lambda p, v: [("privileged", False, v.host_config.get("Privileged"), None)],
            compose=lambda s, c: dict(c),
            k8s=lambda s: {"security": {"privileged": False}}),
    # Every capability dropped but the executor's two, which the tool never holds.
    Setting("capabilities",  # none for the tool; SETUID and SETGID for the executor
            own=own({"cap_drop": ["ALL"]}),
            k8s_read=k8s_read.capabilities,
            create=lambda s: {"cap_drop": ["ALL"], "cap_add": list(EXECUTOR_CAPS)},
            outside=facets.cap_checks,
            inside=inside.capabilities,
            compose=lambda s, c: dict(c),
            k8s=lambda s: {"security": {"capabilities": {"drop": ["ALL"]}},
                           "executor": {"capabilities": {"drop": ["ALL"],
                                                         "add": list(EXECUTOR_CAPS)}}}),
    Setting("read_only_root",  # the image's files cannot change
            own=own({"read_only": True}, agent=AGENT_WRITES),
            k8s_read=k8s_read.read_only_root,
            create=lambda s: {"read_only": True},
            outside=lambda p, v: [
                ("read_only_root", True, v.host_config.get("ReadonlyRootfs"), None)],
            inside=inside.read_only_root,
            compose=lambda s, c: dict(c),
            k8s=lambda s: {"security": {"readOnlyRootFilesystem": True}}),
    # The container runs as the executor; the tool's uid (a compose variable, the same file
    # on every machine) is given to each command with `--as`.
    Setting("user",  # the executor as uid 0, the tool as a non-root uid:gid
            own=own({"user": TOOL_USER}, agent=AGENT_USER),
            k8s_read=k8s_read.user,
            create=lambda s: {"user": EXECUTOR_USER},
            outside=facets.user_check,
            inside=inside.user,
            policy=lambda s: {"executor_user": EXECUTOR_USER},
            compose=lambda s, c: dict(c),
            k8s=facets.k8s_user),
    Setting("no_new_privileges",  # no setuid or file capability gains anything
            own=own({"security_opt": ["no-new-privileges:true"]}),
            k8s_read=k8s_read.no_new_privileges,
            create=lambda s: {"security_opt": ["no-new-privileges:true"]},
            outside=lambda p, v: [(
                "no_new_privileges", "no-new-privileges:true",
                v.host_config.get("SecurityOpt") or [],
                any(o in ("no-new-privileges", "no-new-privileges:true")
                    for o in v.host_config.get("SecurityOpt") or []))],
            inside=inside.no_new_privileges,
            compose=lambda s, c: dict(c),
            k8s=lambda s: {"security": {"allowPrivilegeEscalation": False}}),
    # The engine's default seccomp and AppArmor profiles: nothing to ask for at create or in
    # compose, only no opt-out to refuse.
    Setting("confinement",  # the engine's default seccomp and LSM profiles
            own=own({}),
            create=nothing,
            outside=lambda p, v: [(
                "confinement", NO_OPT_OUT, sorted(
                    o for o in v.host_config.get("SecurityOpt") or []
                    if o.replace(":", "=") in UNCONFINED) or NO_OPT_OUT, None)],
            inside=inside.confinement,
            k8s=lambda s: {"security": {"seccompProfile": {"type": "RuntimeDefault"}},
                           "pod_security": {"seccompProfile": {"type": "RuntimeDefault"}}}),
    # No engine-side log of PID 1's output (a tool could write it through /proc). A kubelet
    # always keeps container logs: the Job has no key for it (see the k8s header).
    Setting("logging",  # no engine-side log a tool could fill
            own=own(MANIFEST_LOG, agent={"log_config": {"type": "json-file"}}),
            create=lambda s: {"log_config": {"type": "none"}},
            outside=lambda p, v: [("log_driver", "none",
                                   (v.host_config.get("LogConfig") or {}).get("Type"), None)],
            compose=lambda s, c: {"logging": {"driver": c["log_config"]["type"]}}),
    # No image HEALTHCHECK running code beside the measured commands; a Job declares no
    # probes, Kubernetes' default.
    Setting("healthcheck",  # no code runs beside the measured commands
            own=own({"healthcheck": {"test": ["NONE"]}}),
            create=lambda s: {"healthcheck": {"test": ["NONE"]}},
            outside=lambda p, v: [("healthcheck", ["NONE"],
                                   (v.config.get("Healthcheck") or {}).get("Test"), None)],
            compose=lambda s, c: {"healthcheck": {"disable": True}}),
    Setting("memory",  # the arm's memory, swap included
            own=own(OWN_LIMITS),
            k8s_read=k8s_read.memory,
            create=lambda s: {"mem_limit": s.limits.memory_bytes,
                              "memswap_limit": s.limits.memory_bytes},
            outside=lambda p, v: [
                ("memory_bytes", p.values["memory_bytes"], v.host_config.get("Memory"), None),
                ("memory_swap_bytes", p.values["memory_bytes"], v.host_config.get("MemorySwap"),
                 None)],
            inside=inside.memory,
            record=lambda limits, _: {"memory_bytes": limits.memory_bytes},
            policy=lambda s: {"memory_bytes": s.limits.memory_bytes,
                              **({UNBOUNDED_ACCEPTED: True} if s.unbounded_limits_accepted
                                 else {})},
            compose=lambda s, c: dict(c),
            k8s=lambda s: {"resources": {"memory": str(s.limits.memory_bytes)}}),
    # Kubernetes has no per-pod pids limit: the annotation states what the node's
    # podPidsLimit must not exceed. Under runsc the engine is asked for more than the arm's
    # pids (gVisor's own threads count too: runtimes.engine_pids), stated as `engine_pids`
    # beside them; runs recorded under runc, or before runtimes, state the arm's alone.
    Setting("pids",  # the arm's processes and threads
            own=own(OWN_LIMITS),
            k8s_read=k8s_read.pids,
            create=lambda s: {"pids_limit": runtimes.engine_pids(s.runtime, s.limits.pids)},
            outside=lambda p, v: [
                ("pids_limit", p.values.get("engine_pids", p.values["pids"]),
                 v.host_config.get("PidsLimit"), None)],
            inside=inside.pids,
            record=lambda limits, runtime: {"pids": limits.pids,
                                            **facets.engine_pids(runtime, limits)},
            policy=lambda s: {"pids": s.limits.pids, **facets.engine_pids(s.runtime, s.limits)},
            compose=lambda s, c: dict(c),
            k8s=lambda s: {"annotations": {"sandbench.pids": str(s.limits.pids)}}),
    Setting("cpus",  # the arm's CPU time
            own=own(OWN_LIMITS),
            k8s_read=k8s_read.cpus,
            create=lambda s: {"nano_cpus": s.limits.nano_cpus},
            outside=lambda p, v: [("nano_cpus", p.values["nano_cpus"],
                                   v.host_config.get("NanoCpus"), None)],
            inside=inside.cpus,
            record=lambda limits, _: {"cpus": limits.cpus},
            policy=lambda s: {"nano_cpus": s.limits.nano_cpus},
            compose=lambda s, c: {"cpus": s.limits.cpus},
            k8s=lambda s: {"resources": {"cpu": f"{s.limits.nano_cpus // 1_000_000}m"}}),
    # Its mount is among `mounts`; here what runs as PID 1 and the digest of what is mounted.
    Setting("helper",  # the host's helper, and nothing else, as PID 1
            own=own("the arms' PID 1 only: sandbench's own containers run their one command"),
            k8s_read=k8s_read.helper,
            create=facets.helper_create, outside=facets.helper_checks, inside=inside.helper,
            compose=lambda s, c: dict(c),
            k8s=lambda s: {"container": {"command": facets.helper_create(s)["command"]},
                           "annotations": {"sandbench.helper.sha256": s.helper.sha256}}),
    Setting("mounts",  # only the declared mounts, each bounded, and a bounded /tmp
            own=own("each mounts its own: the agent the run's volumes, the manifest reader none"),
            k8s_read=k8s_read.mounts,
            create=lambda s: {"tmpfs": facets.tmpfs(s), "mounts": [
                m.engine_spelling for m in (*s.mounts, s.helper_mount)]},
            outside=facets.mount_checks,
            inside=inside.mounts,
            record=lambda limits, _: {"tmp_bytes": limits.tmp_bytes},
            # Runs recorded before the probe proved them carry no `tool_writable`, and none
            # of the limits-in-force guards (isolation/in_force.py).
            policy=lambda s: {"tmpfs": facets.tmpfs(s), "tool_writable": s.tool_writable},
            compose=facets.mounts_compose, k8s=facets.mounts_k8s),
    # Docker gives no device unless asked, nor does a pod.
    Setting("devices",  # no host device
            own=own({}, agent=AGENT_DEVICES),
            create=nothing,
            outside=lambda p, v: [("devices", [], v.host_config.get("Devices") or [], None)]),
    # Debian's docker-compose 1.29 has no key for the cgroup namespace (Compose v2 spells it
    # `cgroup: private`): it is recorded as x-sandbench-cgroupns.
    Setting("namespaces",  # no namespace shared with the host
            own=own(OWN_NAMESPACES),
            create=lambda s: {"ipc_mode": "private", "cgroupns": "private",
                              "hostname": "sandbox"},
            outside=lambda p, v: [("host_namespaces", [], sorted(
                k for k in HOST_NAMESPACES if v.host_config.get(k) == "host"), None)],
            compose=lambda s, c: {"ipc": c["ipc_mode"], "x-sandbench-cgroupns": c["cgroupns"],
                                  "hostname": c["hostname"]},
            k8s=lambda s: {"pod": {"hostPID": False, "hostIPC": False,
                                   "shareProcessNamespace": False, "hostname": "sandbox"}}),
    # The kernel between the tool and the host: the engine's runtime, named in the Job by the
    # RuntimeClass the Kubernetes export writes beside it (exports/k8s.py, runtime_class).
    # Runs recorded before runtimes were declared ran under runc and carry neither runtime
    # guard.
    Setting("runtime",  # runc (the host's kernel) or runsc (gVisor's)
            own=own(OWN_RUNTIME),
            k8s_read=k8s_read.runtime,
            create=lambda s: {"runtime": s.runtime},
            outside=lambda p, v: [] if p.runtime is None else [
                ("runtime", p.runtime, podman.runtime_found(
                    v.host_config.get("Runtime"), p.runtime, podman.on_podman(p.values)),
                 None)],
            inside=inside.runtime,
            policy=lambda s: {"runtime": s.runtime, **podman.policy_values(s.engine)},
            compose=lambda s, c: dict(c),
            k8s=lambda s: {"pod": {"runtimeClassName": facets.k8s_runtime_class(s.runtime)}}
            if s.runtime != runtimes.RUNC else {}),
    # The image by its locked id; a compose file names it by a variable of this host's.
    Setting("image",  # the locked image
            own=own("each its own: the agent's locked image, the image built or read"),
            k8s_read=k8s_read.image,
            create=lambda s: {"image": s.image_id},
            outside=lambda p, v: [("image_id", p.image_id, v.inspect.get("Image"), None)],
            compose=lambda s, c: {"image": f"${{{facets.image_var(s.arm)}:?write bench/compose/"
                                           "*.env with sandbench compose export}"},
            k8s=lambda s: {"container": {"image": s.image_id, "imagePullPolicy": "Never"}}),
    # Exactly the arm's environment (the policy's includes the image's own ENV).
    Setting("env",  # exactly the declared environment
            own=own("each its own: the agent's script arguments, none for the manifest reader"),
            k8s_read=k8s_read.env,
            create=lambda s: {"environment": [f"{k}={v}" for k, v in sorted(s.env.items())]},
            outside=lambda p, v: [("env", sorted(p.env), podman.env_found(
                v.config.get("Env") or [], p.env, str(v.config.get("Hostname")),
                podman.on_podman(p.values)), None)],
            compose=lambda s, c: {"environment": dict(sorted(s.env.items()))},
            # No service addresses in the environment either.
            k8s=lambda s: {"container": {"env": [{"name": k, "value": v}
                                                 for k, v in sorted(s.env.items())]},
                           "pod": {"enableServiceLinks": False}}),
    Setting("labels",  # the run and arm it belongs to, for cleanup and audit
            own=own("each its own, for cleanup: the run's (agent), temporary (manifest reader)"),
            k8s_read=k8s_read.pod_labels,
            create=lambda s: {"labels": s.labels},
            outside=lambda p, v: [("labels", p.labels, {
                k: (v.config.get("Labels") or {}).get(k) for k in p.labels}, None)],
            compose=lambda s, c: {"labels": {k: v for k, v in sorted(c["labels"].items())
                                             if k not in PER_RUN_LABELS}},
            k8s=lambda s: {"labels": {labels.LABEL_ARM: s.arm},
                           "annotations": {labels.LABEL_TOOL_VERSION: s.tool_version}}),
    # The resident executor's channel: PID 1 reads requests on stdin (sandbench attaches).
    # A Job's commands come through kubectl exec: no stdin, no TTY.
    Setting("exec_channel",  # PID 1's stdin only for the resident executor
            own=own("no stdin: their one command reads none"),
            create=lambda s: {"stdin_open": s.exec_path == RESIDENT},
            outside=facets.channel_checks, inside=inside.exec_channel,
            compose=lambda s, c: dict(c),
            k8s=lambda s: {"container": {"stdin": False, "tty": False}}),
)


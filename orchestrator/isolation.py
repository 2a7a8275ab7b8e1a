"""The isolation policy: every setting that confines an arm's container, declared once.

Each `Setting` says, for one concern, what the engine is asked for at create, which guards
check it from outside (the engine's inspect, the host's hash of the helper) and inside (the
helper's probe), what an exec record and the guard policy store of it, and how a compose
service and a Kubernetes Job express it. The container's create arguments, the outside
guards, the record's limits, the guard policy's values, the compose service and the Job are
all folded from `SETTINGS`, so a setting added here reaches every one of them, and a test
fails when one of them is left without it (tests/unit/test_isolation.py). A new setting (a
container runtime per arm, say) is one entry here, and the key it stores in the guard policy
or the exec record declared in that document's schema.

The table's order is the order of the outside guards in a verdict (stored verdicts are
compared with recomputed ones), and of the mount lists the facets build. Nothing here talks
to the engine.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from orchestrator import labels, podman, runtimes
from orchestrator.isolation_values import (
    COMPOSE_HELPER, Check, EXECUTOR_CAPS, EXECUTOR_USER, HELPER_IDLE, HELPER_PATH, HELPER_SERVE,
    HOST_NAMESPACES, K8S_LISTS, K8S_MANAGED_BY, K8S_PLACES, NODE_HELPER_DIR, NO_OPT_OUT,
    PER_RUN_LABELS, RESIDENT, SHA256_HEX, Setting, UNBOUNDED_ACCEPTED, UNCONFINED, View,
    nothing)

if TYPE_CHECKING:  # the policy and the spec only arrive as arguments
    from orchestrator.guards import GuardPolicy
    from orchestrator.sandbox_spec import Limits, SandboxSpec

# -- the facets that need more than a line ------------------------------------------------------

def _uid_gid(user: str) -> tuple[int, int]:
    uid, _, gid = user.partition(":")
    return int(uid), int(gid)


def _k8s_user(spec: SandboxSpec) -> dict[str, dict[str, Any]]:
    """Every container (the corpus copy too) as the tool; the arm's container starts as the
    executor, and the tool's ids are an annotation for the `--as` of each kubectl exec."""
    uid, gid = _uid_gid(spec.user)
    ids = {"runAsNonRoot": True, "runAsUser": uid, "runAsGroup": gid}
    executor_uid, executor_gid = _uid_gid(EXECUTOR_USER)
    return {"security": ids, "pod_security": {**ids, "fsGroup": gid},
            "executor": {"runAsNonRoot": False, "runAsUser": executor_uid,
                         "runAsGroup": executor_gid},
            "annotations": {"sandbench.tool-user": spec.user}}


def _user_check(policy: GuardPolicy, view: View) -> list[Check]:
    """The container's user is the executor's; the tool's (policy.user) is never root. Runs
    recorded before the split (no executor_user) ran everything as the tool's uid."""
    user = view.config.get("User") or ""
    tool_root = policy.user.split(":")[0] in ("", "0", "root")
    if policy.executor_user is None:
        return [("user", policy.user, user, user == policy.user and not tool_root)]
    return [("user", f"{policy.executor_user} (the executor; the tool runs as {policy.user})",
             user, user == policy.executor_user and not tool_root)]


def _cap_checks(policy: GuardPolicy, view: View) -> list[Check]:
    allowed = () if policy.executor_user is None else EXECUTOR_CAPS
    dropped, added, drop_ok, add_ok = podman.caps_found(
        view.host_config.get("CapDrop") or [], view.host_config.get("CapAdd") or [], allowed,
        podman.on_podman(policy.values))
    return [("cap_drop", ["ALL"], dropped, drop_ok), ("cap_add", sorted(allowed), added, add_ok)]


def _helper_checks(policy: GuardPolicy, view: View) -> list[Check]:
    mounted = next(({"source": m[1], "target": m[2], "read_only": not m[3]}
                    for m in view.mounts if m[0] == "bind" and m[2] == HELPER_PATH),
                   "not mounted")
    facts = view.host_facts.get("helper")
    hashed = facts if isinstance(facts, dict) else {}
    digest = policy.helper.get("sha256")
    pid1 = HELPER_SERVE if policy.resident else HELPER_IDLE
    host_config, config = view.host_config, view.config
    return [
        ("helper_mount", {"source": policy.helper.get("source"), "target": HELPER_PATH,
                          "read_only": True}, mounted, None),
        ("helper_digest", digest, hashed.get("error") or hashed.get("sha256") or "not hashed",
         hashed.get("error") is None and hashed.get("path") == policy.helper.get("source")
         and hashed.get("sha256") == digest and SHA256_HEX.fullmatch(str(digest)) is not None),
        ("pid1", f"{pid1} as PID 1, no init wrapper",
         " ".join([*(config.get("Entrypoint") or []), *(config.get("Cmd") or [])])
         + (" under docker-init" if host_config.get("Init") else ""),
         not host_config.get("Init") and not config.get("Entrypoint")
         and " ".join(config.get("Cmd") or []) == pid1),
    ]


def _helper_create(spec: SandboxSpec) -> dict[str, Any]:
    # PID 1 is the helper: `serve` answers requests on its stdin (the attach stream), `idle`
    # only reaps while each command comes in through docker exec. The kernel shields a
    # namespace's init from every signal sent inside it, so a tool cannot end the container
    # (docker-init would exit with its child, and any same-uid tool can kill that child).
    return {"command": [HELPER_PATH, "serve" if spec.exec_path == RESIDENT else "idle"],
            "entrypoint": [], "init": False}


def _mount_checks(policy: GuardPolicy, view: View) -> list[Check]:
    declared = sorted(("volume" if m.volume else "bind", m.source, m.target, not m.read_only)
                      for m in (*policy.mounts, policy.helper_mount))
    mounts = view.mounts
    return [("tmpfs", policy.tmpfs, podman.tmpfs_found(view.host_config.get(
                "Tmpfs") or {}, podman.on_podman(policy.values)), None),
            ("mounts", declared, mounts, None),
            ("docker_socket", "not mounted", "mounted" if any(
                "docker.sock" in str(m[1]) for m in mounts) else "not mounted", None)]


def _mounts_compose(spec: SandboxSpec, create: dict[str, Any]) -> dict[str, Any]:
    def source(target: str) -> str:
        if target == HELPER_PATH:
            return COMPOSE_HELPER
        return f"${{SANDBENCH_WORK:?}}/{spec.arm}/{target.strip('/')}"
    return {"tmpfs": [f"{path}:{opts}" for path, opts in create["tmpfs"].items()],
            "volumes": [{"type": "bind", "source": source(m["Target"]), "target": m["Target"],
                         "read_only": m["ReadOnly"]} for m in create["mounts"]]}


def _mounts_k8s(spec: SandboxSpec) -> dict[str, Any]:
    """The arm's mounts as generic ephemeral volumes requested at their bounds, /tmp in
    memory at its bound, and the helper a read-only file of the node's."""
    arm = [(m.target.strip("/"), m.target, m.size_bytes) for m in spec.mounts]
    run = {labels.LABEL_RUN: spec.run_id, K8S_MANAGED_BY: "sandbench"}
    volumes = [{"name": name, "ephemeral": {"volumeClaimTemplate": {
        "metadata": {"labels": run},
        "spec": {"accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": str(size)}}}}}}
        for name, _, size in arm]
    volumes += [{"name": "tmp", "emptyDir": {"medium": "Memory",
                                             "sizeLimit": str(spec.limits.tmp_bytes)}},
                {"name": "helper", "hostPath": {
                    "path": f"{NODE_HELPER_DIR}/{spec.helper.source.name}", "type": "File"}}]
    mounts = [*({"name": name, "mountPath": target} for name, target, _ in arm),
              {"name": "tmp", "mountPath": "/tmp"},
              {"name": "helper", "mountPath": HELPER_PATH, "readOnly": True}]
    # No service-account token is mounted either.
    return {"volumes": volumes, "mounts": mounts, "pod": {"automountServiceAccountToken": False}}


def _channel_checks(policy: GuardPolicy, view: View) -> list[Check]:
    # Stdin open only for the resident executor's requests; never a TTY, and never closed
    # after one attach (StdinOnce), which would end the channel. Runs recorded before the
    # resident executor (no exec_path) carry no channel guards.
    if policy.exec_path is None:
        return []
    config = view.config
    return [("exec_channel", {"open_stdin": policy.resident, "stdin_once": False, "tty": False},
             {"open_stdin": config.get("OpenStdin"), "stdin_once": config.get("StdinOnce"),
              "tty": config.get("Tty")}, None)]


def _engine_pids(runtime: str | None, limits: Limits) -> dict[str, int]:
    """The pids limit asked of the engine, where it is not the arm's own (under runsc)."""
    if runtime in (None, runtimes.RUNC):
        return {}
    return {"engine_pids": runtimes.engine_pids(runtime, limits.pids)}


def _tmpfs(spec: SandboxSpec) -> dict[str, str]:
    """A bounded /tmp; on Podman also its own two, as sandbench bounds them (podman.py)."""
    own = podman.OWN_TMPFS if spec.engine == podman.PODMAN else {}
    return {"/tmp": f"rw,nosuid,nodev,size={spec.limits.tmp_bytes},mode=1777", **own}


def k8s_runtime_class(runtime: str) -> str:
    """The RuntimeClass a Job names for a runtime other than the cluster's default."""
    return f"sandbench-{runtime}"


def image_var(arm: str) -> str:
    """The compose variable holding an arm's image id on this host."""
    return "SANDBENCH_IMAGE_" + arm.upper().replace("-", "_")


SETTINGS: tuple[Setting, ...] = (
    # The deny-all NetworkPolicy beside the Jobs is the rest of the Kubernetes side.
    Setting("network",  # no interface but lo, no name service
            create=lambda s: {"network_mode": "none"},
            outside=lambda p, v: [
                ("network_mode", "none", v.host_config.get("NetworkMode"), None),
                ("networks", ["none"], podman.networks_none(
                    (v.inspect.get("NetworkSettings") or {}).get("Networks") or {},
                    podman.on_podman(p.values)), None)],
            inside=("interfaces", "routes", "name_lookup", "loopback_tcp", "loopback_udp"),
            compose=lambda s, c: dict(c),
            # Name lookups go to the pod's own loopback, where nothing answers.
            k8s=lambda s: {"pod": {"hostNetwork": False, "dnsPolicy": "None",
                                   "dnsConfig": {"nameservers": ["127.0.0.1"]}}}),
    # Privilege shows inside as the capability sets the probe reads (`capabilities`).
    Setting("privileged",  # no device or kernel access beyond a plain container
            create=lambda s: {"privileged": False},
            outside=lambda p, v: [("privileged", False, v.host_config.get("Privileged"), None)],
            compose=lambda s, c: dict(c),
            k8s=lambda s: {"security": {"privileged": False}}),
    # Every capability dropped but the executor's two, which the tool never holds.
    Setting("capabilities",  # none for the tool; SETUID and SETGID for the executor
            create=lambda s: {"cap_drop": ["ALL"], "cap_add": list(EXECUTOR_CAPS)},
            outside=_cap_checks,
            inside=("cap_eff", "cap_bnd", "cap_amb", "tool_capabilities",
                    "executor_capabilities"),
            compose=lambda s, c: dict(c),
            k8s=lambda s: {"security": {"capabilities": {"drop": ["ALL"]}},
                           "executor": {"capabilities": {"drop": ["ALL"],
                                                         "add": list(EXECUTOR_CAPS)}}}),
    Setting("read_only_root",  # the image's files cannot change
            create=lambda s: {"read_only": True},
            outside=lambda p, v: [
                ("read_only_root", True, v.host_config.get("ReadonlyRootfs"), None)],
            inside=("root_writable", "root_read_only_mount"),
            compose=lambda s, c: dict(c),
            k8s=lambda s: {"security": {"readOnlyRootFilesystem": True}}),
    # The container runs as the executor; the tool's uid (a compose variable, the same file
    # on every machine) is given to each command with `--as`.
    Setting("user",  # the executor as uid 0, the tool as a non-root uid:gid
            create=lambda s: {"user": EXECUTOR_USER},
            outside=_user_check,
            inside=("uid", "gid", "executor_uid", "executor_signal", "executor_environ",
                    "executor_fds"),
            policy=lambda s: {"executor_user": EXECUTOR_USER},
            compose=lambda s, c: dict(c),
            k8s=_k8s_user),
    Setting("no_new_privileges",  # no setuid or file capability gains anything
            create=lambda s: {"security_opt": ["no-new-privileges:true"]},
            outside=lambda p, v: [(
                "no_new_privileges", "no-new-privileges:true",
                v.host_config.get("SecurityOpt") or [],
                any(o in ("no-new-privileges", "no-new-privileges:true")
                    for o in v.host_config.get("SecurityOpt") or []))],
            inside=("no_new_privs",),
            compose=lambda s, c: dict(c),
            k8s=lambda s: {"security": {"allowPrivilegeEscalation": False}}),
    # The engine's default seccomp and AppArmor profiles: nothing to ask for at create or in
    # compose, only no opt-out to refuse.
    Setting("confinement",  # the engine's default seccomp and LSM profiles
            create=nothing,
            outside=lambda p, v: [(
                "confinement", NO_OPT_OUT, sorted(
                    o for o in v.host_config.get("SecurityOpt") or []
                    if o.replace(":", "=") in UNCONFINED) or NO_OPT_OUT, None)],
            inside=("seccomp",),
            k8s=lambda s: {"security": {"seccompProfile": {"type": "RuntimeDefault"}},
                           "pod_security": {"seccompProfile": {"type": "RuntimeDefault"}}}),
    # No engine-side log of PID 1's output (a tool could write it through /proc). A kubelet
    # always keeps container logs: the Job has no key for it (see the k8s header).
    Setting("logging",  # no engine-side log a tool could fill
            create=lambda s: {"log_config": {"type": "none"}},
            outside=lambda p, v: [("log_driver", "none",
                                   (v.host_config.get("LogConfig") or {}).get("Type"), None)],
            compose=lambda s, c: {"logging": {"driver": c["log_config"]["type"]}}),
    # No image HEALTHCHECK running code beside the measured commands; a Job declares no
    # probes, Kubernetes' default.
    Setting("healthcheck",  # no code runs beside the measured commands
            create=lambda s: {"healthcheck": {"test": ["NONE"]}},
            outside=lambda p, v: [("healthcheck", ["NONE"],
                                   (v.config.get("Healthcheck") or {}).get("Test"), None)],
            compose=lambda s, c: {"healthcheck": {"disable": True}}),
    Setting("memory",  # the arm's memory, swap included
            create=lambda s: {"mem_limit": s.limits.memory_bytes,
                              "memswap_limit": s.limits.memory_bytes},
            outside=lambda p, v: [
                ("memory_bytes", p.values["memory_bytes"], v.host_config.get("Memory"), None),
                ("memory_swap_bytes", p.values["memory_bytes"], v.host_config.get("MemorySwap"),
                 None)],
            inside=("memory_in_force",),
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
            create=lambda s: {"pids_limit": runtimes.engine_pids(s.runtime, s.limits.pids)},
            outside=lambda p, v: [
                ("pids_limit", p.values.get("engine_pids", p.values["pids"]),
                 v.host_config.get("PidsLimit"), None)],
            inside=("pids_in_force",),
            record=lambda limits, runtime: {"pids": limits.pids, **_engine_pids(runtime, limits)},
            policy=lambda s: {"pids": s.limits.pids, **_engine_pids(s.runtime, s.limits)},
            compose=lambda s, c: dict(c),
            k8s=lambda s: {"annotations": {"sandbench.pids": str(s.limits.pids)}}),
    Setting("cpus",  # the arm's CPU time
            create=lambda s: {"nano_cpus": s.limits.nano_cpus},
            outside=lambda p, v: [("nano_cpus", p.values["nano_cpus"],
                                   v.host_config.get("NanoCpus"), None)],
            inside=("cpus_in_force",),
            record=lambda limits, _: {"cpus": limits.cpus},
            policy=lambda s: {"nano_cpus": s.limits.nano_cpus},
            compose=lambda s, c: {"cpus": s.limits.cpus},
            k8s=lambda s: {"resources": {"cpu": f"{s.limits.nano_cpus // 1_000_000}m"}}),
    # Its mount is among `mounts`; here what runs as PID 1 and the digest of what is mounted.
    Setting("helper",  # the host's helper, and nothing else, as PID 1
            create=_helper_create, outside=_helper_checks, inside=("image_helpers",),
            compose=lambda s, c: dict(c),
            k8s=lambda s: {"container": {"command": _helper_create(s)["command"]},
                           "annotations": {"sandbench.helper.sha256": s.helper.sha256}}),
    Setting("mounts",  # only the declared mounts, each bounded, and a bounded /tmp
            create=lambda s: {"tmpfs": _tmpfs(s), "mounts": [
                m.engine_spelling for m in (*s.mounts, s.helper_mount)]},
            outside=_mount_checks,
            inside=("mount_list", "mount_modes", "mount_sizes", "tool_writable"),
            record=lambda limits, _: {"tmp_bytes": limits.tmp_bytes},
            # Runs recorded before the probe proved them carry no `tool_writable`, and none
            # of the limits-in-force guards (orchestrator/in_force.py).
            policy=lambda s: {"tmpfs": _tmpfs(s), "tool_writable": s.tool_writable},
            compose=_mounts_compose, k8s=_mounts_k8s),
    # Docker gives no device unless asked, nor does a pod.
    Setting("devices",  # no host device
            create=nothing,
            outside=lambda p, v: [("devices", [], v.host_config.get("Devices") or [], None)]),
    # Debian's docker-compose 1.29 has no key for the cgroup namespace (Compose v2 spells it
    # `cgroup: private`): it is recorded as x-sandbench-cgroupns.
    Setting("namespaces",  # no namespace shared with the host
            create=lambda s: {"ipc_mode": "private", "cgroupns": "private",
                              "hostname": "sandbox"},
            outside=lambda p, v: [("host_namespaces", [], sorted(
                k for k in HOST_NAMESPACES if v.host_config.get(k) == "host"), None)],
            compose=lambda s, c: {"ipc": c["ipc_mode"], "x-sandbench-cgroupns": c["cgroupns"],
                                  "hostname": c["hostname"]},
            k8s=lambda s: {"pod": {"hostPID": False, "hostIPC": False,
                                   "shareProcessNamespace": False, "hostname": "sandbox"}}),
    # The kernel between the tool and the host: the engine's runtime, named in the Job by the
    # RuntimeClass the Kubernetes export writes beside it (k8s.runtime_class). Runs recorded
    # before runtimes were declared ran under runc and carry neither runtime guard.
    Setting("runtime",  # runc (the host's kernel) or runsc (gVisor's)
            create=lambda s: {"runtime": s.runtime},
            outside=lambda p, v: [] if p.runtime is None else [
                ("runtime", p.runtime, podman.runtime_found(
                    v.host_config.get("Runtime"), p.runtime, podman.on_podman(p.values)),
                 None)],
            inside=("kernel",),
            policy=lambda s: {"runtime": s.runtime, **podman.policy_values(s.engine)},
            compose=lambda s, c: dict(c),
            k8s=lambda s: {"pod": {"runtimeClassName": k8s_runtime_class(s.runtime)}}
            if s.runtime != runtimes.RUNC else {}),
    # The image by its locked id; a compose file names it by a variable of this host's.
    Setting("image",  # the locked image
            create=lambda s: {"image": s.image_id},
            outside=lambda p, v: [("image_id", p.image_id, v.inspect.get("Image"), None)],
            compose=lambda s, c: {"image": f"${{{image_var(s.arm)}:?write bench/compose/"
                                           "*.env with sandbench compose export}"},
            k8s=lambda s: {"container": {"image": s.image_id, "imagePullPolicy": "Never"}}),
    # Exactly the arm's environment (the policy's includes the image's own ENV).
    Setting("env",  # exactly the declared environment
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
            create=lambda s: {"stdin_open": s.exec_path == RESIDENT},
            outside=_channel_checks, inside=("channel_private",),
            compose=lambda s, c: dict(c),
            k8s=lambda s: {"container": {"stdin": False, "tty": False}}),
)


def _merge(into: dict[str, Any], part: Mapping[str, Any], setting: str) -> None:
    """One setting's keys into the whole: a key two settings both give is a table bug."""
    for key, value in part.items():
        if key in into:
            raise ValueError(f"isolation setting {setting!r} gives {key!r} again")
        into[key] = value


def fold(parts: Iterable[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for name, part in parts:
        _merge(merged, part, name)
    return merged


def create_kwargs(spec: SandboxSpec) -> dict[str, Any]:
    """The engine's create arguments of every setting."""
    return fold((s.name, s.create(spec)) for s in SETTINGS)


def outside_checks(policy: GuardPolicy, inspect: dict[str, Any], host_facts: dict[str, Any]
                   ) -> list[Check]:
    view = View(inspect, host_facts)
    return [check for s in SETTINGS for check in s.outside(policy, view)]


def record_limits(limits: Limits, runtime: str = runtimes.DEFAULT) -> dict[str, Any]:
    """The limits an exec record states under `runtime` (the run adds its per-command
    bounds)."""
    return fold((s.name, s.record(limits, runtime)) for s in SETTINGS)


def policy_values(spec: SandboxSpec) -> dict[str, Any]:
    """The guard policy's values of the settings (the rest of it names the container)."""
    return fold((s.name, s.policy(spec)) for s in SETTINGS)


def compose_service(spec: SandboxSpec) -> dict[str, Any]:
    """The compose service's keys of every setting."""
    return fold((s.name, s.compose(spec, s.create(spec))) for s in SETTINGS)


def k8s_parts(spec: SandboxSpec) -> dict[str, Any]:
    """Every setting's Kubernetes keys by place (K8S_PLACES), and items of the lists
    (K8S_LISTS) in the table's order."""
    places: dict[str, Any] = {place: {} for place in K8S_PLACES}
    places.update({name: [] for name in K8S_LISTS})
    for s in SETTINGS:
        for place, part in s.k8s(spec).items():
            if place in K8S_LISTS:
                places[place].extend(part)
            else:
                _merge(places[place], part, s.name)
    return places

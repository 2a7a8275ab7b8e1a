"""The facets of the isolation settings that need more than a line in the table
(isolation/table.py): a setting's outside checks of the engine's inspect, its create
arguments, compose keys and Kubernetes keys, each a function of the spec or the stored policy.
Nothing here talks to the engine."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orchestrator import labels
from orchestrator.sandbox import podman, runtimes
from orchestrator.isolation.values import (
    COMPOSE_HELPER, EXECUTOR_CAPS, EXECUTOR_USER, HELPER_IDLE, HELPER_PATH, HELPER_SERVE,
    K8S_MANAGED_BY, NODE_HELPER_DIR, RESIDENT, SHA256_HEX, Check, View)

if TYPE_CHECKING:  # the policy, the limits and the spec only arrive as arguments
    from orchestrator.isolation.limits import Limits
    from orchestrator.isolation.policy import GuardPolicy
    from orchestrator.isolation.spec import ContainerSpec


def uid_gid(user: str) -> tuple[int, int]:
    uid, _, gid = user.partition(":")
    return int(uid), int(gid)


def k8s_user(spec: ContainerSpec) -> dict[str, dict[str, Any]]:
    """Every container (the corpus copy too) as the tool; the arm's container starts as the
    executor, and the tool's ids are an annotation for the `--as` of each kubectl exec."""
    uid, gid = uid_gid(spec.user)
    ids = {"runAsNonRoot": True, "runAsUser": uid, "runAsGroup": gid}
    executor_uid, executor_gid = uid_gid(EXECUTOR_USER)
    return {"security": ids, "pod_security": {**ids, "fsGroup": gid},
            "executor": {"runAsNonRoot": False, "runAsUser": executor_uid,
                         "runAsGroup": executor_gid},
            "annotations": {"sandbench.tool-user": spec.user}}


def user_check(policy: GuardPolicy, view: View) -> list[Check]:
    """The container's user is the executor's; the tool's (policy.user) is never root. Runs
    recorded before the split (no executor_user) ran everything as the tool's uid."""
    user = view.config.get("User") or ""
    tool_root = policy.user.split(":")[0] in ("", "0", "root")
    if policy.executor_user is None:
        return [("user", policy.user, user, user == policy.user and not tool_root)]
    return [("user", f"{policy.executor_user} (the executor; the tool runs as {policy.user})",
             user, user == policy.executor_user and not tool_root)]


def cap_checks(policy: GuardPolicy, view: View) -> list[Check]:
    allowed = () if policy.executor_user is None else EXECUTOR_CAPS
    dropped, added, drop_ok, add_ok = podman.caps_found(
        view.host_config.get("CapDrop") or [], view.host_config.get("CapAdd") or [], allowed,
        podman.on_podman(policy.values))
    return [("cap_drop", ["ALL"], dropped, drop_ok), ("cap_add", sorted(allowed), added, add_ok)]


def helper_checks(policy: GuardPolicy, view: View) -> list[Check]:
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


def helper_create(spec: ContainerSpec) -> dict[str, Any]:
    # PID 1 is the helper: `serve` answers requests on its stdin (the attach stream), `idle`
    # only reaps while each command comes in through docker exec. The kernel shields a
    # namespace's init from every signal sent inside it, so a tool cannot end the container
    # (docker-init would exit with its child, and any same-uid tool can kill that child).
    return {"command": [HELPER_PATH, "serve" if spec.exec_path == RESIDENT else "idle"],
            "entrypoint": [], "init": False}


def mount_checks(policy: GuardPolicy, view: View) -> list[Check]:
    declared = sorted(("volume" if m.volume else "bind", m.source, m.target, not m.read_only)
                      for m in (*policy.mounts, policy.helper_mount))
    mounts = view.mounts
    return [("tmpfs", policy.tmpfs, podman.tmpfs_found(view.host_config.get(
                "Tmpfs") or {}, podman.on_podman(policy.values)), None),
            ("mounts", declared, mounts, None),
            ("docker_socket", "not mounted", "mounted" if any(
                "docker.sock" in str(m[1]) for m in mounts) else "not mounted", None)]


def mounts_compose(spec: ContainerSpec, create: dict[str, Any]) -> dict[str, Any]:
    def source(target: str) -> str:
        if target == HELPER_PATH:
            return COMPOSE_HELPER
        return f"${{SANDBENCH_WORK:?}}/{spec.arm}/{target.strip('/')}"
    return {"tmpfs": [f"{path}:{opts}" for path, opts in create["tmpfs"].items()],
            "volumes": [{"type": "bind", "source": source(m["Target"]), "target": m["Target"],
                         "read_only": m["ReadOnly"]} for m in create["mounts"]]}


def mounts_k8s(spec: ContainerSpec) -> dict[str, Any]:
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


def channel_checks(policy: GuardPolicy, view: View) -> list[Check]:
    # Stdin open only for the resident executor's requests; never a TTY, and never closed
    # after one attach (StdinOnce), which would end the channel. Runs recorded before the
    # resident executor (no exec_path) carry no channel guards.
    if policy.exec_path is None:
        return []
    config = view.config
    return [("exec_channel", {"open_stdin": policy.resident, "stdin_once": False, "tty": False},
             {"open_stdin": config.get("OpenStdin"), "stdin_once": config.get("StdinOnce"),
              "tty": config.get("Tty")}, None)]


def engine_pids(runtime: str | None, limits: Limits) -> dict[str, int]:
    """The pids limit asked of the engine, where it is not the arm's own (under runsc)."""
    if runtime in (None, runtimes.RUNC):
        return {}
    return {"engine_pids": runtimes.engine_pids(runtime, limits.pids)}


def tmpfs(spec: ContainerSpec) -> dict[str, str]:
    """A bounded /tmp; on Podman also its own two, as sandbench bounds them (podman.py)."""
    own = podman.OWN_TMPFS if spec.engine == podman.PODMAN else {}
    return {"/tmp": f"rw,nosuid,nodev,size={spec.limits.tmp_bytes},mode=1777", **own}


def k8s_runtime_class(runtime: str) -> str:
    """The RuntimeClass a Job names for a runtime other than the cluster's default."""
    return f"sandbench-{runtime}"


def image_var(arm: str) -> str:
    """The compose variable holding an arm's image id on this host."""
    return "SANDBENCH_IMAGE_" + arm.upper().replace("-", "_")



"""Podman's Docker API: what it answers where Docker answers otherwise, and what it adds.

Podman (4.3, `podman system service`) keeps every setting sandbench asks for but reports
some of them in its own words, and adds a few things to every container. Each equivalence
below is read only when the guard policy says the arm ran on Podman (`ENGINE_KEY`), so a
Docker engine is still held to Docker's answers, and each still refuses a real loosening:

- network `none`: no network is listed (`Networks: {}`) instead of `none`;
- `cap_drop ALL` is reported as the list of capabilities Podman's default set held, minus
  the ones added back; `CapAdd` lists only what the default set lacked;
- the runtime is reported as `oci` whatever runs it: it stands for runc only (the inside
  `kernel` guard tells runc from gVisor; an arm declared for runsc is refused outside);
- the environment gains `container=podman`, `TERM=xterm` and `HOSTNAME=<hostname>`;
- a read-only root gets tmpfs mounts at /run and /var/tmp, and its compat API cannot turn
  them off (4.3 always asks for them): sandbench asks for both itself, read-only and
  bounded, and Podman keeps those instead of its own writable ones. Podman copies the
  image's files up into every tmpfs (`tmpcopyup`), so a tool sees there what it sees under
  Docker's read-only root.
"""

from __future__ import annotations

from typing import Any
DOCKER, PODMAN = "docker", "podman"
# The guard policy's key naming the engine's dialect; absent for Docker (and in every run
# recorded before Podman was read).
ENGINE_KEY = "engine"
PODMAN_COMPONENT = "Podman Engine"
# Docker's default capability set, which Podman's default containers.conf repeats: under
# Podman every one of them but the executor's must be reported dropped.
DEFAULT_CAPS = ("AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                "NET_BIND_SERVICE", "NET_RAW", "SETFCAP", "SETGID", "SETPCAP", "SETUID",
                "SYS_CHROOT")
OCI_RUNTIME = "oci"
# Podman's own mounts on a read-only root, asked for by sandbench instead: read-only, so
# nothing is written there, and bounded all the same.
OWN_TMPFS_OPTIONS = "ro,nosuid,nodev,noexec,size=65536"
OWN_TMPFS = {"/run": OWN_TMPFS_OPTIONS, "/var/tmp": OWN_TMPFS_OPTIONS}
# Mount options Podman adds to each tmpfs it reports: propagation and copy-up of the image's
# files, neither of which makes the file system larger or writable.
REPORTED_OPTIONS = frozenset({"rprivate", "tmpcopyup"})


def dialect(version: dict[str, Any]) -> str:
    """`podman` when the engine's version names Podman's engine among its components."""
    components = version.get("Components") or []
    names = {c.get("Name") for c in components if isinstance(c, dict)}
    return PODMAN if PODMAN_COMPONENT in names else DOCKER


def on_podman(values: dict[str, Any]) -> bool:
    return values.get(ENGINE_KEY) == PODMAN


def networks_none(networks: dict[str, Any], podman: bool) -> list[str]:
    """The networks found, with Podman's empty map for `none` read as `none`."""
    return ["none"] if podman and networks == {} else sorted(networks)


def caps_found(cap_drop: list[str], cap_add: list[str], allowed: tuple[str, ...], podman: bool
               ) -> tuple[list[str], list[str], bool | None, bool | None]:
    """(dropped, added, dropped ok, added ok) as the capability guards read them; ok None
    means "compare". Under Podman, `ALL` stands for every default capability but the
    `allowed` ones dropped, and only `allowed` ones added back (those the default set
    lacked): anything else added, or a default capability kept that is not allowed, is a
    loosening, shown by name."""
    dropped = sorted(c.upper().removeprefix("CAP_") for c in cap_drop)
    added = sorted(c.upper().removeprefix("CAP_") for c in cap_add)
    if not podman:
        return dropped, added, None, None
    kept = sorted(set(DEFAULT_CAPS) - set(allowed) - set(dropped))
    return (["ALL"] if not kept else [f"{c} kept" for c in kept], added, not kept,
            set(added) <= set(allowed))


def tmpfs_found(found: dict[str, str], podman: bool) -> dict[str, str]:
    """The tmpfs mounts found, without the options Podman adds to each it reports."""
    if not podman:
        return found
    return {path: ",".join(o for o in str(options).split(",") if o not in REPORTED_OPTIONS)
            for path, options in found.items()}


def runtime_found(runtime: Any, expected: str | None, podman: bool) -> Any:
    """Podman's `oci` read as runc where runc is expected: it reports `oci` for every
    runtime it runs, so it never stands for another (the arm is refused, `oci` shown)."""
    return "runc" if podman and runtime == OCI_RUNTIME and expected == "runc" else runtime


def env_found(env: list[str], expected: list[str], hostname: str, podman: bool) -> list[str]:
    """The environment found, without what Podman adds to every container's (unless the
    policy declares the same variable itself)."""
    if not podman:
        return sorted(env)
    names = {e.partition("=")[0] for e in expected}
    added = {"container=podman", "TERM=xterm", f"HOSTNAME={hostname}"}
    return sorted(e for e in env if e not in added or e.partition("=")[0] in names)


def policy_values(engine: str) -> dict[str, str]:
    """What the guard policy records of the engine: its dialect, on Podman only (a Docker
    engine's policy stays as before)."""
    return {ENGINE_KEY: PODMAN} if engine == PODMAN else {}

"""Podman's equivalent answers (orchestrator/sandbox/podman.py) as the outside guards read them:
each read as Docker's only on Podman, and a real loosening still refused there."""

from __future__ import annotations

from orchestrator.sandbox import podman
from orchestrator.isolation.values import EXECUTOR_CAPS

PODMAN_VERSION = {"Components": [{"Name": "Podman Engine", "Version": "4.3.1"},
                                 {"Name": "Conmon"}]}
DOCKER_VERSION = {"Components": [{"Name": "Engine", "Version": "20.10.24"}]}
# What Podman 4.3 reports for cap_drop ALL, cap_add SETUID and SETGID.
PODMAN_DROPPED = sorted(set(podman.DEFAULT_CAPS) - set(EXECUTOR_CAPS))


def test_the_dialect_is_read_from_the_engines_components() -> None:
    assert podman.dialect(PODMAN_VERSION) == podman.PODMAN
    assert podman.dialect(DOCKER_VERSION) == podman.DOCKER
    assert podman.dialect({"Components": None}) == podman.DOCKER


def test_podmans_dropped_list_stands_for_all_only_on_podman() -> None:
    assert podman.caps_found(PODMAN_DROPPED, [], EXECUTOR_CAPS, True) == (
        ["ALL"], [], True, True)
    # On Docker the same answer is compared as it is: not ALL.
    dropped, _, drop_ok, _ = podman.caps_found(PODMAN_DROPPED, [], EXECUTOR_CAPS, False)
    assert drop_ok is None and dropped != ["ALL"]


def test_a_capability_added_or_kept_on_podman_is_refused_by_name() -> None:
    _, added, _, add_ok = podman.caps_found(PODMAN_DROPPED, ["CAP_SYS_ADMIN"], EXECUTOR_CAPS,
                                            True)
    assert (added, add_ok) == (["SYS_ADMIN"], False)
    kept = [c for c in PODMAN_DROPPED if c != "NET_RAW"]
    assert podman.caps_found(kept, [], EXECUTOR_CAPS, True)[::2] == (["NET_RAW kept"], False)
    # Before the split uids the tool kept none: SETUID is a loosening there.
    assert podman.caps_found(PODMAN_DROPPED, [], (), True)[2] is False


def test_no_network_listed_is_none_only_on_podman() -> None:
    assert podman.networks_none({}, True) == ["none"]
    assert podman.networks_none({}, False) == []
    assert podman.networks_none({"podman": {}}, True) == ["podman"]


def test_oci_stands_for_runc_only() -> None:
    assert podman.runtime_found("oci", "runc", True) == "runc"
    assert podman.runtime_found("oci", "runc", False) == "oci"
    # An arm declared for gVisor: Podman's `oci` does not say it ran there.
    assert podman.runtime_found("oci", "runsc", True) == "oci"


def test_only_podmans_own_variables_are_left_out_of_the_environment() -> None:
    found = ["container=podman", "TERM=xterm", "HOSTNAME=sandbox", "HOME=/state",
             "LD_PRELOAD=/x.so"]
    assert podman.env_found(found, ["HOME=/state"], "sandbox", True) == [
        "HOME=/state", "LD_PRELOAD=/x.so"]
    assert podman.env_found(found, ["HOME=/state"], "sandbox", False) == sorted(found)
    # Another hostname's variable, or one the policy declares itself, is not Podman's own.
    assert "HOSTNAME=elsewhere" in podman.env_found(["HOSTNAME=elsewhere"], [], "sandbox", True)
    assert podman.env_found(["TERM=xterm"], ["TERM=dumb"], "sandbox", True) == ["TERM=xterm"]


def test_podmans_added_tmpfs_options_are_dropped_but_nothing_else() -> None:
    found = {"/run": "ro,nosuid,nodev,noexec,size=65536,rprivate,tmpcopyup",
             "/var/tmp": "rw,rprivate,nosuid,nodev,tmpcopyup"}
    assert podman.tmpfs_found(found, True) == {"/run": podman.OWN_TMPFS_OPTIONS,
                                               "/var/tmp": "rw,nosuid,nodev"}
    assert podman.tmpfs_found(found, False) == found


def test_the_policy_names_podman_only() -> None:
    assert podman.policy_values(podman.PODMAN) == {podman.ENGINE_KEY: podman.PODMAN}
    assert podman.policy_values(podman.DOCKER) == {}
    assert podman.on_podman({podman.ENGINE_KEY: podman.PODMAN})
    assert not podman.on_podman({})

"""Every output of the isolation table (isolation/table.py), folded from its settings in the
table's order: the engine's create arguments, the outside and inside checks, an exec record's
limits, the guard policy's values, a compose service, a Kubernetes Job's keys and its
read-back, and the create arguments of sandbench's own containers. The table is read through
its module at each call, so a setting added to it (a test's, too) reaches all of them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from orchestrator.sandbox import runtimes
from orchestrator.isolation import table
from orchestrator.isolation.setting import OWN_CONTAINERS, Pair
from orchestrator.isolation.values import K8S_LISTS, K8S_PLACES, Check, Job, Probe, View

if TYPE_CHECKING:  # the policy, the limits and the spec only arrive as arguments
    from orchestrator.isolation.limits import Limits
    from orchestrator.isolation.policy import GuardPolicy
    from orchestrator.isolation.spec import ContainerSpec

# The inside guards in the order stored verdicts hold them (`audit` compares a stored verdict
# with the recomputed one, in order): the probe's order from before each setting carried its
# own check. A guard not named here (a setting added since) follows them, in the table's order.
VERDICT_ORDER = (
    "interfaces", "routes", "name_lookup", "loopback_tcp", "loopback_udp", "root_writable",
    "root_read_only_mount", "uid", "gid", "cap_eff", "cap_bnd", "cap_amb", "no_new_privs",
    "seccomp", "mount_list", "mount_modes", "mount_sizes", "image_helpers", "channel_private",
    "kernel", "tool_capabilities", "executor_uid", "executor_capabilities", "executor_signal",
    "executor_environ", "executor_fds", "memory_in_force", "pids_in_force", "cpus_in_force",
    "tool_writable")
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


def create_kwargs(spec: ContainerSpec) -> dict[str, Any]:
    """The engine's create arguments of every setting."""
    return fold((s.name, s.create(spec)) for s in table.SETTINGS)


def outside_checks(policy: GuardPolicy, inspect: dict[str, Any], host_facts: dict[str, Any]
                   ) -> list[Check]:
    view = View(inspect, host_facts)
    return [check for s in table.SETTINGS for check in s.outside(policy, view)]


def record_limits(limits: Limits, runtime: str = runtimes.DEFAULT) -> dict[str, Any]:
    """The limits an exec record states under `runtime` (the run adds its per-command
    bounds)."""
    return fold((s.name, s.record(limits, runtime)) for s in table.SETTINGS)


def policy_values(spec: ContainerSpec) -> dict[str, Any]:
    """The guard policy's values of the settings (the rest of it names the container)."""
    return fold((s.name, s.policy(spec)) for s in table.SETTINGS)


def compose_service(spec: ContainerSpec) -> dict[str, Any]:
    """The compose service's keys of every setting."""
    return fold((s.name, s.compose(spec, s.create(spec))) for s in table.SETTINGS)


def k8s_parts(spec: ContainerSpec) -> dict[str, Any]:
    """Every setting's Kubernetes keys by place (K8S_PLACES), and items of the lists
    (K8S_LISTS) in the table's order."""
    places: dict[str, Any] = {place: {} for place in K8S_PLACES}
    places.update({name: [] for name in K8S_LISTS})
    for s in table.SETTINGS:
        for place, part in s.k8s(spec).items():
            if place in K8S_LISTS:
                places[place].extend(part)
            else:
                _merge(places[place], part, s.name)
    return places


def inside_checks(policy: GuardPolicy, probe: dict[str, Any]) -> list[Check]:
    """Every setting's inside checks of the helper's probe, in the verdict's order."""
    seen = Probe.of(probe)
    found = [check for s in table.SETTINGS for check in s.inside(policy, seen)]
    rank = {guard: i for i, guard in enumerate(VERDICT_ORDER)}
    return sorted(found, key=lambda check: rank.get(check[0], len(rank)))


def k8s_drift(policy: GuardPolicy, job: Job) -> list[Pair]:
    """Every setting's read-back of a Job against a run's policy, the pairs that differ."""
    return [(what, want, got) for s in table.SETTINGS for what, want, got in s.k8s_read(policy, job)
            if want != got]


def own_create(container: str) -> dict[str, Any]:
    """The create arguments every setting gives one of sandbench's own containers
    (setting.OWN_CONTAINERS); a setting that does not apply to it says why in the table."""
    if container not in OWN_CONTAINERS:
        raise ValueError(f"no own container named {container!r}")
    return fold((s.name, part) for s in table.SETTINGS
                if not isinstance(part := s.own[container], str))

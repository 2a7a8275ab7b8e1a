"""The shape of one isolation setting (`Setting`): every place it shows, each a function of
the sandbox spec, the stored policy or a snapshot, so that the table (isolation/table.py)
holds one entry per setting and `folds` derives every document from it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from orchestrator.isolation.values import Check, Job, Probe, View

if TYPE_CHECKING:  # the policy and the spec only arrive as arguments
    from orchestrator.isolation.limits import Limits
    from orchestrator.isolation.policy import GuardPolicy
    from orchestrator.isolation.spec import ContainerSpec

# sandbench's own containers, which run no arm's code under its limits but take what applies
# of each setting from the table too: the engine agent (orchestrator/sandbox/remote.py: a
# short-lived container making an arm's file systems on an engine's host), a copy holder there
# (created, never started), the container an image build's helper is copied out of (never
# started), the one reading an image's manifests (its tool's version command), and a build's
# RUN steps.
AGENT = "agent"
HOLDER = "holder"
BUILD_HELPER = "build_helper"
MANIFEST = "manifest"
BUILD = "build"
OWN_CONTAINERS = (AGENT, HOLDER, BUILD_HELPER, MANIFEST, BUILD)

# What `own` says for a container that never starts: nothing runs in it to be confined.
NEVER_STARTED = "created, never started: nothing runs in it"
# What `own` says for a build's RUN steps: the engine's build makes those containers and its
# API takes only the network (images/build.py: none for an offline recipe).
BUILD_API = "the engine's build makes the RUN steps' containers: its API takes none of this"

# One difference a Kubernetes read-back can find: (what, the policy's value, the Job's).
Pair = tuple[str, Any, Any]
# For each of sandbench's own containers: the create arguments a setting gives it, or why the
# setting does not apply to it.
Own = Mapping[str, Mapping[str, Any] | str]


def nothing(*_: Any) -> dict[str, Any]:
    return {}


def none_read(*_: Any) -> list[Any]:
    return []


def own(default: Mapping[str, Any] | str, **per: Mapping[str, Any] | str) -> dict[
        str, Mapping[str, Any] | str]:
    """`default` for each of sandbench's own containers, but what `per` names (by consumer)
    for the ones it names; a container that never starts is `NEVER_STARTED` unless named."""
    unknown = set(per) - set(OWN_CONTAINERS)
    if unknown:
        raise ValueError(f"no own container named {sorted(unknown)}")
    started = {AGENT: default, MANIFEST: default, HOLDER: NEVER_STARTED,
               BUILD_HELPER: NEVER_STARTED, BUILD: BUILD_API}
    return {name: per.get(name, started[name]) for name in OWN_CONTAINERS}


@dataclass(frozen=True)
class Setting:
    """One isolation setting and every place it shows. A facet left at its default has
    nothing to say there, and the table says why in a comment; `own` has no default: each
    setting says, for each of sandbench's own containers, what it gives it or why not."""

    name: str
    create: Callable[[ContainerSpec], dict[str, Any]]  # the engine's create arguments
    outside: Callable[[GuardPolicy, View], list[Check]]
    own: Own
    # The probe's guards that prove it from inside; none for runs recorded before them.
    inside: Callable[[GuardPolicy, Probe], list[Check]] = none_read
    # An exec record's `limits`, from the arm's limits and the runtime it ran under.
    record: Callable[[Limits, str], dict[str, Any]] = nothing
    policy: Callable[[ContainerSpec], dict[str, Any]] = nothing  # the guard policy's values
    # The compose service's keys, from the spec and this setting's own create arguments.
    compose: Callable[[ContainerSpec, dict[str, Any]], dict[str, Any]] = nothing
    k8s: Callable[[ContainerSpec], dict[str, Any]] = nothing
    # Where a Job differs from a run's stored policy in this setting (`k8s drift`).
    k8s_read: Callable[[GuardPolicy, Job], list[Pair]] = none_read

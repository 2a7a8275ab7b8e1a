"""The engines of a run, as one pool whatever their number: which addresses are accepted,
what each engine is (its facts, recorded in run.json) and where each arm runs. One engine is
a pool of one (`one`): a run takes the same path with one engine as with several.

An arm's container lives on one engine (its cold and warm cells and its index stay
together). An engine on this host (a unix socket here) bind-mounts the arm's file systems
(workfs: loop-mounted ext4 images) and the timing helper from this host. An ssh:// or tcp://
engine is another host's: there the run's work volume, the arm's file systems, its corpus
copy and the helper are made through that engine by the engine agent
(orchestrator/sandbox/remote.py).
What an engine must have and pass before an arm runs on it is `run.ready`'s.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from orchestrator import log
from orchestrator.sandbox import engine_limits, podman, userns
from orchestrator.engine import Engine, engine_address, tls_config
from orchestrator.errors import InputError, SandbenchError
from orchestrator.images import ImageLock
from orchestrator.settings import Settings

logger = log.get(__name__)

MOVE, STOP = "move", "stop"
ON_REFUSED = (MOVE, STOP)
PLAIN_TCP_WHY = ("the Docker API over plain TCP is neither encrypted nor authenticated: "
                 "whoever reaches the port controls that engine as root, and the run's images, "
                 "commands and transcripts cross the network in clear")


def check_address(url: str, insecure: bool) -> str:
    """An engine URL as the docker SDK takes it, refused when it is a plain TCP one and the
    user did not say --insecure-engine."""
    scheme = urlparse(url).scheme
    if scheme not in ("unix", "ssh", "tcp", "https", "http"):
        raise InputError.bad_value("--engine", "--engine",
                                   "unix://PATH, ssh://[USER@]HOST or tcp://HOST:PORT", url)
    plain = scheme == "http" or (scheme == "tcp" and tls_config() is None)
    if plain and not insecure:
        raise InputError(f"engine {url}: plain tcp:// without TLS is refused",
                         why=PLAIN_TCP_WHY,
                         fix="set DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH (ca.pem, cert.pem, "
                             "key.pem), use ssh://, or pass --insecure-engine on a network "
                             "only you can reach", key="--engine", found=url)
    return url


def on_this_host(url: str) -> bool:
    """A unix socket that exists here: the engine shares this host's file systems."""
    parsed = urlparse(url)
    path = parsed.path if not parsed.netloc else f"/{parsed.netloc}{parsed.path}"
    return parsed.scheme == "unix" and Path(path).is_socket()


@dataclass
class Member:
    """One engine of a run: its address, connection and facts, and why it was refused."""

    url: str
    engine: Engine
    facts: dict[str, Any]
    refused: str | None = None
    imported: dict[str, float] = field(default_factory=dict)  # image -> seconds to bring
    # What the engine's placement opened there for the run (placement.open_engine), if any.
    site: object | None = None
    # Whether it shares this host's file systems, decided once: the placement chosen for its
    # arms must not change when the engine dies and its socket goes with it.
    local: bool = field(init=False)
    # Whether this process makes its arms' file systems here, by loop mounts: only on an
    # engine of this host, and only as root (else the engine makes them: placement).
    mounts_here: bool = field(init=False)

    def __post_init__(self) -> None:
        self.local = on_this_host(self.url)
        self.mounts_here = self.local and os.geteuid() == 0

    @property
    def id(self) -> str:
        return str(self.facts["id"])


def facts(engine: Engine, url: str) -> dict[str, Any]:
    """What run.json and the disclosure record of an engine: its versions and its host's
    architecture, cores and memory (never its host name)."""
    version = engine.version()
    info = engine.info()
    # `docker info`'s ID comes from a key file that daemons of one host may share; with the
    # daemon's root directory it names one engine (the directory itself is not recorded).
    # Podman answers a new random ID each time: its host's name stands for it.
    host = info.get("Name") if engine.dialect == podman.PODMAN else info.get("ID")
    identity = f"{host}\0{info.get('DockerRootDir')}".encode()
    return {"id": "engine-" + hashlib.sha256(identity).hexdigest()[:12], "url": url,
            "version": version.get("Version"), "api_version": version.get("ApiVersion"),
            "dialect": engine.dialect,
            "kernel": version.get("KernelVersion"),
            "os": version.get("Os"), "arch": info.get("Architecture"),
            "cores": info.get("NCPU"), "memory_bytes": info.get("MemTotal"),
            "storage_driver": info.get("Driver"), "security_options": info.get("SecurityOptions"),
            "on_this_host": on_this_host(url),
            # Whether it remaps its containers' ids (userns-remap, or rootless); the mapping
            # is read by learn_ids.
            "userns": {"remap": userns.remaps(info)}, "rootless": userns.rootless(info),
            "limits": engine_limits.facts(info)}


def learn_ids(member: Member, settings: Settings, user: str, run_id: str) -> None:
    """Once per engine, before any file is made for its containers: on one that remaps
    their ids, the mapping the kernel applies, read from a probe container of the locked
    base image and kept in its facts (run.json records it). Only an engine on this host
    can be read so; another host's that remaps is refused by name."""
    found = member.facts.get("userns") or {}
    if not found.get("remap") or "uid_map" in found:
        return
    if not member.local:
        raise SandbenchError(f"engine {member.url} remaps its containers' ids (userns-remap "
                             "or rootless)",
                             why="the mapping is read from /proc of the engine's host, and "
                                 "the files of an engine of another host are made there",
                             fix="run its arms on a rootful engine without userns-remap, or "
                                 "on this host's")
    ids = userns.probe(member.engine, ImageLock.load(settings.images_lock).image_id("base"),
                       user, run_id)
    found.update(ids.to_json())
    logger.info("engine_remaps_ids", engine=member.id, **ids.to_json())


def connect(urls: Sequence[str] | None, insecure: bool = False) -> list[Member]:
    """Every engine given (the default one when none is), each URL checked before it is
    dialled; two URLs reaching the same engine are one member."""
    members: list[Member] = []
    for url in [check_address(u, insecure) for u in (urls or [engine_address()])]:
        engine = Engine.connect(address=url)
        member = Member(url, engine, facts(engine, url))
        if any(m.id == member.id for m in members):
            logger.warning("engine_listed_twice", url=url, engine=member.id)
            continue
        members.append(member)
    return members


def one(engine: Engine) -> Member:
    """`engine` as the only member of a pool: what a run, a one-off sandbox or a test given
    one engine runs on."""
    return Member(engine.address, engine, facts(engine, engine.address))


def place(arms: Sequence[str], members: Sequence[Member],
          previous: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """arm -> engine id: an arm stays where it ran before when that engine is still usable,
    else it goes to the usable engine with the fewest arms (ties: the order given)."""
    usable = [m for m in members if m.refused is None]
    if not usable:
        raise SandbenchError("no engine can run the arms",
                             why="; ".join(f"{m.url}: {m.refused}" for m in members),
                             fix="give an engine that passes the guards")
    ids = {m.id for m in usable}
    engine_of: dict[str, str] = {}
    for arm in arms:
        was = (previous or {}).get(arm)
        if was in ids:
            engine_of[arm] = was
    for arm in arms:
        if arm not in engine_of:
            counts = {m.id: sum(1 for e in engine_of.values() if e == m.id) for m in usable}
            engine_of[arm] = min(usable, key=lambda m: counts[m.id]).id
    return engine_of


def refuse(member: Member, why: str, on_refused: str) -> None:
    """Mark an engine refused by name; with --on-engine-refused stop, stop the run."""
    member.refused = why
    logger.error("engine_refused", engine=member.id, url=member.url, why=why)
    if on_refused == STOP:
        raise SandbenchError(f"engine {member.url} ({member.id}) refused", why=why,
                             fix="fix that engine, leave it out, or let its arms move to the "
                                 "other engines: --on-engine-refused move")

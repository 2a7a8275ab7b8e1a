"""Find and remove what sandbench left behind, by label and then by id only: containers
carrying `sandbench.managed`, build-stage or temporary images, the runs' places on an engine
that made their file systems (the work volume, its images detached from their loop devices),
and the arms' file systems that an interrupted run left mounted under the runs directory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orchestrator import labels as lb
from orchestrator.sandbox import remote, workfs
from orchestrator.engine import Engine


@dataclass(frozen=True)
class Leftover:
    kind: str  # container | image | volume | mount
    id: str
    name: str
    detail: str


def find(engine: Engine, run_id: str | None = None) -> list[Leftover]:
    label = f"{lb.LABEL_RUN}={run_id}" if run_id else f"{lb.LABEL_MANAGED}=true"
    found = [Leftover("container", c["Id"], (c.get("Names") or ["?"])[0].lstrip("/"),
                      f"{c['State']} arm={c['Labels'].get(lb.LABEL_ARM, '')} "
                      f"run={c['Labels'].get(lb.LABEL_RUN, '')}")
             for c in engine.list_containers(label)]
    if run_id is None:
        seen = set()
        for label in (f"{lb.LABEL_STAGE}=build", f"{lb.LABEL_TEMPORARY}=true"):
            for image in engine.list_images(label):
                if image["Id"] not in seen:
                    seen.add(image["Id"])
                    found.append(Leftover("image", image["Id"],
                                          ",".join(image.get("RepoTags") or []) or "<none>",
                                          label))
    return found


def find_volumes(engine: Engine) -> list[Leftover]:
    """The work volume of every run whose file systems the engine made (its arms' volumes
    go with it)."""
    return [Leftover("volume", v["Name"], v["Name"], f"run={v['Labels'].get(lb.LABEL_RUN, '')}")
            for v in engine.list_volumes(f"{lb.LABEL_MANAGED}=true")
            if v["Name"] == remote.work_volume_name(v["Labels"].get(lb.LABEL_RUN, ""))]


def find_mounts(runs_dir: Path) -> list[Leftover]:
    """Arm file systems still mounted under `runs_dir` (a run killed mid-arm leaves them)."""
    return [Leftover("mount", str(point), point.parent.name, "an arm's file system")
            for point in workfs.leftover_mounts(runs_dir)]


def remove(engine: Engine, leftovers: list[Leftover], agent_image: str | None = None
           ) -> list[Leftover]:
    """Each leftover removed by id (containers first, so no volume is in use); a work volume
    only with the engine agent's locked image `agent_image`, which detaches its images."""
    removed = []
    for item in sorted(leftovers, key=lambda x: x.kind != "container"):
        if item.kind == "mount":
            workfs.unmount(Path(item.id))
            gone = True
        elif item.kind == "volume":
            if agent_image is None:
                continue
            run_id = item.detail.removeprefix("run=")
            remote.RemoteSite(engine, engine.address, run_id, agent_image).close()
            gone = True
        elif item.kind == "container":
            gone = engine.remove_container(item.id)
        else:
            gone = engine.remove_image(item.id)
        if gone:
            removed.append(item)
    return removed

"""The environment disclosure block of the methodology, filled from run.json.

Every line of the template is filled with what sandbench knows and `n/a` where a line does not
apply (the tool's version when the tool under test was not run); each such gap, and everything
else that differed from the methodology's procedure, is listed under Deviations. The tool under
test and the baseline are the arms the suite names (`tool_under_test`, `baseline`), and every
fact about them comes from their own records in run.json (version, image, supplied artifact)
and their own declaration (the environment that points their state under /state), so that no
tool is named here. Absolute paths are
rewritten relative to the bench root; an absolute host path outside it is cut to its last
component, and the host is named only by its architecture, cores and memory.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

# First components of the paths an arm sees inside its container: kept as they are.
CONTAINER_ROOTS = {"corpus", "state", "out", "tmp"}
OUTSIDE = "<outside bench>"
_ABSOLUTE = re.compile(r"(?<![\w.~:/-])/(?:[\w.@+-]+/)*[\w.@+-]+/?")
GIB = 1 << 30


def bench_roots(run: Mapping[str, Any], run_dir: Path | None = None) -> list[str]:
    """Where the bench root was when the run was made (and where the run directory sits
    now, if it is still in a bench root's runs/), longest first."""
    roots = set()
    if isinstance(run.get("bench_root"), str):
        roots.add(run["bench_root"].rstrip("/"))
    needle = "/runs/" + str(run.get("run_id", "\0"))
    for text in _strings(run):
        roots.update(_roots_before(text, needle))
    if run_dir is not None:
        here = Path(run_dir).resolve()
        if here.parent.name == "runs":
            roots.add(str(here.parent.parent))
    return sorted((r for r in roots if r and r != "/"), key=lambda r: (-len(r), r))


_WORD = re.compile(r"[^\s'\"`]+")


def _roots_before(text: str, needle: str) -> Iterator[str]:
    """In each word of `text` (a run of characters that are not blanks or quotes), what
    runs from its first `/` up to each `needle` after it: by string search, linear in the
    text (a lazy pattern tried from every `/` took quadratic time on a run of slashes)."""
    for word in _WORD.finditer(text):
        at, end = word.start(), word.end()
        while (start := text.find("/", at, end)) >= 0:
            found = text.find(needle, start + 1, end)
            if found < 0:
                break
            yield text[start:found]
            at = found + len(needle)


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def rewrite_paths(text: str, roots: Sequence[str]) -> str:
    """Bench-root paths become `bench/...`; any other absolute host path keeps only its last
    component; paths inside an arm's container (/corpus, /state, /out, /tmp) stay."""
    for root in roots:
        text = re.sub(re.escape(root) + r"(?=[/\s'\"`,;:)]|\.(?:\s|$)|$)", "bench", text)

    def redact(match: re.Match[str]) -> str:
        path = match.group(0)
        first = path.strip("/").split("/")[0]
        if first in CONTAINER_ROOTS:
            return path
        name = path.rstrip("/").rsplit("/", 1)[-1]
        return f"{OUTSIDE}/{name}"
    return _ABSOLUTE.sub(redact, text)


def memory(nbytes: int) -> str:
    return f"{nbytes / GIB:.1f} GiB RAM"


# Where a tool's `--version` line stops naming the version: its copyright or licence notice.
_NOTICE = re.compile(r"[\s,;:-]*(?:copyright\b|\(c\)|\u00a9|licen[cs]ed?\b).*",
                     re.IGNORECASE | re.DOTALL)


def version_only(reported: str) -> str:
    """The version a tool reported, without its copyright or licence notice and without
    any line after the first: `Universal Ctags 5.9.0, Copyright (C) 2015 ...` is
    `Universal Ctags 5.9.0`. The same text gives the same version on every run."""
    first = reported.strip().split("\n", 1)[0]
    return _NOTICE.sub("", first).strip() if first else ""


def _version(arm: str, data: Mapping[str, Any]) -> str:
    """The tool version the arm's image reported, else `ARM n/a`."""
    return version_only(str(data.get("tool_version") or "")) or f"{arm} n/a"


def _listed(names: Sequence[str]) -> str:
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


def _build(arm: str, data: Mapping[str, Any], deviations: list[str]) -> str:
    """How the arm's tool came to be in its image: the pinned recipe, and the binary the user
    supplied when the recipe takes one (sandbench builds none of it, so says so)."""
    image = str(data.get("image") or "n/a")
    line = f"image {image} ({str(data.get('image_id') or 'n/a')[:19]}) from the pinned recipe " \
           f"images/{image}/"
    artifact = data.get("artifact")
    if isinstance(artifact, dict):
        name, sha = str(artifact.get("name") or arm), str(artifact.get("sha256") or "n/a")[:12]
        line += f", its {name} binary supplied prebuilt (sha256 {sha})"
        deviations.append(f"the {name} binary of arm {arm} was supplied prebuilt (sha256 {sha}); "
                          "sandbench did not build it and records neither its compiler nor its "
                          "target")
    return line


def _isolation(run_id: str, arm: str, data: Mapping[str, Any]) -> str:
    """Where the arm keeps its state: the variables of its declared environment that point
    under /state, each redirected into the run's own directory for the arm."""
    spec = data.get("spec")
    env = spec.get("env", {}) if isinstance(spec, Mapping) else {}
    state_dir = f"bench/runs/{run_id}/work/{arm}/state/"
    redirected = [k for k, v in env.items() if str(v) == "/state" or str(v).startswith("/state/")]
    if redirected:
        return f"{_listed(redirected)} redirected under {state_dir}"
    return f"its state under {state_dir} (mounted at /state); its environment names no path there"


# Why an arm that is not `available` ran no command (its state in ArmRun.status).
NOT_RUN = {"absent": "sandbench run --arm left it out",
           "unavailable": "its tool is not available",
           "refused": "its isolation guards failed"}


def baseline_gap(baseline: str, state: str) -> str | None:
    """Why nothing can be set against the baseline (cost ratios, break-even, its version),
    or None when it was measured: a figure against a baseline that never ran would be made
    up."""
    if state == "available":
        return None
    return f"the baseline arm {baseline} was not run in this run: {NOT_RUN[state]}"


def _tool_lines(run: Mapping[str, Any], tool: str | None, state: str | None,
                deviations: list[str]) -> tuple[str, str, str]:
    """The Tool version, Build and Isolation lines of the suite's tool under test."""
    if tool is None:
        deviations.append("the suite names no tool under test (tool_under_test in its "
                          "suite.toml): Tool version, Build and Isolation are n/a")
        return "n/a", "n/a", "n/a"
    if state != "available":
        why = "left out of this run" if state == "absent" else state
        deviations.append(f"the tool under test, arm {tool}, was not measured ({why}): Tool "
                          "version, Build and Isolation are n/a")
        return f"{tool} n/a", "n/a", "n/a"
    data = run["arms"][tool]
    return (_version(tool, data), _build(tool, data, deviations),
            _isolation(run["run_id"], tool, data))


def disclosure(run: Mapping[str, Any], baseline: str, arm_states: Mapping[str, str],
               guards_ok: Mapping[str, bool | None], roots: Sequence[str],
               extra_deviations: Sequence[str], *, tool_under_test: str | None,
               truth: str | None = None) -> dict[str, Any]:
    """The template's fields, in its order, plus the deviations that explain every gap
    (`truth`: the rule and rules version that made the suite's truth, on the Corpus line)."""
    run_id = run["run_id"]
    # An arm the run refused comes first, with why: the run is not what the suite asked for.
    deviations = [rewrite_paths(f"arm {arm} refused by its isolation guards, not measured: "
                                f"{run['arms'][arm]['refused']}", roots)
                  for arm, state in arm_states.items() if state == "refused"]
    deviations += [rewrite_paths(str(d), roots) for d in run.get("deviations", [])]
    tool_line, build_line, isolation = _tool_lines(run, tool_under_test,
                                                   arm_states.get(tool_under_test or ""),
                                                   deviations)
    gap = baseline_gap(baseline, arm_states[baseline])
    if gap:
        baseline_line = f"n/a ({gap})"
        deviations.append(f"{gap}; the Baseline line, every cost ratio and every break-even "
                          "are n/a")
    else:
        baseline_line = _version(baseline, run["arms"][baseline])
    measured = [a for a, s in arm_states.items() if s == "available"]
    unverified = [a for a in measured if guards_ok.get(a) is not True]
    if measured and not unverified:
        network = "setup only; offline for every measured invocation"
    else:
        network = "n/a"
        deviations.append("no stored passing guard verdict for: " + ", ".join(unverified))
    host = run["host"]
    deviations += list(extra_deviations)
    deviations += [
        "each arm ran in its own network-disabled container from a locked image, on a private "
        f"copy of the corpus, its state under bench/runs/{run_id}/work/ARM/state/ (mounted "
        "at /state); tools are installed in those images, not under bench/",
        "whether the host was otherwise idle is not recorded; only its architecture, cores "
        "and memory are",
    ]
    for arm, state in arm_states.items():
        if state != "available" and arm not in (tool_under_test, baseline) and not any(
                d.startswith(f"arm {arm} ") for d in deviations):
            why = "left out of this run" if state == "absent" else state
            deviations.append(f"arm {arm} was not measured ({why})")
    shared = sorted(arm for arm, data in run["arms"].items()
                    if data.get("install_build_jobs", 1) > 1 and data.get("install_seconds"))
    if shared:
        most = max(run["arms"][arm]["install_build_jobs"] for arm in shared)
        deviations.append(f"the install times of {', '.join(shared)} were measured with up to "
                          f"{most} image builds at once (images build --jobs): wall time "
                          "shared with the other builds, not each image's own")
    if runtime_line := _runtimes(run):
        deviations.append(runtime_line)
    deviations += _remapped(run)
    hosts = _engine_hosts(run)
    if hosts:
        deviations.append("the arms ran on " + str(len(run["engines"])) + " Docker engines, "
                          "each arm's container on one: " + "; ".join(
                              f"{arm} on {data['engine']}" for arm, data in run["arms"].items()
                              if isinstance(data, dict) and data.get("engine")))
    reps = int(run["suite"]["reps"])
    return {
        "date": run["date"],
        "corpus": f"{run['corpus']['repo']} @ {run['corpus']['sha']} "
                  f"({run['corpus']['tracked_files']} indexed files at the pin)"
                  + (f"; truth by {truth}" if truth else ""),
        "tool_version": tool_line,
        "build": build_line,
        "host": f"{host['arch']} host, idleness not recorded; {host['cores']} cores, "
                f"{memory(host['memory_bytes'])}" + rewrite_paths(hosts, roots),
        "baseline": baseline_line,
        "bench_root": "bench/ (throwaway; nothing installed globally)",
        "isolation": isolation,
        "network": network,
        "reps": f"{reps + 1} per cell (1 cold + {reps} warm)",
        "deviations": deviations,
    }


# What each container runtime puts between a tool and the host (orchestrator/sandbox/runtimes.py).
RUNTIME_MEANS = {
    "runc": "the host's kernel",
    "runsc": "gVisor's kernel between the tool and the host's: its system calls and file "
             "reads cost more, so its timings are not comparable with runc's",
}


def _runtimes(run: Mapping[str, Any]) -> str | None:
    """Which arms ran under which container runtime; None for a run recorded before
    runtimes were declared (every arm under runc)."""
    by_runtime: dict[str, list[str]] = {}
    for arm, data in run["arms"].items():
        if isinstance(data, dict) and isinstance(data.get("runtime"), str):
            by_runtime.setdefault(data["runtime"], []).append(arm)
    if not by_runtime:
        return None
    if len(by_runtime) == 1:
        (runtime,) = by_runtime
        return (f"container runtime {runtime} ({RUNTIME_MEANS.get(runtime, runtime)}) for "
                "every arm")
    return "container runtimes: " + "; ".join(
        f"{runtime} ({RUNTIME_MEANS.get(runtime, runtime)}) for {_listed(sorted(arms))}"
        for runtime, arms in sorted(by_runtime.items()))


def runsc_pids(run: Mapping[str, Any],
               verdicts: Mapping[str, list[dict[str, Any]] | None]) -> str | None:
    """Each runsc arm's pids limit as the engine was asked for it: the arm's own (its spec)
    plus gVisor's threads, read from the pids_limit guard's stored expected value; None when
    no arm ran under runsc (or every one was recorded before the engine was asked for more)."""
    parts = []
    for arm, data in sorted(run["arms"].items()):
        if not isinstance(data, dict) or data.get("runtime") != "runsc":
            continue
        declared = ((data.get("spec") or {}).get("limits") or {}).get("pids")
        asked = next((g.get("expected") for g in verdicts.get(arm) or []
                      if isinstance(g, dict) and g.get("guard") == "pids_limit"), None)
        if type(declared) is int and type(asked) is int and asked > declared:
            parts.append(f"{arm} {declared} of its own + {asked - declared}")
    if not parts:
        return None
    return ("under runsc the pids limit also counts gVisor's own threads, so the engine was "
            "asked for each arm's pids plus theirs: " + "; ".join(parts))


def _remapped(run: Mapping[str, Any]) -> list[str]:
    """One line per engine that remapped its containers' ids (userns-remap, rootless), by id:
    the host ids its container uid and gid 0 were, as the run read them from the kernel."""
    found = run.get("engines")
    lines = []
    for engine_id, e in sorted(found.items()) if isinstance(found, dict) else []:
        ids = e.get("userns") if isinstance(e, dict) else None
        if not isinstance(ids, dict) or not ids.get("remap"):
            continue
        uid, gid = (_listed([f"{a}-{a + n - 1} as {b}-{b + n - 1}" for a, b, n in ids[k]])
                    for k in ("uid_map", "gid_map"))
        how = "a rootless engine" if e.get("rootless") else "userns-remap"
        lines.append(f"engine {engine_id} ran its containers in a user namespace of its own "
                     f"({how}): container uids {uid}, gids {gid} of the host; what an "
                     "arm wrote is owned by those host ids")
    return lines


def _engine_hosts(run: Mapping[str, Any]) -> str:
    """Every engine's host when a run spanned several (a one-engine run says nothing more
    than its host line): each by its engine id, Docker version, architecture, cores and
    memory, never by name."""
    found = run.get("engines")
    if not isinstance(found, dict) or len(found) < 2:
        return ""
    return "; engines: " + "; ".join(
        f"{engine_id} (Docker {e.get('version')}, {e.get('arch')}, {e.get('cores')} cores, "
        f"{memory(int(e.get('memory_bytes') or 0))}"
        + (", this host" if e.get("on_this_host") else "")
        + (f", refused: {e['refused']}" if e.get("refused") else "") + ")"
        for engine_id, e in sorted(found.items()) if isinstance(e, dict))


LABELS = (("date", "Date"), ("corpus", "Corpus"), ("tool_version", "Tool version"),
          ("build", "Build"), ("host", "Host"), ("baseline", "Baseline"),
          ("bench_root", "Bench root"), ("isolation", "Isolation"), ("network", "Network"),
          ("reps", "Reps"), ("deviations", "Deviations"))

"""The multi-engine figures: the demo suite on one engine, on two, and on two where the second is
reached as another host's, alternately (one second dockerd on this same machine, reached over
its unix socket and over tcp:// with mutual TLS, so the figures are the overhead of spreading
a run and of making an arm's files through the engine, not a speed-up), with their grades
compared; the time to bring the demo's locked images into a fresh engine (`images export`
from the shared engine, `images import` into the new one, every digest checked); and how
many Kubernetes manifests `k8s export demo` validates. Needs root, dockerd, openssl, the
images built and the demo corpus fetched; not part of scripts/bench (it starts a daemon).

    python -m benchmarks.engines_bench
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.second_engine import second_dockerd
from orchestrator import log
from orchestrator.exports import k8s
from orchestrator.engine import Engine, engine_address
from orchestrator.fsutil import atomic_write_json
from orchestrator.images import ImageLock
from orchestrator.score import scorer
from orchestrator.settings import Settings, load_settings
from orchestrator.run import plan as run_plan, pool, ready, runner
from orchestrator.run.options import RunOptions

JOBS = 2
# One-engine and two-engine runs alternate, so that a change of the machine's load (it is
# shared) does not favour whichever ran first; the medians are compared.
ROUNDS = 2


def _grades(run_dir: Path, settings: Settings) -> dict[str, Any]:
    scores = scorer.score_run(run_dir, settings.suite_dir("demo"), update=True)
    return {f"{c['arm']}/{c['task']}": [c["verdict"], (c["grade"] or {}).get("recall"),
                                        (c["grade"] or {}).get("precision")]
            for c in scores["cells"]}


def _timed(engine: Engine, settings: Settings, members: list[pool.Member] | None
           ) -> tuple[float, Path]:
    began = time.monotonic()
    run_dir = runner.run(settings, RunOptions("demo", jobs=JOBS), members or [pool.one(engine)])
    return time.monotonic() - began, run_dir


def main() -> dict[str, Any]:
    settings = load_settings()
    engine = Engine.connect()
    lock = ImageLock.load(settings.images_lock)
    plan = run_plan.plan(settings, "demo", engine=engine)
    names = sorted({a.spec.image for a in plan.available} | {"base"})
    with second_dockerd(tls=True) as fresh:
        assert fresh.certs is not None and fresh.tcp_url is not None
        os.environ.update(DOCKER_TLS_VERIFY="1", DOCKER_CERT_PATH=str(fresh.certs))
        members = pool.connect([engine_address(), fresh.url])
        far = pool.connect([engine_address(), fresh.tcp_url])
        began = time.monotonic()
        ready.bring_images(members[1], members, settings, names,
                                 settings.bench_root / "transfer")
        import_s = time.monotonic() - began
        one, two, remote = [], [], []
        for _ in range(ROUNDS):
            one.append(_timed(engine, settings, None))
            two.append(_timed(engine, settings, members))
            remote.append(_timed(engine, settings, far))
    one_s = statistics.median(s for s, _ in one)
    two_s = statistics.median(s for s, _ in two)
    remote_s = statistics.median(s for s, _ in remote)
    one_dir, two_dir = one[0][1], two[0][1]
    placement = {a: d.get("engine") for a, d in
                 json.loads((two_dir / "run.json").read_text())["arms"].items()}
    remote_placement = {a: d.get("engine") for a, d in
                        json.loads((remote[0][1] / "run.json").read_text())["arms"].items()}
    docs, _ = k8s.manifests(settings, "demo")
    figures = {
        "jobs": JOBS,
        "rounds": ROUNDS,
        "one_engine_wall_s": round(one_s, 2), "two_engines_wall_s": round(two_s, 2),
        "one_engine_samples_s": [round(s, 2) for s, _ in one],
        "two_engines_samples_s": [round(s, 2) for s, _ in two],
        "two_over_one": round(two_s / one_s, 3),
        "second_as_another_host_wall_s": round(remote_s, 2),
        "second_as_another_host_samples_s": [round(s, 2) for s, _ in remote],
        "another_host_over_one": round(remote_s / one_s, 3),
        "grades_equal": all(_grades(d, settings) == _grades(one_dir, settings)
                            for _, d in one + two + remote),
        "placement": placement,
        "placement_another_host": remote_placement,
        "runs": [str(d) for _, d in one + two + remote],
        "import_into_fresh_engine_s": round(import_s, 2),
        "imported_images": names,
        "imported_bytes": sum(lock.images[n].get("size_bytes") or 0 for n in names),
        "k8s_manifests_validated": k8s.validate(docs),
        "kubernetes_version": k8s.KUBERNETES_VERSION,
    }
    atomic_write_json(settings.bench_root / "benchmarks" / "engines.json", figures)
    return figures


if __name__ == "__main__":
    log.configure()
    print(json.dumps(main(), indent=2))

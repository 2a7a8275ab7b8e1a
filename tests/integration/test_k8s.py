"""`sandbench k8s export --run`: each Job against the guard policy a real run stored for its
arm, with the image's own environment read from the engine."""

from __future__ import annotations

import json

import pytest
import yaml

from orchestrator import corpus
from orchestrator.engine import Engine
from orchestrator.errors import SandbenchError
from orchestrator.isolation.policy import GuardPolicy
from orchestrator.settings import Settings
from orchestrator.exports import k8s
from orchestrator.run import pool, runner
from orchestrator.run.options import RunOptions

pytestmark = pytest.mark.integration


def test_the_jobs_give_each_arm_the_isolation_its_run_verified(engine: Engine,
                                                                 bench: Settings) -> None:
    corpus.fetch(corpus.load_lock(corpus.lock_path(bench))["demo"], bench)
    run_dir = runner.run(bench, RunOptions("demo", arms=("rg",)), [pool.one(engine)])
    path, count = k8s.export(bench, "demo", run_dir)
    docs = list(yaml.safe_load_all(path.read_text()))
    assert count == len(docs) == 2  # the deny-all policy and the one arm the run ran
    assert k8s.validate(docs) == count
    meta = json.loads((run_dir / "run.json").read_text())
    jobs = {d["metadata"]["labels"]["sandbench.arm"]: d for d in docs if d["kind"] == "Job"}
    policy_file = run_dir / "guards" / "rg" / "policy.json"
    policy = GuardPolicy.from_json(json.loads(policy_file.read_text()), policy_file)
    image_env = engine.inspect_image(policy.image_id)["Config"]["Env"] or []
    assert k8s.drift(jobs["rg"], policy, image_env) == []
    assert jobs["rg"]["spec"]["template"]["metadata"]["labels"]["sandbench.run"] == meta["run_id"]
    assert docs[0]["spec"]["podSelector"]["matchLabels"] == {"sandbench.run": meta["run_id"]}

    # A policy the run stored that the Job no longer matches: the export refuses it.
    stored = json.loads(policy_file.read_text())
    policy_file.write_text(json.dumps({**stored, "memory_bytes": stored["memory_bytes"] // 2}))
    before = path.read_bytes()
    with pytest.raises(SandbenchError, match="differs from") as caught:
        k8s.export(bench, "demo", run_dir)
    assert "memory_bytes" in (caught.value.why or "")
    assert path.read_bytes() == before

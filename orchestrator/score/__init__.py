"""The in-process scorer: a run directory and its sealed suite in, `RUN_DIR/scores.json` out.

No engine and no network: anyone can re-score a run on another machine from the run
directory and the suite alone. One module per metric family (`correctness`, `cost`,
`timing`, `reach`, `setup`), the inputs and their checks (`inputs`), the disclosure block
(`environment`), the generated "where peers win" cells (`leaders`), one cell (`cell`), the
bands (`bands`), and the whole run (`scorer`). The schema of scores.json is
`orchestrator/schemas/scores.schema.json`.
"""

from orchestrator.score.scorer import (SCHEMA, SCORES_NAME, SelfCheckFailed, compute, score_run,
                                       self_check)

__all__ = ["SCHEMA", "SCORES_NAME", "SelfCheckFailed", "compute", "score_run", "self_check"]

"""The run loop: every available arm answers every task of a sealed suite in its own
verified sandbox, on its own corpus copy, cold once and warm N times, resumably.

Layout of a run directory (everything later stages read; nothing else is needed):

    run.json                         the environment block's facts, arms, seal, status
    guards/ARM/                      policy, inspect and probe snapshots, verdict
    cells/ARM/_setup/                the index build's transcript (when the arm has one)
    cells/ARM/TASK/REP/              stdout, stderr, record.json (REP 0 = cold, 1..N warm)
    arms/ARM/state.json              what the arm wrote: corpus-copy changes, state and out
                                     files, where each listing was cut
    work/ARM/{corpus,state,out}.ext4 the arm's private, size-bounded file systems, mounted at
                                     work/ARM/{corpus,state,out} only during the run (where
                                     the engine makes them: in the run's work volume there)
    pin-lines.json                   line counts at the pin, read from the pristine copy
    log.jsonl                        structured log

The stages, one module each: what was asked (`options`: RunOptions, checked once), the
pre-flight that plans the run and connects its engines and returns every problem
(`preflight`, `plan`, `pool`: one engine is a pool of one), the run directory opened or
resumed (`start`: the RunContext every later stage reads), every engine made ready
(`ready`) and every arm's sandbox (`prepare`, where its placement puts it:
orchestrator/placement), the cells measured, exec and MCP arms by one loop (`cells`,
`measure`), and the run document kept up to date throughout (`runner`).

Nothing is imported here: importing one stage (the engine pool, for a placement's types)
loads only what that stage needs.
"""

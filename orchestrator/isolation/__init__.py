"""The isolation core: what confines an arm's container, declared once and checked.

Leaves first: `limits` (an arm's resource limits) and `values` (the helper's paths, the exec
paths, the users, the views a check reads); `spec` (an arm's container as plain data) and
`policy` (the guard policy stored with a run). `setting` is the shape of one setting and
`table` the settings themselves, each with every place it shows: its create arguments, its
outside checks and facets (`facets`), its inside checks of the helper's probe (`inside`, with
`in_force` for the limits and `separation` for the split uids), its records, compose and
Kubernetes keys and the Job's read-back (`k8s_read`), and what sandbench's own containers take
of it. `folds` folds the table into each of those; `guards` checks a sandbox against its policy
and re-checks stored snapshots offline (`audit`). Nothing here talks to the engine, and this
`__init__` imports none of its modules, so any one of them is imported alone.
"""

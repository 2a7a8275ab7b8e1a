"""The isolation core: what confines an arm's container, declared once and checked.

`limits` and `values` are leaves (an arm's limits, the helper's paths, the exec paths, the
shapes a check reads); `policy` is the guard policy stored with a run; `setting` the shape of
one setting; `table` the settings themselves, each with every place it shows (create
arguments, outside and inside guards, records, compose, Kubernetes and its read-back, and
sandbench's own containers); `folds` folds the table into each of them; `guards` checks a
sandbox against its policy and re-checks stored snapshots offline (`audit`). Nothing here
talks to the engine, and this package's own `__init__` imports none of its modules, so any one
of them is imported alone.
"""

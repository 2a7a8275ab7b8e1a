"""`python -m orchestrator.cli` is the `sandbench` command."""

from orchestrator.cli import main

main()

"""sandbench: network-disabled sandboxes, pinned corpora and an in-process scorer for
benchmarks of code-intelligence tools."""

__version__ = "0.1.0"

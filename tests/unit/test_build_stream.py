"""images/build_stream: what third-party install steps print during a build reaches the host
bounded: the log, each line, the lines an error quotes."""

from __future__ import annotations

import io
import time

from orchestrator.images.build_stream import BuildStream, Lines, StageImages
from orchestrator.untrusted import limits


def test_lines_are_split_across_chunks_and_each_is_cut_at_the_limit() -> None:
    lines = Lines(limit=8)
    assert lines.feed("ab") == [] and lines.feed("c\nde") == ["abc"]
    assert lines.feed("f" * 100) == [] and lines.feed("g\n\nh\n") == ["de" + "f" * 6, "", "h"]


def test_a_line_without_end_in_tiny_chunks_costs_linear_time() -> None:
    """The partial line is never joined again and again: 1 MiB in one-character chunks,
    then 2 MiB, at most ~2.5x the time (quadratic would be 4x, and minutes at the cap)."""
    def seconds(n: int) -> float:
        lines = Lines(limit=1 << 20)
        started = time.perf_counter()
        for _ in range(n):
            lines.feed("x")
        assert lines.feed("\n") == ["x" * min(n, 1 << 20)]
        return time.perf_counter() - started
    small, large = min(seconds(1 << 19) for _ in range(3)), min(seconds(1 << 20) for _ in range(3))
    assert large < 3 * small + 0.05


def test_the_log_keeps_its_bound_and_says_what_it_left_out() -> None:
    log = io.StringIO()
    stream = BuildStream(log, StageImages(), log_limit=100)
    for _ in range(50):
        stream.feed("y" * 10 + "\n")
    stream.end()
    text = log.getvalue()
    assert text.startswith("y" * 10 + "\n")
    assert "450 characters of build output past the log's bound (100)" in text
    assert len(text) < 100 + 200


def test_a_failed_build_quotes_clipped_lines_and_a_clipped_error() -> None:
    stream = BuildStream(io.StringIO(), StageImages())
    stream.feed(("z" * 10_000 + "\n") * 20)
    why = stream.failed("e" * (limits.BUILD_LINE_MAX_CHARS * 2))
    assert len(why) < limits.BUILD_LINE_MAX_CHARS + 9 * (limits.EXCERPT_CHARS + 40)
    assert why.count("\n") == 8

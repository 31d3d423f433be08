"""Live progress of a ``plugpull`` run on stderr: which line runs, n/N, elapsed and remaining time.

Three kinds, chosen by the CLI (docs/DECISIONS.md, "CLI output, JUnit, progress, the pytest plugin"):

- ``Live``: stderr is a terminal. rich draws, on stderr only, the lines finished so far, the line(s)
  running and a bar with n/N, elapsed and remaining time; the drawing is erased when the run ends, and
  the report then follows on stdout as before, so the terminal is left with the report, not two copies.
- ``Plain``: stderr is not a terminal (CI logs, files): one plain line per finished result, no control codes.
- ``--json``, whose stdout must stay pure JSON: ``Live`` without the finished lines (only the bar) on a terminal,
  ``None`` (no progress) elsewhere.

Every kind is called from the worker threads of ``-j N``; each guards its state with a lock. The total is
the planned lines until the run has expanded them (every-boundary makes one line per boundary of its clean
run): ``planned(n)`` then sets the real count.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

from plugpull.rendering import shown_point, shown_target
from plugpull.results import Result
from plugpull.targets import Target


def clock(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def running_label(target: Target, point: str) -> str:
    return f"{target.scenario}  {point}  {target.label()}"


def result_line(result: Result) -> str:
    """A finished line as the report prints it (verdict, scenario, point, target, message), unpadded."""
    return "  ".join(
        [f"{result.verdict.value:<5}", result.scenario, shown_point(result), shown_target(result), result.message]
    )


#: Lines that must have finished before a time left is estimated: the first line also waits for the clean
#: run (shared by the target's lines), so one line's time says nothing of the next ones'.
ESTIMATE_AFTER = 3


def time_left(finished_at: list[float], total: int) -> float | None:
    """Seconds left, from the pace of the lines finished since the first (None: too few to tell).

    ``finished_at``: when each finished line ended, in seconds since the run began, in order.
    """
    done = len(finished_at)
    if done < ESTIMATE_AFTER or done >= total:
        return None
    pace = (finished_at[-1] - finished_at[0]) / (done - 1)
    return pace * (total - done)


class Plain:
    """One line per finished result on a stream that is not a terminal: ``plugpull: [n/N m:ss, ~m:ss left] LINE``."""

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        self.total = total
        self.stream = stream or sys.stderr
        self.done = 0
        self.began = time.monotonic()
        self.finished_at: list[float] = []
        self.lock = threading.Lock()

    def planned(self, total: int) -> None:
        """The run's real line count, once its scenarios expanded the planned runs (every-boundary)."""
        with self.lock:
            self.total = total

    def __enter__(self) -> Plain:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def started(self, target: Target, point: str) -> None:
        return None

    def finished(self, target: Target, point: str, results: list[Result]) -> None:
        with self.lock:
            self.done += 1
            elapsed = time.monotonic() - self.began
            self.finished_at.append(elapsed)
            left = time_left(self.finished_at, self.total)
            where = f"{self.done}/{self.total} {clock(elapsed)}" + (
                f", ~{clock(left)} left" if left is not None else ""
            )
            for result in results:
                print(f"plugpull: [{where}] {result_line(result)}", file=self.stream, flush=True)


class Live:
    """rich's progress on a terminal stream, with the finished lines above the bar; erased when the run ends."""

    STYLE = {"PASS": "green", "FAIL": "bold red", "ERROR": "bold yellow"}

    def __init__(self, total: int, stream: TextIO | None = None, *, show_lines: bool = True) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            ProgressColumn,
            TextColumn,
            TimeElapsedColumn,
        )
        from rich.text import Text

        self.show_lines = show_lines
        self.lock = threading.Lock()
        self.finished_lines: list[tuple[str, str]] = []  # (verdict, line)
        self.running: list[str] = []
        self.began = time.monotonic()
        self.finished_at: list[float] = []
        owner = self

        class Display(Progress):
            # rich's documented way to draw more than the bar: override get_renderables.
            def get_renderables(self):
                yield from owner.renderables(self)

        class Left(ProgressColumn):
            # The plain lines' estimate (time_left), not rich's, which guesses from the first line alone.
            def render(self, task):
                with owner.lock:
                    left = time_left(owner.finished_at, int(task.total or 0))
                return Text("-:--" if left is None else clock(left), style="progress.remaining")

        self.console = Console(file=stream or sys.stderr, highlight=False)
        self.progress = Display(
            TextColumn("plugpull"),
            MofNCompleteColumn(),
            BarColumn(),
            TimeElapsedColumn(),
            TextColumn("elapsed,"),
            Left(),
            TextColumn("left"),
            console=self.console,
            transient=True,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self.task = self.progress.add_task("lines", total=total)

    def renderables(self, progress):
        from rich.text import Text

        with self.lock:
            running = list(self.running)
            # Room for the running lines and the bar; the oldest finished lines scroll out of the drawing
            # (the report on stdout has them all).
            room = max(self.console.size.height - len(running) - 2, 0)
            finished = self.finished_lines[-room:] if room else []
        for verdict, line in finished:
            text = Text(line, no_wrap=True, overflow="ellipsis")
            text.stylize(self.STYLE.get(verdict, ""), 0, len(verdict))
            yield text
        for label in running:
            yield Text(f"  running  {label}", style="dim", no_wrap=True, overflow="ellipsis")
        yield progress.make_tasks_table(progress.tasks)

    def __enter__(self) -> Live:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def planned(self, total: int) -> None:
        """The run's real line count, once its scenarios expanded the planned runs (every-boundary)."""
        self.progress.update(self.task, total=total)
        self.progress.refresh()

    def started(self, target: Target, point: str) -> None:
        with self.lock:
            self.running.append(running_label(target, point))
        self.progress.refresh()

    def finished(self, target: Target, point: str, results: list[Result]) -> None:
        with self.lock:
            label = running_label(target, point)
            if label in self.running:
                self.running.remove(label)
            self.finished_at.append(time.monotonic() - self.began)
            if self.show_lines:
                self.finished_lines.extend((r.verdict.value, result_line(r)) for r in results)
        self.progress.advance(self.task)
        self.progress.refresh()


def interactive(stream: TextIO) -> bool:
    """rich can redraw in place on ``stream`` (a terminal that is not TERM=dumb, nor turned off by TTY_INTERACTIVE=0)."""
    from rich.console import Console

    return Console(file=stream).is_interactive


def choose(total: int, *, json_output: bool, stream: TextIO | None = None) -> Live | Plain | None:
    """The progress for a run of ``total`` lines: Live on a terminal, Plain elsewhere, none for --json off a terminal.

    A terminal rich cannot redraw on (TERM=dumb) counts as not a terminal: plain lines.
    """
    stream = stream or sys.stderr
    if stream.isatty() and interactive(stream):
        return Live(total, stream, show_lines=not json_output)
    if json_output:
        return None
    return Plain(total, stream)

"""tool-error: the tool's outside call raises, before or after its effect, and the framework's own handling goes on.

The commonest production fault is smaller than a crash: the tool's HTTP call raises (a reset connection, a 5xx) or
times out, often after the other side did the work. For one point: run ``COMMAND start`` with the provider holding
the first ``record_effect`` call (or the one ``--hold`` names) and answer it with a fault, so the agent's
``record_effect`` raises :class:`plugpull.ToolFault` (a ``ConnectionError``) or :class:`plugpull.ToolTimeout`
(also a ``TimeoutError``), as a client library's call raises:

- ``raise-before-effect``: the request failed before the API did anything (nothing recorded);
- ``raise-after-effect``: the API did the work and the reply was lost (recorded, then the call raises);
- ``timeout-after-effect``: the same, as a read timeout (``ToolTimeout``);
- ``hang-after-effect``: the API did the work and its reply is late: the call blocks, as a read with no timeout of
  its own does, until the tool's process asks for anything else (a retry's call, its result: the framework gave up
  on the call and went on) or until ``HANG_LIMIT`` seconds passed, and then returns its answer; a framework's own
  tool timeout (the OpenAI Agents SDK's ``timeout_seconds``) is what ends the wait;
- ``raise-after-effect-then-sigkill``: as raise-after-effect, and start's process group is SIGKILLed as soon as the
  agent's client says it raises (the ``raised`` request it sends first): the crash lands in the framework's handling
  of the error, wherever that has got to (a timing line), and resume recovers from what the framework saved.

The agent is not killed: the framework handles the error its own way (a retry policy the app configured, or the
tool's failure told to the model, which is scripted and retries or gives up). If start does not finish (the error
stopped the run), ``COMMAND resume`` goes on with the framework's own resume. Effects are counted and the run's
final result is read for what it claims of each effect (checks.tool_error). An agent instrumented for
kill-mid-tool runs unchanged; its result says ``{"claims": {...}}`` for the truth check (docs/agent-protocol.md).
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from plugpull import checks, sidecar
from plugpull.channel import Channel
from plugpull.evidence import ToolErrorEvidence
from plugpull.process import Running, kill_group, reaping
from plugpull.results import Result
from plugpull.scenarios import Runtime, Settings, make_result, result_ignore, settle, steps, target_env, workdir
from plugpull.scenarios.contract import Recovery, Scenario
from plugpull.scenarios.faults import ToolRaise
from plugpull.scenarios.held_kill import POLL, wait_for_held, wait_group_gone
from plugpull.scenarios.kill_mid_tool import clean_key, clean_run, sidecar_argv
from plugpull.targets import Target

NAME = "tool-error"
#: point -> (where the provider holds the call, the fault its caller raises)
FAULTS = {
    "raise-before-effect": ("before-effect", "ToolFault"),
    "raise-after-effect": ("after-effect", "ToolFault"),
    "timeout-after-effect": ("after-effect", "ToolTimeout"),
    # Two tool calls of one model turn: the sibling answered, the held one raised before its effect.
    "parallel-one-raised": ("before-effect", "ToolFault"),
    "raise-after-effect-then-sigkill": ("after-effect", "ToolFault"),
    "hang-after-effect": ("after-effect", "hang"),
}
POINTS = tuple(FAULTS)
PARALLEL = "parallel-one-raised"
#: The points whose start is SIGKILLed right after its tool raised.
THEN_SIGKILL = "-then-sigkill"
#: The fault of a call that is not answered in time, rather than answered with an exception.
HANG = "hang"
#: hang-after-effect: how long the held call waits at most before its (late) answer, if its process asks nothing
#: else: long past a framework's tool timeout a target sets (a second), short against the line's phase timeout.
HANG_LIMIT = 5.0
#: What the raised exception says: what a client library says, never whether the effect happened.
MESSAGES = {"ToolFault": "{name}: connection reset by peer", "ToolTimeout": "{name}: read timed out"}


def run_point(target: Target, point: str, settings: Settings, runtime: Runtime) -> Result:
    side, fault = FAULTS[point]
    # A two-tool variant's own held call and sibling where the run holds none (Aim.over); no tool-error target carries
    # saves (adopt refuses them and none of its built-ins has any), so there are none to take.
    settings = replace(settings, aim=settings.aim.over(target.aim))
    # parallel-one-raised waits for the sibling call to be answered before the held one raises; the other points
    # fault the held call alone.
    sibling = settings.aim.sibling
    settings = settings.aimed(sibling=(sibling[0], "finished") if point == PARALLEL and sibling else None)
    began = time.monotonic()
    ev = ToolErrorEvidence(
        point=point,
        fault=fault,
        side=side,
        sigkill=point.endswith(THEN_SIGKILL),
        start_timeout=settings.timeout,
        **steps.held_specs(settings, ToolErrorEvidence),
    )
    ev.clean = clean_run(target, settings, runtime)
    ev.golden = list(ev.clean.results)
    ev.result_ignore = result_ignore(target, ev.clean.announced)
    announced, kept = list(ev.clean.announced), None
    if checks.check_clean_run(ev) is None and not (point == PARALLEL and settings.aim.sibling is None):
        announced, kept = run_faulted(target, settings, runtime, ev)
    judgement = settle(checks.judge_tool_error(ev), runtime, (NAME, *clean_key(target, settings)), point, target=target)
    shown = steps.shown_outcome(judgement, ev, fail_phase=ev.finished_by)
    return make_result(NAME, target, point, ev.to_dict(), judgement, announced, began, shown, kept)


def run_faulted(
    target: Target, settings: Settings, runtime: Runtime, ev: ToolErrorEvidence
) -> tuple[list[dict], Path | None]:
    """Start with the provider holding a call at ``ev.side``; answer it with the fault; resume if start did not
    finish. Fills ``ev``."""
    with workdir(settings) as path, Channel() as channel, reaping() as spawned:
        env = target_env(channel, path)
        with sidecar.running(sidecar_argv(target), env, settings.cwd, settings.timeout):
            fault = ToolRaise(ev.side, ev.fault, hold=settings.aim.hold, sibling=settings.aim.sibling)
            fault.arm(channel.provider)
            started = steps.spawn_phase(runtime, [*target.argv, "start"], "start", channel, env, settings, spawned)
            if isinstance(started, Running):
                wait_for_held(channel.provider, started, time.monotonic() + settings.timeout)
                held = channel.provider.held
                if held is not None and ev.fault == HANG:
                    hang(channel, started, ev)
                elif held is not None:
                    ev.message = MESSAGES[ev.fault].format(name=held.name)
                    fault.strike(channel, ev.message)
                if held is not None and ev.sigkill:
                    kill_after_raise(channel.provider, started, ev, settings.timeout)
                else:
                    # The framework's handling (a retry with backoff, the model asked again) gets a whole phase's time.
                    ev.start = started.wait(settings.timeout)
            else:
                ev.start = started
            held = channel.provider.held
            ev.held = None if held is None else held.to_dict()
            sibling = channel.provider.sibling
            ev.sibling = None if sibling is None else sibling.to_dict()
            ev.finished = channel.results_of("start")
            if held is not None and held.faulted and not ev.start.timed_out and ev.start.returncode != 0:
                ev.resume = steps.run_to_end(
                    runtime, [*target.argv, "resume"], "resume", channel, env, settings, spawned
                )
                ev.finished, ev.finished_by = channel.results_of("resume"), "resume"
            steps.count_effects(ev, channel)
        return list(channel.announced), (path if settings.keep_workdir else None)


def hang(channel: Channel, started: Running, ev: ToolErrorEvidence) -> None:
    """Keep the held call unanswered until start asks anything else (the framework went on without it), exits, or
    ``HANG_LIMIT`` passed; then answer it as the late reply it stands for. Fills ``ev.hung_for`` and ``ev.hung_until``."""
    provider = channel.provider
    began = time.monotonic()
    calls, results = len(provider.calls), len(channel.results_of("start"))
    while True:
        waited = time.monotonic() - began
        if started.poll() is not None:
            until = "start exited"
        elif len(provider.calls) > calls:
            until = "the next effect call"
        elif len(channel.results_of("start")) > results:
            until = "the run's result"
        elif waited >= HANG_LIMIT:
            until = f"the {HANG_LIMIT:g}s limit"
        else:
            started.tracker.scan()
            time.sleep(POLL)
            continue
        break
    ev.hung_for, ev.hung_until = round(waited, 3), until
    channel.release_held()


def kill_after_raise(provider, started: Running, ev: ToolErrorEvidence, timeout: float) -> None:
    """SIGKILL start's group as soon as the faulted call's caller says it raises; fill ``ev.start`` and the proof
    (``raised``: the caller said so while alive; ``survivors``: the group's members left after the kill)."""
    deadline = time.monotonic() + timeout
    while not provider.raised_event.wait(POLL) and started.poll() is None and time.monotonic() < deadline:
        started.tracker.scan()
    ev.raised = provider.raised_event.is_set()
    if ev.raised and started.poll() is None:
        started.tracker.scan(force=True)
        kill_group(started.pgid)
        started.wait_reaped()
        ev.survivors = wait_group_gone(started.pgid)
        ev.start = started.finish()
    else:
        ev.start = started.wait(max(deadline - time.monotonic(), 0.0))


class ToolError(Scenario):
    name = NAME
    points = POINTS
    fault = (
        "the held effect call raises in the tool (a reset connection or a read timeout), before or after the "
        "provider recorded the effect, or hangs after it (its reply late); the framework handles it, and resume goes "
        "on if the run stopped"
    )
    default_points = POINTS[:3]
    faults = (ToolRaise,)
    # --sibling NAME:finished: another tool call of the same model turn, answered before the held call raises.
    options = frozenset({"sibling"})
    recovery = {"*": Recovery("start", "the run after the fault")}
    evidence = ToolErrorEvidence
    checks = (checks.judge_tool_error,)

    line = staticmethod(run_point)

    def adopt(self, target: Target, source: Scenario | None) -> Target | None:
        """A built-in made for a start-and-resume kill (kill-mid-tool's) runs as it is: its tool's effect call
        raises instead of being killed. One aimed at a save is its plain variant's run; of the variants aimed at a
        sibling call, the one whose sibling has finished (parallel-one-raised answers it before the held call
        raises)."""
        if source is not None and source.name == NAME:
            return target
        if source is None or source.kill_and_recover != self.phases or target.aim.saves:
            return None
        if target.aim.sibling is not None and target.aim.sibling[1] != "finished":
            return None
        return replace(target, scenario=NAME)

    def has_line(self, target: Target, point: str) -> bool:
        return point != PARALLEL or target.aim.sibling is not None

    def expand(self, target: Target, points, settings: Settings, runtime: Runtime) -> list[str]:
        """parallel-one-raised only for a target whose model asks for two tools in one turn (its own sibling or
        --sibling); asked of a one-tool target it is its line's ERROR. Such a target runs it by default."""
        points = list(points)
        two = target.aim.sibling is not None or settings.aim.sibling is not None
        if two and PARALLEL not in points and tuple(points) == self.default_points:
            points.append(PARALLEL)
        return points


SCENARIO = ToolError()

"""Evidence: what a scenario observed, before any verdict (plugpull.checks turns it into one).

Plain data so tests can build it by hand (Jepsen's ok-op / info-op style) and hit every
branch of the checks without running a process.
"""

from __future__ import annotations

import copy
import signal
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

#: Values that are their own copy: dataclasses.asdict deep-copies them to themselves.
_ATOMS = (str, int, float, bool, type(None))


def asdict(obj: Any) -> Any:
    """``dataclasses.asdict``, the same result for plain evidence, without a ``copy.deepcopy`` per leaf.

    The standard one deep-copies every string and number it meets (a call each: 150,000 for a
    LangGraph map's 96 lines, 3 ms a line); those are immutable, so they are returned as
    they are. Dataclasses, dicts, lists and tuples (named ones too) are rebuilt as the standard one
    does; anything else is still deep-copied.
    """
    kind = type(obj)
    if kind in _ATOMS:
        return obj
    # Dicts and lists first, and an atom inside one returned without a call: most of a trace's leaves are
    # atoms, and a call each was most of what a LangGraph every-boundary line's evidence cost.
    if kind is dict:
        return {k if type(k) in _ATOMS else asdict(k): v if type(v) in _ATOMS else asdict(v) for k, v in obj.items()}
    if kind is list:
        return [v if type(v) in _ATOMS else asdict(v) for v in obj]
    if is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: asdict(getattr(obj, f.name)) for f in fields(obj)}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return kind(*[asdict(v) for v in obj])
    if isinstance(obj, (list, tuple)):
        return kind(asdict(v) for v in obj)
    if isinstance(obj, dict):
        return kind((asdict(k), asdict(v)) for k, v in obj.items())
    return copy.deepcopy(obj)


@dataclass
class Outcome:
    """How one target process ended."""

    argv: list[str]
    returncode: int | None = None
    timed_out: bool = False
    spawn_error: str | None = None
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0
    # Processes of this phase (any group or session) still alive once it was over: after a kill,
    # at once; after an exit, after a short grace. Each {"pid", "cmdline"}; plugpull killed them.
    outlived: list[dict[str, Any]] = field(default_factory=list)

    @property
    def killed_by_sigkill(self) -> bool:
        # Popen reports death by signal N as returncode -N (as trio's tests assert).
        return self.returncode == -signal.SIGKILL

    def describe_exit(self) -> str:
        if self.spawn_error:
            return f"could not start: {self.spawn_error}"
        if self.timed_out:
            return "timed out"
        if self.returncode is None:
            return "still running"
        if self.returncode < 0:
            try:
                return f"killed by {signal.Signals(-self.returncode).name}"
            except ValueError:
                return f"killed by signal {-self.returncode}"
        return f"exit code {self.returncode}"


@dataclass
class KillProof:
    """What the harness saw around the SIGKILL of start's process group."""

    group: int  # the process group that was killed (start's pgid)
    caller_pid: int | None  # the held call's pid from SO_PEERCRED; None if the OS could not say
    caller_group: int | None  # os.getpgid(caller_pid) when the call arrived, before it was held; None: unknown
    held_open_at_kill: bool  # the provider was still holding the call when SIGKILL was sent
    closed_after_kill: float | None  # seconds from SIGKILL to the held connection closing; None: never
    survivors: list[int] = field(default_factory=list)  # live pids left in the group after the kill
    # The harness could follow processes that leave the group (a child subreaper reading /proc).
    accounted: bool = True


@dataclass
class CleanRun:
    """``COMMAND start`` run once with no fault: which effects one whole run asks for."""

    start: Outcome
    counts: dict[str, int] = field(default_factory=dict)  # effects per name; each must be 1
    calls: int = 0
    announced: list[dict[str, Any]] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)  # what it reported with record_result: the golden result
    # Effect calls and boundary marks in arrival order, each with ``t`` (seconds since start was
    # spawned): the run's boundaries (plugpull.boundaries). Not in to_dict: every-boundary lines
    # carry their own place in it, and a line carrying the whole trace was most of its JSON.
    trace: list[dict[str, Any]] = field(default_factory=list)
    # The recovery protocol checked first: ``COMMAND resume`` run once on the state this
    # finished run left, which must be a no-op (exit 0, the result again, no new effect). None: not run
    # (start failed, or the target recovers with another phase than resume).
    finished_resume: Outcome | None = None
    finished_results: list[Any] = field(default_factory=list)  # what that resume reported with record_result
    finished_effects: dict[str, int] = field(default_factory=dict)  # effects it added, per name
    # The protocol command this clean run ran with nothing held: "start", or an approval agent's "approve"
    # (every-boundary, power-loss: its start ran first, as the prelude).
    phase: str = "start"

    def to_dict(self) -> dict[str, Any]:
        """Every field but ``trace``, without process output (docs/json-schema.md, ``clean``)."""
        return without_output({f.name: asdict(getattr(self, f.name)) for f in fields(self) if f.name != "trace"})

    def effect_calls(self) -> list[str]:
        """The clean run's effect calls in arrival order, each as NAME#N (the N-th call of NAME)."""
        seen: dict[str, int] = {}
        out = []
        for entry in sorted(self.trace, key=lambda e: e["seq"]):
            if entry.get("kind", "effect") == "effect":
                seen[entry["name"]] = seen.get(entry["name"], 0) + 1
                out.append(f"{entry['name']}#{seen[entry['name']]}")
        return out


def without_output(data: dict[str, Any]) -> dict[str, Any]:
    """Evidence without process output: output is shown under the line (Result.stderr), once."""
    for phase in ("start", "resume", "finished_resume"):
        if data.get(phase):
            data[phase] = {k: v for k, v in data[phase].items() if k not in ("stdout", "stderr")}
    if data.get("clean"):
        data["clean"] = without_output(data["clean"])
    return data


@dataclass
class KillEvidence:
    """kill-mid-tool at one point: start (killed while a call was held), then resume."""

    point: str
    start: Outcome
    clean: CleanRun | None = None  # the run without a kill that says which effects to expect
    proof: KillProof | None = None  # None: no call was ever held
    resume: Outcome | None = None  # None: resume was not run (the kill was not proven)
    counts_at_kill: dict[str, int] = field(default_factory=dict)
    # Effects per name after resume, for every name the clean run owed or a call used (0: never
    # recorded): the numbers the verdict is made from.
    counts: dict[str, int] = field(default_factory=dict)
    calls: list[dict[str, Any]] = field(default_factory=list)
    held_name: str | None = None
    start_timeout: float = 0.0
    resume_timeout: float = 0.0
    # The golden-result check (checks.completion): what the clean run reported (clean.results) and
    # what resume reported with record_result, compared without the fields in result_ignore.
    golden: list[Any] = field(default_factory=list)
    resumed: list[Any] = field(default_factory=list)
    result_ignore: list[str] = field(default_factory=list)
    hold: str | None = None  # --hold NAME:N in force; None: the first call of any effect is held
    # --sibling NAME:STATE in force (None: none): the other tool call of the same model turn, and how
    # it stood at the kill: {"name", "state", "ready", "call", "open"} (scenarios.held_kill).
    sibling_spec: str | None = None
    sibling: dict[str, Any] | None = None
    # --save NAME:N:STATE in force (each "checkpoint-save:2:withheld"; [] for none): saves of the
    # target held back or waited for, and how each stood at the kill: {"name", "n", "state", "ready",
    # "mark", "open", "seen"} (provider.saves_at_kill).
    save_specs: list[str] = field(default_factory=list)
    saves: list[dict[str, Any]] = field(default_factory=list)
    # The clean run's effect calls as NAME#N, in order: what a kill could be aimed at (the coverage
    # line, "killed at 2 of 3 effect calls", reads it).
    effect_calls: list[str] = field(default_factory=list)
    # The protocol command that recovered the run: "resume", or an approval agent's "recover"
    # (every-boundary, power-loss), whose exit code 5 means the run paused again.
    recovery: str = "resume"

    def to_dict(self) -> dict[str, Any]:
        return without_output(_with_clean_runs(self))


def _with_clean_runs(ev: Any) -> dict[str, Any]:
    """asdict of ``ev``, its CleanRun fields as CleanRun.to_dict gives them (asdict alone carried each clean
    run's whole trace into every line's evidence, though CleanRun leaves it out)."""
    return {
        f.name: value.to_dict() if isinstance(value := getattr(ev, f.name), CleanRun) else asdict(value)
        for f in fields(ev)
    }


@dataclass
class ToolErrorEvidence:
    """tool-error at one point: start, whose held effect call raised (before or after the effect), handled by the
    framework (its retry, or the model told), then resume if start did not finish."""

    point: str
    fault: str = "ToolFault"  # what the held call raised (client.TOOL_FAULTS)
    message: str = ""  # what the raised exception said: how a run that ended in that error is told from a crash
    side: str = "before-effect"  # where the provider held the call: the effect not done yet, or done
    clean: CleanRun | None = None
    start: Outcome | None = None
    resume: Outcome | None = None  # None: start finished (exit 0) after the fault, or the fault never landed
    held: dict[str, Any] | None = None  # the held call as the provider saw it (faulted: the client was told)
    counts: dict[str, int] = field(default_factory=dict)  # effects per name at the end, 0 for one owed and never done
    calls: list[dict[str, Any]] = field(default_factory=list)
    start_timeout: float = 0.0
    golden: list[Any] = field(default_factory=list)
    finished: list[Any] = field(default_factory=list)  # what the phase that ended the run reported (record_result)
    finished_by: str = "start"  # that phase: "start" or "resume"
    result_ignore: list[str] = field(default_factory=list)
    hold: str | None = None
    # parallel-one-raised: the other tool call of the same model turn (answered before the held call raised)
    sibling_spec: str | None = None
    sibling: dict[str, Any] | None = None
    # -then-sigkill points: start's group is SIGKILLed once the caller says it raises (client's "raised" request)
    sigkill: bool = False
    raised: bool = False  # the caller said it raises (so it was alive and past the call when the kill was sent)
    survivors: list[int] = field(default_factory=list)  # the group's live members after the kill
    # hang-after-effect: how long the held call went unanswered, and what ended the wait (scenarios.tool_error.hang)
    hung_for: float | None = None
    hung_until: str = ""

    def to_dict(self) -> dict[str, Any]:
        return without_output(_with_clean_runs(self))


@dataclass
class UpgradeEvidence(KillEvidence):
    """resume-after-upgrade at one kill point: start on release A (killed), resume on release B, one workdir.

    ``clean`` is A's clean run (it proves A runs the target and names the effects owed); ``clean_resume``
    is B's clean run, whose result is the golden one (``golden``): the run ends on B, so it must end as
    a run on B does. The releases are the ones each environment announced from inside its process.
    """

    clean_resume: CleanRun | None = None  # COMMAND_B start, no fault: B can run the target at all
    from_version: str | None = None  # what start's environment (A) announced
    to_version: str | None = None  # what resume's environment (B) announced
    framework: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return without_output(_with_clean_runs(self))  # clean_resume too: CleanRun.to_dict leaves out its output


@dataclass
class StoreProbe:
    """lost-session-write's probe: start once with every store call answered."""

    start: Outcome
    token: str | None = None  # the staged input's token the app announced (None: it announced none)
    carrying: list[int] = field(default_factory=list)  # numbers of the writes that carried the staged input
    writes: list[dict[str, Any]] = field(default_factory=list)  # the store's write log
    start_timeout: float = 0.0
    # The golden session: what the store held after the fault-free run, by identity with the run's
    # own tokens and ids named (store.run_names); each item must be there once.
    session: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["start"] = {k: v for k, v in data["start"].items() if k not in ("stdout", "stderr")}
        return data


@dataclass
class StoreEvidence:
    """lost-session-write at one (write, point): start with that write faulted, then resume.

    Tokens differ between runs (the app draws a new one each start), so the staged input is
    compared with the probe by write numbers, never by token.
    """

    write: int  # the faulted write's number
    point: str  # "write-lost" or "ack-lost"
    start: Outcome
    probe_carrying: list[int] = field(default_factory=list)  # writes carrying the staged input in the probe
    token: str | None = None  # the staged input's token this run's start announced
    carrying: list[int] = field(default_factory=list)  # writes carrying it in this run (start and resume)
    writes: list[dict[str, Any]] = field(default_factory=list)  # the store's write log, both phases
    resume: Outcome | None = None  # None: resume was not run (the fault was not proven)
    staged_stored: int = 0  # stored occurrences of the staged input at the end
    counts: dict[str, int] = field(default_factory=dict)  # stored occurrences of every item ever written
    start_timeout: float = 0.0
    resume_timeout: float = 0.0
    golden: dict[str, int] = field(default_factory=dict)  # the probe's session (StoreProbe.session)
    session: dict[str, int] = field(default_factory=dict)  # counts, with this run's tokens and ids named

    def to_dict(self) -> dict[str, Any]:
        return without_output(asdict(self))


@dataclass
class ApprovalRun:
    """One ``approve`` or ``recover`` process of resume-after-approval."""

    outcome: Outcome
    effect_calls: int = 0  # record_effect calls made from this process's group (the tool ran)
    results: list[Any] = field(default_factory=list)  # record_result values from this process's group


@dataclass
class ApprovalEvidence:
    """resume-after-approval at one point: start (runs to the pause), approvals, maybe a recover."""

    point: str
    start: Outcome
    start_calls: int = 0  # record_effect calls during start: a tool that waits for approval makes none
    # A fault-free start + approve (approve-elsewhere) of the same target: the effects one run owes.
    clean: ApprovalEvidence | None = None
    approvals: list[ApprovalRun] = field(default_factory=list)  # in the order they were started
    counts_after_first: dict[str, int] = field(default_factory=dict)  # double-resume: after approval 1
    racers: int = 0  # racing-resumers: approvers started at once
    gated: int | None = None  # racing-resumers: approvers waiting at plugpull's gate when it opened
    racer_outcomes: dict[str, int] = field(default_factory=dict)  # racing-resumers: approvers per outcome
    proof: KillProof | None = None  # killed-*: the kill of the approving process
    held_name: str | None = None
    recover: ApprovalRun | None = None  # killed-*: None when not run (the kill was not proven)
    counts: dict[str, int] = field(default_factory=dict)  # effects per name at the end
    calls: list[dict[str, Any]] = field(default_factory=list)
    timeout: float = 0.0
    # The golden-result check: the clean approval's result (clean.approvals[0].results), compared with
    # what the run's finishing process reported (recover; the racer that ran the tool).
    golden: list[Any] = field(default_factory=list)
    result_ignore: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return _strip_output(asdict(self))


def _strip_output(data: Any) -> Any:
    """Evidence without process output, at any depth (output is shown under the line, once)."""
    if isinstance(data, dict):
        return {k: _strip_output(v) for k, v in data.items() if k not in ("stdout", "stderr")}
    if isinstance(data, list):
        return [_strip_output(v) for v in data]
    return data


@dataclass
class BoundaryEvidence(KillEvidence):
    """every-boundary at one line: start killed at one side of one boundary (or at a random moment), then resume.

    A double crash (``twice``) kills resume at the same boundary too (``second_proof``), then runs
    ``resume`` again (``final``). A random kill holds nothing: ``killed_at`` is when SIGKILL was
    sent (seconds after spawn; None when start exited first) and ``landed`` where that fell
    among start's boundaries.
    """

    boundary: dict[str, Any] | None = None  # the Step (plugpull.boundaries) and "of": how many the clean run has
    side: str = ""  # "before" / "after" / "random"
    twice: bool = False
    second_proof: KillProof | None = None  # None when twice and resume never reached the boundary again
    second_reached: bool = False
    final: Outcome | None = None  # the resume after the second kill
    final_results: list[Any] = field(default_factory=list)
    killed_at: float | None = None
    landed: str | None = None
    # A random kill: the aimed kill that leaves the run as it left it, (LABEL, SIDE), and
    # the plugpull command that runs it alone; None when it landed nowhere aimable.
    aimed_at: tuple[str, str] | None = None
    aimed: str | None = None


@dataclass
class PowerLossEvidence(BoundaryEvidence):
    """power-loss at one line: the workdir on a power-cut mount, start killed as kill-mid-tool (or
    every-boundary) kills it, then the power cut (plugpull.powercut), then resume on what a disk held.

    ``side`` is "" for a kill-mid-tool point (before-effect, after-effect) and "before"/"after" for a
    boundary line. ``cut`` is the model's report (plugpull.powercut.mount.CutReport.to_json: variant,
    losses with their sentences, the writers' activity, how the mount ended); None when the power
    was not cut (FUSE unavailable, the kill not proven, the cut failed).
    """

    variant: str = "unsynced"  # plugpull.powercut.durability.Variant: what the cut loses
    unavailable: str | None = None  # why FUSE cannot mount here: the line is ERROR with it
    mount_error: str | None = None  # the mount failed for another reason (or stayed mounted): ERROR
    cut_error: str | None = None  # the cut (or mounting again for resume) failed: the model cannot be trusted
    cut: dict[str, Any] | None = None


@dataclass
class CancelRun:
    """cancel-mid-stream's clean run: ``start`` and the next turn (``resume``) with nothing cancelled."""

    start: Outcome
    resume: Outcome | None = None
    counts: dict[str, int] = field(default_factory=dict)  # effects per name over both turns; each must be 1
    announced: list[dict[str, Any]] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)  # the next turn's record_result values: the golden result
    start_results: list[Any] = field(default_factory=list)
    # start's effect calls and boundary marks in arrival order: where each cancel point is (not in to_dict).
    trace: list[dict[str, Any]] = field(default_factory=list)
    conversation: list[dict[str, Any]] | None = None  # what the next turn read as saved after start
    rejected: list[str] = field(default_factory=list)  # model requests a provider would refuse, in any phase
    # The next turn's model requests ({"messages", "rejected"}): a refused one after a clean first turn is a FAIL
    # without any fault (checks.cancel_mid_stream.check_clean_cancel_run), shown with the history it sent.
    next_turn_requests: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("trace")
        return without_output(data)


@dataclass
class CancelEvidence:
    """cancel-mid-stream at one point: start held at the point, the client's cancel, then the next turn."""

    point: str
    timeout: float
    clean: CancelRun | None = None
    # The held step the cancel is aimed at: {"kind": "effect"|"mark", "name", "n", "side"} picked from
    # the clean start's trace, and why it is that one (e.g. "after 2 of the final answer's 5 chunks").
    aim: dict[str, Any] | None = None
    aim_problem: str | None = None  # the clean run has no such step: why (ERROR)
    chunks_before: int | None = None  # model-stream: chunks of the answer streamed before the held one
    # Chunks the model streamed in start before the held step, and how many the consumer had marked shown
    # (``chunk-shown``) when the cancel was ordered; None: the consumer does not mark them.
    chunks_emitted: int = 0
    chunks_shown: int | None = None
    sigkill: bool = False  # the "-then-sigkill" points: start was SIGKILLed right after the cancel landed
    held: dict[str, Any] | None = None  # the held call (provider.EffectCall.to_dict); None: never reached
    watchers: int = 0  # cancel watchers (client.wait_for_cancel) waiting when the cancel was ordered
    cancel: dict[str, Any] | None = None  # the agent's report (channel.cancels[0]); None: never reported
    # The cancel was ordered while the step was held but reported only after the harness let the step go
    # (the framework finished the running step first); False: it landed while the run was held there.
    deferred: bool = False
    start: Outcome | None = None
    resume: Outcome | None = None
    counts: dict[str, int] = field(default_factory=dict)  # effects per name over start and the next turn
    calls: list[dict[str, Any]] = field(default_factory=list)
    conversation: list[dict[str, Any]] | None = None  # the saved conversation the next turn read
    requests: list[dict[str, Any]] = field(default_factory=list)  # the next turn's model requests
    golden: list[Any] = field(default_factory=list)
    resumed: list[Any] = field(default_factory=list)
    result_ignore: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if self.clean is not None:
            data["clean"] = self.clean.to_dict()
        return without_output(data)

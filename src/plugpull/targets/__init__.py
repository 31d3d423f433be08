"""Targets: what a scenario breaks. Built-in framework agents and a user's ``--agent COMMAND``.

Every target speaks the same protocol: ``COMMAND start`` begins a run, ``COMMAND resume``
continues it from what the framework saved in ``$PLUGPULL_WORKDIR`` (docs/agent-protocol.md).
A built-in target is one or more variants of an agent script shipped in this package,
run with the same Python as the harness.
"""

from __future__ import annotations

import importlib.util
import shlex
import sys
from dataclasses import dataclass, field, replace
from typing import Any

from plugpull import notes as n
from plugpull.notes import Note


@dataclass(frozen=True)
class Target:
    """One thing to break: a command plus how to name it in a result line."""

    name: str  # the --target name, or "agent" for --agent
    argv: tuple[str, ...]  # the command; the phase ("start"/"resume") is appended
    framework: str | None = None  # distribution whose version the agent announces
    options: dict[str, Any] = field(default_factory=dict)
    scenario: str = "kill-mid-tool"
    # Upstream issues, doc quotes, causes: each attached to a FAIL line only when its condition
    # over the evidence holds (plugpull.notes).
    notes: tuple[Note, ...] = ()
    # Fields of the run's record_result value that differ run to run by design (ids, timestamps the
    # model makes up), left out when the resumed run's result is compared with the golden one.
    # Dotted paths into objects ("receipt.id"); an agent can add its own: announce(result_ignore="a,b.c").
    result_ignore: tuple[str, ...] = ()
    # The phase commands of a kill-and-recover run, for every-boundary: the phases before the killed
    # one (run to completion), the killed one, the recovering one. kill-mid-tool's protocol is
    # start/resume; an approval agent's run is start (pauses), approve (killed), recover.
    phases: tuple[str, ...] = ("start", "resume")
    # resume-after-upgrade: the command that resumes, in the other environment (release B); ``argv``
    # starts the run on release A. Empty for every other scenario.
    resume_argv: tuple[str, ...] = ()
    # kill-mid-tool with sibling tool calls (issue 14): the effect the kill holds and the other tool
    # call's state at the kill, unless --hold/--sibling say otherwise.
    hold: tuple[str, int] | None = None
    sibling: tuple[str, str] | None = None
    # kill-mid-tool aimed at a background save (issue 20): (NAME, N, "withheld"|"landed") each, the
    # target's own --save (provider.SAVE_STATES); --save replaces them.
    saves: tuple[tuple[str, int, str], ...] = ()

    def label(self, version: str | None = None) -> str:
        if self.framework is None:
            head = shlex.join(self.argv)
            if self.resume_argv:
                head += " -> " + shlex.join(self.resume_argv)
        else:
            head = f"{self.framework} {version or '?'}"
        opts = " ".join(f"{k}={v}" for k, v in self.options.items())
        return f"{head} {opts}".strip()


@dataclass(frozen=True)
class BuiltIn:
    """A built-in target family: the module that must be importable and its variants."""

    name: str
    module: str  # import name that must be present (the framework)
    extra: str  # pip extra that installs it
    variants: tuple[Target, ...]
    also: tuple[str, ...] = ()  # further import names the agent needs (e.g. DBOS under Pydantic AI)

    def installed(self) -> bool:
        for module in (self.module, *self.also):
            try:
                if importlib.util.find_spec(module) is None:
                    return False
            except ModuleNotFoundError:  # a dotted name whose parent package is missing (google.adk)
                return False
        return True


def python_module(module: str, *args: str) -> tuple[str, ...]:
    return (sys.executable, "-m", module, *args)


# LangGraph docs, Functional API, "Idempotency": side effects in a resumed run must be
# idempotent because an interrupted task runs again from its start.
LANGGRAPH_IDEMPOTENCY = "https://docs.langchain.com/oss/python/langgraph/functional-api#idempotency"


def refunded_again(text: str, url: str) -> Note:
    """A note for a resume that itself recorded a refund on top of one already there (a re-run tool).

    Only then: a resume that crashed or hung with 1 refund, or lost the refund, did not "refund again".
    """
    return Note(
        text=text,
        url=url,
        condition="refund recorded 2 or more times, and resume's own call recorded one of them",
        holds=lambda r: n.count(r, "refund") >= 2 and n.recorded_calls(r, "refund", "resume") >= 1,
    )


LANGGRAPH_REFUNDED_AGAIN = refunded_again(
    "resume refunded again; effects in a resumed run must be idempotent", LANGGRAPH_IDEMPOTENCY
)

# DBOS docs, "How workflows work": recovery resumes from the last completed step, so the step in
# flight runs again; steps are at-least-once.
DBOS_STEPS = "https://docs.dbos.dev/explanations/how-workflows-work"


# With durability="async" LangGraph writes every checkpoint and every task's pending writes from a
# background executor while the next step runs (langgraph/pregel/_loop.py: after_tick submits
# _checkpointer_put_after_previous, put_writes submits checkpointer.put_writes). The model's tool call
# survives a kill when either the checkpoint after the model step or the model task's pending writes
# (attached to the checkpoint before it) are on disk. The example's MarkedSqliteSaver marks each put
# "checkpoint-save" (1: the input, step -1; 2: before the model step, step 0; 3: after it, step 1; each
# put waits for the one before, so the numbering is the same in every run) and each put_writes
# "pending-writes" (1: the input's, 2: the model task's, in either order). The aimed lines hold them
# (issue 20): how the model step's saves stand at the kill, per option value.
LANGGRAPH_MODEL_STEP: dict[str, tuple[tuple[str, int, str], ...]] = {
    # Nothing held: the background writer races the kill.
    "raced": (),
    # Checkpoint 2 withheld: it and every later checkpoint are unwritten and the model task's pending
    # writes point at a checkpoint that never lands, so nothing of the model step is durable.
    "unsaved": (("checkpoint-save", 2, "withheld"),),
    # Checkpoint 3 withheld, both pending writes landed: only the model task's pending writes keep its call.
    "writes-saved": (("checkpoint-save", 3, "withheld"), ("pending-writes", 2, "landed")),
    # The checkpoint after the model step landed before the kill.
    "saved": (("checkpoint-save", 3, "landed"),),
}

_LANGGRAPH = BuiltIn(
    name="langgraph",
    module="langgraph",
    extra="langgraph",
    variants=tuple(
        Target(
            name="langgraph",
            argv=python_module("plugpull.examples.langgraph_refund", "no-key", "--durability", durability),
            framework="langgraph",
            options={"durability": durability, "key": "none"},
            notes=(LANGGRAPH_REFUNDED_AGAIN,),
        )
        for durability in ("sync", "async")
    )
    # The tool passes LangGraph's tool call id as its idempotency key: the provider dedupes a re-run
    # only if the model's tool call was saved before the kill, which with durability="async" is a matter
    # of timing (model_step=raced: a timing line of the langgraph-kill-mid-tool finding, judged by its FAIL
    # rate), unless the kill is aimed at the background writer's saves (LANGGRAPH_MODEL_STEP).
    + (
        Target(
            name="langgraph",
            argv=python_module("plugpull.examples.langgraph_refund", "tool-call-id", "--durability", "sync"),
            framework="langgraph",
            options={"durability": "sync", "key": "tool-call-id"},
        ),
    )
    + tuple(
        Target(
            name="langgraph",
            argv=python_module("plugpull.examples.langgraph_refund", "tool-call-id", "--durability", "async"),
            framework="langgraph",
            options={"durability": "async", "key": "tool-call-id", "model_step": model_step},
            saves=saves,
        )
        for model_step, saves in LANGGRAPH_MODEL_STEP.items()
    ),
)

# openai/openai-agents-python#4775: RunState pending input is appended to the Session and only
# then cleared, with no checkpoint for the append, so a retry after a lost ack appends it again.
# The SDK docs (Results, "Add input before resuming") promise the opposite.
OPENAI_AGENTS_4775 = "https://github.com/openai/openai-agents-python/issues/4775"
OPENAI_AGENTS_ADD_INPUT = "https://openai.github.io/openai-agents-python/results/#add-input-before-resuming"
OPENAI_AGENTS_PROMISE = (
    "Across serialization, resume, and replay-safe retries, the SDK preserves one durable InputItem occurrence."
)


def _staged_twice_after_ack_lost(r) -> bool:
    # #4775 is a duplicate after a lost acknowledgement; a lost staged input (write-lost, or
    # stored 0 times) is another bug and gets neither the issue nor the quote.
    return r.evidence.get("point") == "ack-lost" and (r.evidence.get("staged_stored") or 0) >= 2


_STAGED_TWICE = "ack-lost, and the staged input stored 2 or more times after resume"
OPENAI_AGENTS_STAGED_TWICE = (
    Note(
        text='openai/openai-agents-python#4775: "RunState pending input can be duplicated when a Session '
        'append loses acknowledgement"',
        url=OPENAI_AGENTS_4775,
        condition=_STAGED_TWICE,
        holds=_staged_twice_after_ack_lost,
    ),
    Note(
        text=f'the SDK docs promise: "{OPENAI_AGENTS_PROMISE}"',
        url=OPENAI_AGENTS_ADD_INPUT,
        condition=_STAGED_TWICE,
        holds=_staged_twice_after_ack_lost,
    ),
)

_OPENAI_AGENTS = BuiltIn(
    name="openai-agents",
    module="agents",
    extra="openai-agents",
    variants=(
        Target(
            name="openai-agents",
            argv=python_module("plugpull.targets.openai_agents_app"),
            framework="openai-agents",
            scenario="lost-session-write",
            result_ignore=("reply_id",),
            notes=OPENAI_AGENTS_STAGED_TWICE,
        ),
    ),
)

# microsoft/agent-framework#8292: functional-workflow step results were cached by (step name,
# call index) up to 1.19.0, so concurrent calls to one @step that restart in another order get each
# other's saved results. "control" keeps the order, so only the swap can explain a FAIL.
AGENT_FRAMEWORK_8292 = "https://github.com/microsoft/agent-framework/issues/8292"

# The swap restarts B's branch first: replayed by call order, B's branch gets A's saved key and
# charges A again, A's branch charges A anew, and B is never charged. Any other count is not #8292.
AGENT_FRAMEWORK_SWAPPED = Note(
    text="consistent with @step results replayed by call order, not by arguments: microsoft/agent-framework#8292",
    url=AGENT_FRAMEWORK_8292,
    condition="charge_card:A recorded 2 times and charge_card:B 0 times",
    holds=lambda r: n.counts(r).get("charge_card:A") == 2 and n.counts(r).get("charge_card:B") == 0,
)

_AGENT_FRAMEWORK = BuiltIn(
    name="agent-framework",
    module="agent_framework",
    extra="agent-framework",
    variants=tuple(
        Target(
            name="agent-framework",
            argv=python_module("plugpull.targets.agent_framework_checkout", "--variant", variant),
            framework="agent-framework-core",
            options={"variant": variant},
            result_ignore=("orders.idempotency_key",),
            notes=(AGENT_FRAMEWORK_SWAPPED,) if variant == "swap" else (),
        )
        for variant in ("swap", "control")
    ),
)

# resume-after-approval. LangGraph docs, "Interrupts": on resume the node that called
# interrupt() runs again from its start, and nothing claims a pending interrupt; concurrent runs on one
# thread are handled only by the Agent Server ("Double texting": not in the open-source framework).
# langchain-ai/langgraph#6663 (closed, labelled bug): a second Command(resume=...) on the same interrupted
# checkpoint runs the node again, with the first resume's value.
LANGGRAPH_INTERRUPTS = "https://docs.langchain.com/oss/python/langgraph/interrupts"
LANGGRAPH_DOUBLE_TEXTING = "https://docs.langchain.com/langsmith/double-texting"
LANGGRAPH_6663 = "https://github.com/langchain-ai/langgraph/issues/6663"

_TWO_APPROVERS = "2 or more approve processes ran the approved tool"
LANGGRAPH_APPROVAL_NOTES = (
    Note(
        text="LangGraph does not claim a pending interrupt; every Command(resume=...) re-runs the node",
        url=LANGGRAPH_INTERRUPTS,
        condition=_TWO_APPROVERS,
        holds=lambda r: n.approvers_that_ran_the_tool(r) >= 2,
    ),
    Note(
        text="runs racing on one thread are not handled by the open-source framework (double texting is an Agent "
        "Server feature)",
        url=LANGGRAPH_DOUBLE_TEXTING,
        condition=_TWO_APPROVERS,
        holds=lambda r: n.approvers_that_ran_the_tool(r) >= 2,
    ),
    Note(
        text="langchain-ai/langgraph#6663: a second resume of the same interrupted checkpoint runs the node again",
        url=LANGGRAPH_6663,
        condition=_TWO_APPROVERS,
        holds=lambda r: n.approvers_that_ran_the_tool(r) >= 2,
    ),
    # killed-after-effect: the killed approval recorded the refund, then recover re-ran the node.
    Note(
        text="the node that called interrupt() runs again from its start on resume",
        url=LANGGRAPH_INTERRUPTS,
        condition="recover ran the approved tool and refund was recorded 2 or more times",
        holds=lambda r: n.recover_ran_the_tool(r) and n.count(r, "refund") >= 2,
    ),
)

_LANGGRAPH_APPROVAL = BuiltIn(
    name="langgraph-approval",
    module="langgraph",
    extra="langgraph",
    variants=tuple(
        Target(
            name="langgraph-approval",
            argv=python_module("plugpull.targets.langgraph_approval", "--durability", durability),
            framework="langgraph",
            options={"durability": durability},
            scenario="resume-after-approval",
            notes=LANGGRAPH_APPROVAL_NOTES,
        )
        for durability in ("sync", "async")
    ),
)

# The SDK docs ("Human-in-the-loop") make RunState the durable record of a pause; it carries no
# claim, so the same saved state can be approved and run any number of times.
OPENAI_AGENTS_HITL = "https://openai.github.io/openai-agents-python/human_in_the_loop/"

# Two restores of one RunState both ran the tool (two approvals, or the killed approval and recover)
# and the refund was done twice: a crash or a refusal is not what this note explains.
OPENAI_AGENTS_NO_CLAIM = Note(
    text="a saved RunState carries no claim: every restore of it runs the approved tool",
    url=OPENAI_AGENTS_HITL,
    condition="2 or more processes (approve or recover) ran the approved tool and refund was recorded 2 or more times",
    holds=lambda r: n.approvers_that_ran_the_tool(r) + n.recover_ran_the_tool(r) >= 2 and n.count(r, "refund") >= 2,
)

# killed-after-effect: the killed approval recorded the refund, then recover ran the tool again.
_RECOVER_RAN_IT_AGAIN = "recover ran the approved tool and refund was recorded 2 or more times"


def _recover_ran_it_again(r) -> bool:
    return n.recover_ran_the_tool(r) and n.count(r, "refund") >= 2


# design=plain follows the docs' steps; design=claim-and-key adds what the docs leave to the app (issue
# 20): approve claims the stored pause (a loser is refused) and the refund is keyed by the tool call id
# the saved RunState keeps, so a restore that runs the tool again refunds nothing new.
_OPENAI_AGENTS_APPROVAL = BuiltIn(
    name="openai-agents-approval",
    module="agents",
    extra="openai-agents",
    variants=tuple(
        Target(
            name="openai-agents-approval",
            argv=python_module("plugpull.targets.openai_agents_approval", "--design", design),
            framework="openai-agents",
            options={"design": design},
            scenario="resume-after-approval",
            result_ignore=("reply_id",),
            notes=(OPENAI_AGENTS_NO_CLAIM,),
        )
        for design in ("plain", "claim-and-key")
    ),
)

# FastAIAgent documents an atomic claim of the pending approval (AlreadyResumed for the loser)
# and crash recovery that re-invokes the saved tool (Agent.aresume docstring, 1.94.0; docs/agents/durability.md,
# "Tool-boundary crash"). Kind: bug (findings/resume-after-approval/finding.toml).
# The agent's recover exits 4 and prints this line only when both public ways were refused
# (src/plugpull/targets/fastaiagent_approval.py); recover's stderr is the one under the line.
FASTAIAGENT_BOTH_REFUSED = "ChainCheckpointError without Resume; AlreadyResumed with Resume(approved=True)"
FASTAIAGENT_CLAIM_KEPT = Note(
    text="the approval's claim is taken before the tool runs and a crash cannot give it back: "
    "resume(id) says 'pass resume_value', resume(id, Resume) says AlreadyResumed; FastAIAgent's docs: "
    '"If the process is killed (SIGKILL, OOM, container restart) while a tool is running, [...] A plain '
    '`agent.resume(execution_id)` re-invokes the saved tool with the saved args"',
    condition=f"recover exited 4 saying {FASTAIAGENT_BOTH_REFUSED!r}",
    holds=lambda r: n.recover_exit(r) == 4 and FASTAIAGENT_BOTH_REFUSED in r.stderr,
    url="https://github.com/fastaifoundry/fastaiagent-sdk/blob/main/docs/agents/durability.md",
)
_FASTAIAGENT = BuiltIn(
    name="fastaiagent",
    module="fastaiagent",
    extra="fastaiagent",
    variants=(
        Target(
            name="fastaiagent",
            argv=python_module("plugpull.targets.fastaiagent_approval"),
            framework="fastaiagent",
            scenario="resume-after-approval",
            notes=(FASTAIAGENT_CLAIM_KEPT,),
        ),
    ),
)

# Issue 15: one refund tool per framework, once with no idempotency key (what the framework's own
# recovery does shows) and once with the key a user of that framework would reach for (a value the
# framework saved before the tool ran: a finished task's or step's output, the model's function call id).
# The functional target's draft task result, "pending-writes 1" (the first task to finish), per option value.
LANGGRAPH_DRAFT: dict[str, tuple[tuple[str, int, str], ...]] = {
    "raced": (),  # nothing held: the background put_writes races the kill
    "unsaved": (("pending-writes", 1, "withheld"),),  # held back: resume runs the draft again (a new key)
    "saved": (("pending-writes", 1, "landed"),),  # on disk before the kill: resume replays the saved draft
}

_LANGGRAPH_FUNCTIONAL = BuiltIn(
    name="langgraph-functional",
    module="langgraph",
    extra="langgraph",
    variants=(
        Target(
            name="langgraph-functional",
            argv=python_module("plugpull.targets.langgraph_functional", "--key", "none"),
            framework="langgraph",
            options={"api": "functional", "key": "none"},
            result_ignore=("request_id",),
            notes=(LANGGRAPH_REFUNDED_AGAIN,),
        ),
    )
    # The key is the request id drawn in the finished draft task, saved by a background put_writes
    # while the refund task runs (langgraph_functional's docstring): raced, or the kill aimed at it.
    + tuple(
        Target(
            name="langgraph-functional",
            argv=python_module("plugpull.targets.langgraph_functional", "--key", "checkpointed"),
            framework="langgraph",
            options={"api": "functional", "key": "checkpointed", "draft": draft},
            result_ignore=("request_id",),
            notes=(LANGGRAPH_REFUNDED_AGAIN,),
            saves=saves,
        )
        for draft, saves in LANGGRAPH_DRAFT.items()
    ),
)

# google/adk-python, src/google/adk/apps/_configs.py, ResumabilityConfig's docstring: resuming an
# invocation re-runs the tool call in flight (at-least-once).
ADK_RESUMABILITY = "https://github.com/google/adk-python/blob/main/src/google/adk/apps/_configs.py"
ADK_AT_LEAST_ONCE = (
    "Tool call to resume needs to be idempotent because we only guarantee an at-least-once behavior once resumed."
)
ADK_REFUNDED_AGAIN = refunded_again(
    f'resume ran the tool call again; ADK\'s ResumabilityConfig docstring: "{ADK_AT_LEAST_ONCE}"', ADK_RESUMABILITY
)

_GOOGLE_ADK = BuiltIn(
    name="google-adk",
    module="google.adk",
    extra="google-adk",
    variants=tuple(
        Target(
            name="google-adk",
            argv=python_module("plugpull.targets.google_adk_refund", "--key", key),
            framework="google-adk",
            options={"key": key},
            notes=(ADK_REFUNDED_AGAIN,),
        )
        for key in ("none", "function-call-id")
    ),
)

# ADK tool confirmation (FunctionTool(require_confirmation=True)) on the same resumable app, once per session
# store: SqliteSessionService, and DatabaseSessionService on sqlite+aiosqlite (the target's --db-url takes any
# SQLAlchemy async URL, so another database is one more variant). Racing approvers that lose the store's
# optimistic concurrency check (StaleSessionError) exit 3, the refusal (docs/DECISIONS.md, issue 20).
_GOOGLE_ADK_APPROVAL = BuiltIn(
    name="google-adk-approval",
    module="google.adk",
    extra="google-adk",
    variants=tuple(
        Target(
            name="google-adk-approval",
            argv=python_module("plugpull.targets.google_adk_approval", "--session", session),
            framework="google-adk",
            options={"session": session},
            scenario="resume-after-approval",
            notes=(
                Note(
                    text=f'recover ran the confirmed tool call again; ADK\'s ResumabilityConfig docstring: "{ADK_AT_LEAST_ONCE}"',
                    url=ADK_RESUMABILITY,
                    condition=_RECOVER_RAN_IT_AGAIN,
                    holds=_recover_ran_it_again,
                ),
            ),
        )
        for session in ("sqlite", "database")
    ),
)

# DBOS docs, "Self-Hosting DBOS Apps", "Managing Application versions": a workflow is tagged with the
# application version that started it and a process of another version does not recover it.
DBOS_APP_VERSIONS = "https://docs.dbos.dev/self-hosting#managing-application-versions"
DBOS_VERSION_QUOTE = (
    "Each workflow is tagged with the version of the application that started it. To prevent code "
    "compatibility issues, DBOS does not attempt to recover workflows tagged with a different application version."
)
# The dbos agent's resume prints this when the workflow is still PENDING after its wait
# (src/plugpull/targets/dbos_refund.py): the evidence that recovery skipped it, not just any unfinished run.
DBOS_NOT_RECOVERED = "not recovered (recorded under version"
DBOS_VERSION_NOT_RECOVERED = Note(
    text=f'the recovering process ran another application_version and the workflow stayed PENDING; DBOS docs: "{DBOS_VERSION_QUOTE}"',
    url=DBOS_APP_VERSIONS,
    condition=f"resume exited 0 without a result, its stderr saying {DBOS_NOT_RECOVERED!r}",
    holds=lambda r: n.resume_exit(r) == 0 and DBOS_NOT_RECOVERED in r.stderr and not n.resume_reported_result(r),
)

_DBOS = BuiltIn(
    name="dbos",
    module="dbos",
    extra="dbos",
    variants=tuple(
        Target(
            name="dbos",
            argv=python_module("plugpull.targets.dbos_refund", "--key", key),
            framework="dbos",
            options={"key": key},
            result_ignore=("request_id",),
            notes=(refunded_again("the step in flight runs again on recovery (steps are at-least-once)", DBOS_STEPS),),
        )
        for key in ("none", "checkpointed")
    )
    # The recovering process runs under another application_version than the crashed one (a deploy of
    # new code between crash and restart). No `key` option: the key=... claims must not match it.
    + (
        Target(
            name="dbos",
            argv=python_module("plugpull.targets.dbos_refund", "--key", "none", "--app-version", "changed"),
            framework="dbos",
            options={"app_version": "changed"},
            result_ignore=("request_id",),
            notes=(DBOS_VERSION_NOT_RECOVERED,),
        ),
    ),
)

# Pydantic AI docs, "Durable Execution with DBOS": DBOSAgent "executes model requests, decorated tool
# calls, and MCP communication as DBOS steps", and "Tools and event stream handlers are not
# automatically wrapped by DBOS" (decorate with @DBOS.step for I/O). The source agrees: "DBOS runs
# function tools inline" (pydantic_ai/durable_exec/dbos/_agent.py), so a plain function tool killed after
# its effect runs again when the workflow is recovered.
PYDANTIC_AI_DBOS = "https://ai.pydantic.dev/durable_execution/dbos/#agent-and-toolset-requirements"
PYDANTIC_AI_INLINE = (
    "the function tool runs inline in the DBOSAgent workflow, not as a DBOS step, and ran again on recovery; "
    'Pydantic AI docs: "Tools and event stream handlers are not automatically wrapped by DBOS" '
    "(only tools decorated with @DBOS.step are steps)"
)

_PYDANTIC_AI = BuiltIn(
    name="pydantic-ai",
    module="pydantic_ai",
    also=("dbos",),
    extra="pydantic-ai",
    variants=tuple(
        Target(
            name="pydantic-ai",
            argv=python_module("plugpull.targets.pydantic_ai_refund", "--key", key),
            framework="pydantic-ai-slim",
            options={"durable": "DBOSAgent", "key": key},
            notes=(refunded_again(PYDANTIC_AI_INLINE, PYDANTIC_AI_DBOS),),
        )
        for key in ("none", "tool-call-id")
    ),
)

# Pydantic AI deferred tools (requires_approval=True) on the same DBOSAgent: the run ends with
# DeferredToolRequests and a new run with the saved message history and DeferredToolResults approves it.
_PYDANTIC_AI_APPROVAL = BuiltIn(
    name="pydantic-ai-approval",
    module="pydantic_ai",
    also=("dbos",),
    extra="pydantic-ai",
    variants=(
        Target(
            name="pydantic-ai-approval",
            argv=python_module("plugpull.targets.pydantic_ai_approval"),
            framework="pydantic-ai-slim",
            options={"durable": "DBOSAgent"},
            scenario="resume-after-approval",
            notes=(
                Note(
                    text=PYDANTIC_AI_INLINE,
                    url=PYDANTIC_AI_DBOS,
                    condition=_RECOVER_RAN_IT_AGAIN,
                    holds=_recover_ran_it_again,
                ),
            ),
        ),
    ),
)

# CrewAI Flows with @persist (SQLite) and kickoff(restore_from_state_id=...). Kept out of the default
# environment (hundreds of MB); the target points HOME and CREWAI_STORAGE_DIR at the run's workdir.
_CREWAI = BuiltIn(
    name="crewai",
    module="crewai",
    extra="crewai",
    variants=tuple(
        Target(
            name="crewai",
            argv=python_module("plugpull.targets.crewai_refund", "--key", key),
            framework="crewai",
            options={"persist": "sqlite", "key": key},
        )
        for key in ("none", "checkpointed")
    ),
)

# CrewAI's @human_feedback with an async provider (HumanFeedbackPending): the approval is answered with
# Flow.from_pending(flow_id, persistence).resume(feedback), CrewAI's documented webhook handler.
# from_pending refuses (ValueError) once the request was answered; the request is cleared before the
# approved listener runs, so a crash there leaves nothing pending and recovery restores the @persist state.
CREWAI_HUMAN_FEEDBACK = "https://docs.crewai.com/en/learn/human-feedback-in-flows"
_CREWAI_APPROVAL = BuiltIn(
    name="crewai-approval",
    module="crewai",
    extra="crewai",
    variants=(
        Target(
            name="crewai-approval",
            argv=python_module("plugpull.targets.crewai_approval"),
            framework="crewai",
            options={"persist": "sqlite"},
            scenario="resume-after-approval",
        ),
    ),
)

# Sibling tool calls (issue 14): the prebuilt ReAct agent's model asks for send_email (no key) and
# charge_card (keyed by its tool call id) in one turn, and LangGraph runs them as two parallel tasks.
# The kill lands in charge_card while send_email is finished, or while it is held too.
_LANGGRAPH_SIBLINGS = BuiltIn(
    name="langgraph-siblings",
    module="langgraph",
    extra="langgraph",
    variants=tuple(
        Target(
            name="langgraph-siblings",
            argv=python_module("plugpull.examples.langgraph_react_two_tools", "--durability", durability),
            framework="langgraph",
            options={"durability": durability, "hold": "charge_card", "sibling": f"send_email:{state}"},
            hold=("charge_card", 1),
            sibling=("send_email", state),
        )
        for durability in ("sync", "async")
        for state in ("finished", "running")
    ),
)

# Sibling tool calls in the OpenAI Agents SDK: two function calls in one model response, run as
# concurrent tasks; recovered from the approved RunState the app saved (no key on send_email).
# approval=both: both tools need approval, the state is saved before either runs, so a restore runs
# the finished send_email again (the app's save point). approval=charge_card: send_email runs before
# the pause and its output is in the saved state, which the SDK skips on restore; it runs before the
# kill, so it can only be finished (finding sibling-tool-calls).
_OPENAI_AGENTS_SIBLINGS = BuiltIn(
    name="openai-agents-siblings",
    module="agents",
    extra="openai-agents",
    variants=tuple(
        Target(
            name="openai-agents-siblings",
            argv=python_module("plugpull.targets.openai_agents_siblings", "--approval", approval),
            framework="openai-agents",
            options={"hold": "charge_card", "sibling": f"send_email:{state}", "approval": approval},
            result_ignore=("reply_id",),
            hold=("charge_card", 1),
            sibling=("send_email", state),
        )
        for approval, state in (("both", "finished"), ("both", "running"), ("charge_card", "finished"))
    ),
)

BUILT_INS: dict[str, BuiltIn] = {
    b.name: b
    for b in (
        _LANGGRAPH,
        _OPENAI_AGENTS,
        _AGENT_FRAMEWORK,
        _LANGGRAPH_APPROVAL,
        _OPENAI_AGENTS_APPROVAL,
        _FASTAIAGENT,
        _LANGGRAPH_FUNCTIONAL,
        _GOOGLE_ADK,
        _GOOGLE_ADK_APPROVAL,
        _DBOS,
        _PYDANTIC_AI,
        _PYDANTIC_AI_APPROVAL,
        _CREWAI,
        _CREWAI_APPROVAL,
        _LANGGRAPH_SIBLINGS,
        _OPENAI_AGENTS_SIBLINGS,
    )
}


def agent(command: str, scenario: str = "kill-mid-tool") -> Target:
    """A user's agent from ``--agent COMMAND`` (split like a POSIX shell would), run under ``scenario``."""
    argv = shlex.split(command)
    if not argv:
        raise ValueError('--agent needs a command, e.g. --agent "python my_agent.py"')
    return Target(name="agent", argv=tuple(argv), scenario=scenario)


def upgrade_agent(start_command: str, resume_command: str) -> Target:
    """resume-after-upgrade for a user's agent: ``start_command`` starts (release A), ``resume_command`` resumes (B)."""
    start, resume = agent(start_command), agent(resume_command)
    return Target(name="agent", argv=start.argv, resume_argv=resume.argv, scenario="resume-after-upgrade")


# resume-after-upgrade, built in: per framework, the import name its agents need and the variants that start
# on release A and resume on release B. The same target module runs in both environments; only the
# interpreter differs (docs/agent-protocol.md, "resume-after-upgrade").
def _kept(name: str, **options: tuple[str, ...]) -> tuple[Target, ...]:
    return tuple(
        v for v in BUILT_INS[name].variants if all(str(v.options.get(k)) in vals for k, vals in options.items())
    )


# Read in the agent-framework-core wheels (agent_framework/_workflows/_functional.py,
# FunctionalWorkflow._compute_signature_hash): up to 1.19.0 the hash mixes the workflow's name, its step
# names and its bytecode; from 1.20.0 the steps' identities (code, closure, defaults) and the helper
# functions' signatures. The same unchanged workflow hashes differently, and run(checkpoint_id=...)
# refuses a checkpoint whose hash differs.
AGENT_FRAMEWORK_SIGNATURE_CHANGED = Note(
    text="the workflow code is the same on both sides: the release changed how graph_signature_hash is "
    "computed (1.20.0: step identities instead of step names and bytecode), so the old checkpoint no longer matches",
    condition="resume refused the saved run saying it was created by a different version of workflow, "
    "and the run started before 1.20 and resumed on 1.20 or later",
    holds=lambda r: (
        r.message.startswith("refused the saved run")
        and "different version of workflow" in r.stderr
        and n.upgrade_crosses(r, "1.20")
    ),
)

# 1.20.0's @step docstring: "Legacy order-based checkpoints replay sequential steps, but concurrent legacy
# cache hits fail explicitly". The two concurrent variants meet that documented limit; "sequential" (the
# orders one after the other) is the case the docstring says replays.
_AGENT_FRAMEWORK_SEQUENTIAL = Target(
    name="agent-framework",
    argv=python_module("plugpull.targets.agent_framework_checkout", "--variant", "sequential"),
    framework="agent-framework-core",
    options={"variant": "sequential"},
    result_ignore=("orders.idempotency_key",),
)

UPGRADES: dict[str, tuple[str, tuple[Target, ...]]] = {
    # "control" is the plain upgrade; "swap" also meets 1.20.0's new step-cache key; "sequential" has no
    # concurrent call to one @step at all.
    "agent-framework": (
        "agent_framework",
        tuple(
            replace(v, notes=(*v.notes, AGENT_FRAMEWORK_SIGNATURE_CHANGED))
            for v in (*_kept("agent-framework"), _AGENT_FRAMEWORK_SEQUENTIAL)
        ),
    ),
    # durability="sync": the model's tool call is checkpointed before the tool runs, so the line is
    # deterministic (with "async" it is a race, docs/stability.md) and only the upgrade can change it.
    "langgraph": ("langgraph", _kept("langgraph", durability=("sync",))),
    # RunState JSON saved (approved) before the tool runs, restored by the other release.
    "openai-agents": (
        "agents",
        (
            Target(
                name="openai-agents-runstate",
                argv=python_module("plugpull.targets.openai_agents_runstate"),
                framework="openai-agents",
                options={"state": "runstate-json", "key": "tool-call-id"},
                result_ignore=("reply_id",),
            ),
        ),
    ),
}


def upgrade_targets(name: str, from_python: str) -> list[Target]:
    """The built-in resume-after-upgrade variants of framework ``name``: start under ``from_python``
    (release A's environment), resume under this interpreter (release B's)."""
    if name not in UPGRADES:
        raise ValueError(f"no built-in resume-after-upgrade target {name!r}; known: {', '.join(UPGRADES)}")
    return [
        Target(
            name=variant.name,
            argv=(from_python, *variant.argv[1:]),
            framework=variant.framework,
            options=dict(variant.options),
            scenario="resume-after-upgrade",
            notes=variant.notes,
            result_ignore=variant.result_ignore,
            resume_argv=variant.argv,
        )
        for variant in UPGRADES[name][1]
    ]

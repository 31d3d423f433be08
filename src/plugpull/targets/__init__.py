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
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Target:
    """One thing to break: a command plus how to name it in a result line."""

    name: str  # the --target name, or "agent" for --agent
    argv: tuple[str, ...]  # the command; the phase ("start"/"resume") is appended
    framework: str | None = None  # distribution whose version the agent announces
    options: dict[str, Any] = field(default_factory=dict)
    scenario: str = "kill-mid-tool"
    # Extra words for FAIL lines at a point, e.g. the documented rule a duplicate breaks.
    notes: dict[str, str] = field(default_factory=dict)

    def label(self, version: str | None = None) -> str:
        if self.framework is None:
            head = shlex.join(self.argv)
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
            notes={
                "after-effect": f"resume refunded again; effects in a resumed run must be idempotent: {LANGGRAPH_IDEMPOTENCY}"
            },
        )
        for durability in ("sync", "async")
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
            notes={
                "ack-lost": f"openai/openai-agents-python#4775 ({OPENAI_AGENTS_4775}); the SDK docs promise: "
                f'"{OPENAI_AGENTS_PROMISE}" ({OPENAI_AGENTS_ADD_INPUT})'
            },
        ),
    ),
)

# microsoft/agent-framework#8292: functional-workflow step results were cached by (step name,
# call index) up to 1.19.0, so concurrent calls to one @step that restart in another order get each
# other's saved results. "control" keeps the order, so only the swap can explain a FAIL.
AGENT_FRAMEWORK_8292 = "https://github.com/microsoft/agent-framework/issues/8292"

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
            notes={
                point: f"consistent with @step results replayed by call order, not by arguments: {AGENT_FRAMEWORK_8292}"
                for point in ("before-effect", "after-effect")
            }
            if variant == "swap"
            else {},
        )
        for variant in ("swap", "control")
    ),
)

# resume-after-approval. LangGraph docs, "Interrupts": on resume the node that called
# interrupt() runs again from its start, and nothing claims a pending interrupt, so side
# effects after an approval must be idempotent; langchain-ai/langgraph#6663 shows one interrupt
# resumed twice with different values.
LANGGRAPH_INTERRUPTS = "https://docs.langchain.com/oss/python/langgraph/interrupts"
LANGGRAPH_6663 = "https://github.com/langchain-ai/langgraph/issues/6663"

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
            notes={
                "racing-resumers": f"LangGraph does not claim a pending interrupt; every Command(resume=...) "
                f"re-runs the node ({LANGGRAPH_INTERRUPTS}; {LANGGRAPH_6663})",
                "killed-after-effect": f"the node that called interrupt() runs again from its start on resume: "
                f"{LANGGRAPH_INTERRUPTS}",
            },
        )
        for durability in ("sync", "async")
    ),
)

# The SDK docs ("Human-in-the-loop") make RunState the durable record of a pause; it carries no
# claim, so the same saved state can be approved and run any number of times.
OPENAI_AGENTS_HITL = "https://openai.github.io/openai-agents-python/human_in_the_loop/"

_OPENAI_AGENTS_APPROVAL = BuiltIn(
    name="openai-agents-approval",
    module="agents",
    extra="openai-agents",
    variants=(
        Target(
            name="openai-agents-approval",
            argv=python_module("plugpull.targets.openai_agents_approval"),
            framework="openai-agents",
            scenario="resume-after-approval",
            notes={
                point: f"a saved RunState carries no claim: every restore of it runs the approved tool ({OPENAI_AGENTS_HITL})"
                for point in ("double-resume", "racing-resumers", "killed-after-effect")
            },
        ),
    ),
)

# FastAIAgent documents an atomic claim of the pending approval (AlreadyResumed for the loser)
# and crash recovery that re-invokes the saved tool (Agent.aresume docstring, 1.94.0).
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
            notes={
                point: "the approval's claim is taken before the tool runs and a crash cannot give it back: "
                "resume(id) says 'pass resume_value', resume(id, Resume) says AlreadyResumed "
                "(Agent.aresume docstring promises crash recovery re-invokes the tool)"
                for point in ("killed-before-effect", "killed-after-effect")
            },
        ),
    ),
)

# Issue 15: one refund tool per framework, once with no idempotency key (what the framework's own
# recovery does shows) and once with the key a user of that framework would reach for (a value the
# framework saved before the tool ran: a finished task's or step's output, the model's function call id).
_LANGGRAPH_FUNCTIONAL = BuiltIn(
    name="langgraph-functional",
    module="langgraph",
    extra="langgraph",
    variants=tuple(
        Target(
            name="langgraph-functional",
            argv=python_module("plugpull.targets.langgraph_functional", "--key", key),
            framework="langgraph",
            options={"api": "functional", "key": key},
        )
        for key in ("none", "checkpointed")
    ),
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
        )
        for key in ("none", "function-call-id")
    ),
)

# ADK tool confirmation (FunctionTool(require_confirmation=True)) on the same resumable app.
_GOOGLE_ADK_APPROVAL = BuiltIn(
    name="google-adk-approval",
    module="google.adk",
    extra="google-adk",
    variants=(
        Target(
            name="google-adk-approval",
            argv=python_module("plugpull.targets.google_adk_approval"),
            framework="google-adk",
            scenario="resume-after-approval",
        ),
    ),
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
        )
        for key in ("none", "checkpointed")
    ),
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
        )
        for key in ("none", "tool-call-id")
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
        _CREWAI,
    )
}


def agent(command: str, scenario: str = "kill-mid-tool") -> Target:
    """A user's agent from ``--agent COMMAND`` (split like a POSIX shell would), run under ``scenario``."""
    argv = shlex.split(command)
    if not argv:
        raise ValueError('--agent needs a command, e.g. --agent "python my_agent.py"')
    return Target(name="agent", argv=tuple(argv), scenario=scenario)

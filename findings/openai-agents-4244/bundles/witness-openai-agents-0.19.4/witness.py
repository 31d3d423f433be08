"""An approved RunState resumed in a new process with Runner.run(..., context=...) pauses at the approval again.

https://github.com/openai/openai-agents-python/issues/4244. A tool with ``needs_approval=True`` pauses the run; this
process saves ``result.to_state().to_json()`` and exits; a second process (this script again, a new interpreter)
restores it with ``RunState.from_json``, calls ``state.approve(item)`` and resumes with
``Runner.run(agent, state, context={...})``. The refund tool appends a line to a file, so the count survives the
processes. PASS: the resumed run finishes and the refund ran once. FAIL: the resumed run stops at the approval
again (``result.interruptions``) or the refund count is not 1.

Every point of the finding starts from this same clean approval (the ones after approve-elsewhere then add a fault):
when it already fails, the fault of the point never runs, so each point's witness is this flow. The model is
scripted and offline; no API key, no network.

    python witness.py --point approve-elsewhere [--repeat N]

Prints one JSON line last: {"witness", "framework", "version", "verdict", "counts", "did"}.

Exit 0: the resumed run finishes and the refund runs once; 1: the resumed run pauses at the approval again, or the
refund count is not 1; 2: the script did not run as designed.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

FRAMEWORK = "openai-agents"
POINTS = ["approve-elsewhere", "double-resume", "racing-resumers", "killed-before-effect", "killed-after-effect"]
CONTEXT = {"user": "u-42"}  # a plain dict: nothing to serialize (the report's first case)


def build_agent(refunds: Path) -> Any:
    from agents.usage import Usage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    from agents import Agent, Model, ModelResponse, function_tool

    @function_tool(needs_approval=True)
    def refund(order: str) -> str:
        """Refund an order (a human approves first)."""
        with refunds.open("a") as f:
            f.write(order + "\n")
        return f"refunded {order}"

    class ScriptedModel(Model):
        """Asks for the refund until the conversation holds its result, then answers."""

        async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
            items = [] if isinstance(input, str) else list(input)
            done = any(
                (i.get("type") if isinstance(i, dict) else getattr(i, "type", None)) == "function_call_output"
                for i in items
            )
            if done:
                text = ResponseOutputText(type="output_text", text="The refund is done.", annotations=[])
                output: list[Any] = [
                    ResponseOutputMessage(
                        type="message",
                        id=f"msg_{secrets.token_hex(6)}",
                        role="assistant",
                        status="completed",
                        content=[text],
                    )
                ]
            else:
                output = [
                    ResponseFunctionToolCall(
                        type="function_call",
                        call_id=f"call_{secrets.token_hex(6)}",
                        name="refund",
                        arguments=json.dumps({"order": "C-3003"}),
                        status="completed",
                    )
                ]
            return ModelResponse(output=output, usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any):  # pragma: no cover - never streams
            raise NotImplementedError

    return Agent(name="Refunds", instructions="Refund the order.", model=ScriptedModel(), tools=[refund])


async def phase(name: str, where: Path) -> int:
    """One process's part: ``start`` saves the paused state; ``approve`` restores, approves and resumes."""
    from agents.run_state import RunState

    from agents import Runner, set_tracing_disabled

    set_tracing_disabled(True)
    agent = build_agent(where / "refunds.txt")
    if name == "start":
        result = await Runner.run(agent, "Refund order C-3003, please.", context=CONTEXT)
        if not result.interruptions:
            print("the run finished without asking for approval", file=sys.stderr)
            return 2
        (where / "paused.json").write_text(json.dumps(result.to_state().to_json()))
        return 0
    state = await RunState.from_json(agent, json.loads((where / "paused.json").read_text()))
    for item in state.get_interruptions():
        state.approve(item)
    result = await Runner.run(agent, state, context=CONTEXT)
    if result.interruptions:
        print(f"paused again: {result.interruptions[0].name} needs approval", file=sys.stderr)
        return 5
    return 0


def once() -> tuple[str, int, str]:
    """start, then approve in a second process; the verdict, the refund count and what happened."""
    with tempfile.TemporaryDirectory(prefix="witness-4244-") as tmp:
        where = Path(tmp)
        run = [sys.executable, __file__, "--phase"]
        start = subprocess.run([*run, "start", str(where)], capture_output=True, text=True, timeout=300)
        if start.returncode != 0:
            return "ERROR", 0, f"start exited {start.returncode}: {start.stderr.strip().splitlines()[-1:]}"
        approve = subprocess.run([*run, "approve", str(where)], capture_output=True, text=True, timeout=300)
        refunds = len((where / "refunds.txt").read_text().splitlines()) if (where / "refunds.txt").exists() else 0
    if approve.returncode == 5:
        return "FAIL", refunds, "the approved run, resumed with context=, paused at the approval again"
    if approve.returncode != 0:
        return "ERROR", refunds, f"approve exited {approve.returncode}: {approve.stderr.strip().splitlines()[-1:]}"
    if refunds != 1:
        return "FAIL", refunds, f"the approved run finished with {refunds} refunds"
    return "PASS", refunds, "the approved run, resumed with context=, ran the refund once and finished"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--point", choices=POINTS, default="approve-elsewhere")
    parser.add_argument("--repeat", type=int, default=1, help="run the flow N times; FAIL if any run fails")
    parser.add_argument("--phase", nargs=2, metavar=("NAME", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        return asyncio.run(phase(args.phase[0], Path(args.phase[1])))
    version = importlib.metadata.version(FRAMEWORK)
    runs = [once() for _ in range(max(args.repeat, 1))]
    verdicts = [v for v, _, _ in runs]
    verdict = "ERROR" if "ERROR" in verdicts else "FAIL" if "FAIL" in verdicts else "PASS"
    refunds = [n for _, n, _ in runs]
    did = next(d for v, _, d in runs if v == verdict)
    if args.point != "approve-elsewhere":
        did = f"the clean approval {args.point} starts from: {did}"
    if len(runs) > 1:
        did += f" ({verdicts.count(verdict)} of {len(runs)} runs)"
    counts = {"refund": refunds[0] if len(runs) == 1 else max(refunds)}
    print(
        json.dumps(
            {
                "witness": "witness.py",
                "framework": FRAMEWORK,
                "version": version,
                "verdict": verdict,
                "counts": counts,
                "did": did,
            }
        )
    )
    return {"PASS": 0, "FAIL": 1}.get(verdict, 2)


if __name__ == "__main__":
    sys.exit(main())

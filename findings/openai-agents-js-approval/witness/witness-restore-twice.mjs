// A framework-only witness (no plugpull): is a saved RunState a claim on the approval, or a snapshot?
//
//   node witness-restore-twice.mjs
//
// The docs' steps for a long-running approval with the OpenAI Agents SDK for JS: run to a tool with
// `needsApproval: true`, save `result.state.toString()`; then restore that one saved string twice, as two
// approvers (or an approver and a recovery after a crash) would, approve each restored state and run it to the end.
// It prints one JSON line, the witness contract of plugpull's findings (its verdict, counts and version, and exit code
// 0 PASS, 1 FAIL, 2 ERROR): FAIL when one approved pause ran the tool more than once.
// Measured on @openai/agents 0.18.0 and 0.20.0 (Node 20.20.2): refund 2: each restore runs the approved tool; the
// SDK keeps no record that the saved pause was already resumed, so an app that must refund once needs its own claim
// (an atomic rename of the saved state, as approval.mjs --design claim-and-key does) or an idempotency key.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

import { Agent, RunState, Usage, run, setTracingDisabled, tool } from "@openai/agents";
import { z } from "zod";

const FRAMEWORK = "@openai/agents";

function installedVersion(name) {
  // The version this process runs, from the package's own package.json (import.meta.resolve: Node 20.6 and later).
  const entry = fileURLToPath(import.meta.resolve(name));
  const root = entry.slice(0, entry.lastIndexOf(`/node_modules/${name}/`) + `/node_modules/${name}/`.length);
  return JSON.parse(readFileSync(`${root}package.json`, "utf8")).version;
}

setTracingDisabled(true);
let executions = 0;

class ScriptedModel {
  async getResponse(request) {
    const items = Array.isArray(request.input) ? request.input : [];
    const answered = items.some((item) => item.type === "function_call_result" && item.name === "refund");
    const output = answered
      ? [{ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "done" }] }]
      : [{ type: "function_call", callId: "call_1", name: "refund", arguments: '{"order":"A-1001"}', status: "completed" }];
    return { usage: new Usage(), output };
  }

  // eslint-disable-next-line require-yield
  async *getStreamedResponse() {
    throw new Error("not streamed");
  }
}

const refund = tool({
  name: "refund",
  description: "Refund an order (a human approves first).",
  parameters: z.object({ order: z.string() }),
  needsApproval: true,
  execute: async ({ order }) => {
    executions += 1;
    return `refunded ${order}`;
  },
});
const agent = new Agent({ name: "Refunds", instructions: "Refund the order.", model: new ScriptedModel(), tools: [refund] });

const paused = await run(agent, "Refund order A-1001, please.");
const saved = paused.state.toString();
const outputs = [];
for (let restore = 0; restore < 2; restore++) {
  const state = await RunState.fromString(agent, saved);
  for (const item of state.getInterruptions()) state.approve(item);
  outputs.push((await run(agent, state)).finalOutput);
}
const verdict = paused.interruptions.length !== 1 ? "ERROR" : executions > 1 ? "FAIL" : "PASS";
const did =
  verdict === "ERROR"
    ? `the run paused with ${paused.interruptions.length} interruptions, not one approval`
    : `one saved RunState restored twice, each approved and run: the approved tool ran ${executions} time(s)`;
console.log(
  JSON.stringify({
    witness: "witness-restore-twice.mjs",
    framework: FRAMEWORK,
    version: installedVersion(FRAMEWORK),
    verdict,
    counts: { refund: executions },
    did,
    outputs,
  }),
);
process.exitCode = { PASS: 0, FAIL: 1 }[verdict] ?? 2;

// A LangGraph.js refund agent whose tool asks for approval: the twin of src/plugpull/targets/langgraph_approval.py.
//
//   node approval.mjs [--durability sync|async|exit] {start|approve|recover}
//   plugpull --agent "node clients/js/examples/langgraph/approval.mjs" --scenario resume-after-approval
//
// The graph of agent.mjs (graph.mjs: a scripted model, ToolNode, LangGraph.js's SqliteSaver in $PLUGPULL_WORKDIR).
// The refund tool calls interrupt() (LangGraph.js docs, "Human-in-the-loop": an interrupt inside a node pauses the
// graph, and Command({ resume }) continues it, running the node again from its start) and only after an approval
// records the refund, with no key, so the framework's own behaviour shows.
// start:   invoke(input) runs to the interrupt; exits 0 with the run paused.
// approve: invoke(new Command({ resume: { approved: true } })) in a new process, from the saver alone. LangGraph.js
//          refuses nothing here by default (its strict resume mode is an internal configurable), so this never
//          exits 3: whatever it does with a second resume is what plugpull counts.
// recover: what an app does after a crash, with the public API only: read getState(); if an interrupt is still
//          pending, resume it with the approval the human gave; else if a node is next, invoke(null); else the run
//          is finished.
import process from "node:process";

import { HumanMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { Command, interrupt } from "@langchain/langgraph";
import { z } from "zod";

import { PAUSED_AGAIN_EXIT, announce, gate, recordEffect, recordResult } from "plugpull-client"; // plugpull
import { THREAD, buildGraph, installedVersion, openSaver } from "./graph.mjs";

const APPROVED = { approved: true };
const PHASES = ["start", "approve", "recover"];
const DURABILITIES = ["sync", "async", "exit"];

const log = (message) => console.error(`langgraphjs_approval: ${message}`);

const refund = tool(
  async ({ order_id, cents }) => {
    const answer = interrupt({ action: "refund", order_id, cents });
    if (!answer?.approved) return `refund of ${order_id} rejected`;
    await recordEffect("refund"); // plugpull: the side effect, after the approval
    return `refunded ${cents} cents on order ${order_id}`;
  },
  {
    name: "refund",
    description: "Refund an order at the payment provider, once a human approves.",
    schema: z.object({ order_id: z.string(), cents: z.number().int() }),
  },
);

function parse(argv) {
  let durability = "sync";
  let phase = null;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--durability") durability = argv[++i];
    else phase = argv[i];
  }
  if (!PHASES.includes(phase) || !DURABILITIES.includes(durability)) {
    console.error(`usage: approval.mjs [--durability ${DURABILITIES.join("|")}] {${PHASES.join("|")}}`);
    process.exit(2);
  }
  return { durability, phase };
}

const interruptsOf = (state) => state.tasks.flatMap((task) => task.interrupts ?? []);

async function main() {
  const args = parse(process.argv.slice(2));
  await announce({ framework: "langgraphjs", version: installedVersion("@langchain/langgraph") }); // plugpull
  const graph = buildGraph(openSaver(process.env.PLUGPULL_WORKDIR ?? "."), refund);
  const run = (payload) => graph.invoke(payload, { ...THREAD, durability: args.durability });

  if (args.phase === "start") {
    await run({ messages: [new HumanMessage("Please refund order A-1001.")] });
    const state = await graph.getState(THREAD);
    const pending = interruptsOf(state);
    if (pending.length === 0) {
      log(`start did not pause for approval (next=${JSON.stringify(state.next)})`);
      return 1;
    }
    log(`paused for approval: ${JSON.stringify(pending[0].value)}`);
    return 0;
  }
  if (args.phase === "approve") {
    await gate(); // plugpull: racing approvers are released together here
    await run(new Command({ resume: APPROVED }));
  } else {
    const state = await graph.getState(THREAD);
    if (interruptsOf(state).length > 0) {
      log("an approval is still pending: resuming it with the approval given");
      await run(new Command({ resume: APPROVED }));
    } else if (state.next.length > 0) {
      log(`continuing from the last checkpoint (next=${JSON.stringify(state.next)})`);
      await run(null);
    } else log("the run is finished: nothing to recover");
  }
  const state = await graph.getState(THREAD);
  const pending = interruptsOf(state);
  if (pending.length > 0) {
    log(`the run paused again: ${JSON.stringify(pending[0].value)}`);
    return PAUSED_AGAIN_EXIT;
  }
  // The run's outcome as its checkpoint holds it (the same whichever process finished the run): the final answer.
  const messages = state.values.messages ?? [];
  const answer = messages.length ? messages.at(-1).content : null;
  await recordResult({ answer }); // plugpull
  log(`done: ${answer}`);
  return 0;
}

process.exitCode = await main();

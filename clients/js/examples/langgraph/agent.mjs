// A LangGraph.js refund agent for `plugpull --agent`: the twin of src/plugpull/targets/langgraph_refund.py.
//
//   node agent.mjs {no-key|tool-call-id} [--durability sync|async|exit] {start|resume}
//   plugpull --agent "node clients/js/examples/langgraph/agent.mjs tool-call-id"
//
// A real StateGraph (a model node + LangGraph's prebuilt ToolNode) with LangGraph.js's own SqliteSaver
// (@langchain/langgraph-checkpoint-sqlite, better-sqlite3) on $PLUGPULL_WORKDIR, and a scripted, offline chat
// model that asks for the refund until the conversation holds the tool's result, with a new tool call id every
// time it runs, as a real LLM does. Tool variants (the refund's idempotency key):
// - no-key: none, so every call is a new refund;
// - tool-call-id: the id of the model's tool call (the tool reads it from its config, `config.toolCall.id`),
//   stable across a resume only if the model's message that made the call was checkpointed.
// start: graph.invoke(input, {configurable: {thread_id}, durability}); resume: graph.invoke(null, ...), LangGraph's
// own way to continue a thread from its last checkpoint; a thread with no checkpoint at all (killed before the
// input's was written) has nothing to continue, so resume submits the input again, as a correct app does.
// Lines marked `plugpull` are the instrumentation.
import process from "node:process";

import { HumanMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { z } from "zod";

import { announce, recordEffect, recordResult } from "plugpull-client"; // plugpull
import { THREAD, buildGraph, installedVersion, openSaver } from "./graph.mjs";

const VARIANTS = ["no-key", "tool-call-id"];
const DURABILITIES = ["sync", "async", "exit"];

function parse(argv) {
  const args = { variant: null, durability: "sync", phase: null };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--durability") args.durability = argv[++i];
    else if (args.variant === null) args.variant = argv[i];
    else args.phase = argv[i];
  }
  if (!VARIANTS.includes(args.variant) || !DURABILITIES.includes(args.durability) || !["start", "resume"].includes(args.phase)) {
    console.error(`usage: agent.mjs {${VARIANTS.join("|")}} [--durability ${DURABILITIES.join("|")}] {start|resume}`);
    process.exit(2);
  }
  return args;
}

function makeRefundTool(variant) {
  return tool(
    async ({ order_id, cents }, config) => {
      const key = variant === "tool-call-id" ? config.toolCall?.id : null;
      await recordEffect("refund", { key }); // plugpull: where the payment API's refund call goes
      return `refunded ${cents} cents on order ${order_id}`;
    },
    {
      name: "refund",
      description: "Refund an order at the payment provider.",
      schema: z.object({ order_id: z.string(), cents: z.number().int() }),
    },
  );
}

async function main() {
  const args = parse(process.argv.slice(2));
  const workdir = process.env.PLUGPULL_WORKDIR ?? ".";
  await announce({ framework: "langgraphjs", version: installedVersion("@langchain/langgraph") }); // plugpull
  const checkpointer = openSaver(workdir);
  const graph = buildGraph(checkpointer, makeRefundTool(args.variant));
  const request = { messages: [new HumanMessage("Please refund order A-1001.")] };
  // Resume continues from the last checkpoint; with none saved yet, the run starts over from its input.
  const fresh = args.phase === "start" || (await checkpointer.getTuple(THREAD)) === undefined;
  const final = await graph.invoke(fresh ? request : null, { ...THREAD, durability: args.durability });
  const answer = final.messages.at(-1).content;
  await recordResult({ answer }); // plugpull: the run's outcome, compared with the clean run's
  console.log(answer);
}

await main();

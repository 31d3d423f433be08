// A plain Node agent for `plugpull --agent`: a scripted model, one refund tool, its state in a JSON file.
//
//   plugpull --agent "node clients/js/examples/refund-agent.mjs tool-call-id"    # keyed by the tool call id
//   plugpull --agent "node clients/js/examples/refund-agent.mjs no-key"          # no idempotency key
//
// No framework: the "checkpointer" is $PLUGPULL_WORKDIR/run.json, written (atomically: a temp file renamed over
// it) after every step, and `resume` continues from the step it names, running again the step that was running
// when the process died (at-least-once, like most frameworks' recovery). The model's tool call id is made up per
// run and saved with the step before the tool runs, so a resumed tool sends the same key.
// Lines marked `plugpull` are the whole instrumentation.
import { randomUUID } from "node:crypto";
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";

import { announce, boundary, recordEffect, recordResult } from "../index.js"; // plugpull

const VARIANTS = ["tool-call-id", "no-key"];
const [variant, phase] = process.argv.slice(2);
if (!VARIANTS.includes(variant) || !["start", "resume"].includes(phase)) {
  console.error(`usage: refund-agent.mjs {${VARIANTS.join("|")}} {start|resume}`);
  process.exit(2);
}
const workdir = process.env.PLUGPULL_WORKDIR ?? process.cwd();
const file = join(workdir, "run.json");

const save = (state) =>
  boundary("checkpoint-save", () => {
    // plugpull: a boundary around the save
    writeFileSync(`${file}.tmp`, JSON.stringify(state));
    renameSync(`${file}.tmp`, file);
  });

function load() {
  try {
    return JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    if (err.code === "ENOENT") return null;
    throw err;
  }
}

// The scripted model: asks for the refund once, then answers from the tool's result.
function model(messages) {
  const result = messages.find((m) => m.role === "tool");
  if (!result) {
    const call = { id: `call_${randomUUID().replaceAll("-", "")}`, name: "refund", args: { order_id: "A-1001" } };
    return { role: "assistant", content: "", tool_calls: [call] };
  }
  return { role: "assistant", content: `Refund for order ${result.order_id} is ${result.content}.` };
}

async function refund(call) {
  const key = variant === "no-key" ? null : call.id;
  await recordEffect("refund", { key }); // plugpull: where the payment API's refund call goes
  return { role: "tool", tool_call_id: call.id, order_id: call.args.order_id, content: "done" };
}

async function main() {
  await announce({ framework: "node", version: process.versions.node }); // plugpull
  let state = phase === "resume" ? load() : null;
  if (state === null) {
    // start, or a resume of a run killed before its first save: nothing of it happened, so run the input again
    if (phase === "resume") console.error("resume: nothing saved yet, starting from the input");
    state = { step: "model", messages: [{ role: "user", content: "Please refund order A-1001." }] };
    await save(state);
  } else console.error(`resume: continuing at step ${state.step}`);
  while (state.step !== "done") {
    if (state.step === "model") {
      const reply = await boundary("model-call", () => model(state.messages)); // plugpull
      state = { step: reply.tool_calls ? "tool" : "done", messages: [...state.messages, reply] };
    } else {
      const call = state.messages.at(-1).tool_calls[0];
      state = { step: "model", messages: [...state.messages, await refund(call)] };
    }
    await save(state);
  }
  await recordResult({ answer: state.messages.at(-1).content, order: "refunded" }); // plugpull
}

await main();

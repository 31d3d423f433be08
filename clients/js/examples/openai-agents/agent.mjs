// An OpenAI Agents SDK for JS refund whose run is saved as RunState JSON before the tool runs: the twin of
// src/plugpull/targets/openai_agents_runstate.py, for `plugpull --agent` under kill-mid-tool.
//
//   node agent.mjs {start|resume}
//   plugpull --agent "node clients/js/examples/openai-agents/agent.mjs" --scenario kill-mid-tool
//
// The SDK docs ("Human in the loop", https://openai.github.io/openai-agents-js/guides/human-in-the-loop/) make
// `result.state.toString()` the durable record of a paused run, restored in another process with
// `await RunState.fromString(agent, saved)` and continued with `run(agent, state)`.
//
// start:  `run()` pauses on a tool with `needsApproval: true`; the app approves, saves `state.toString()` to
//         $PLUGPULL_WORKDIR/state.json (the saved run) and runs the state on. The refund is keyed by the model's
//         tool call id, which the tool reads from its third argument (`details.toolCall.callId`: the SDK calls
//         `execute(input, runContext, details)` with `details = { toolCall }`, node_modules/@openai/agents-core/
//         dist/tool.mjs and dist/runner/toolExecution.mjs). The call id is in the saved state, so a restored run
//         that runs the tool again repeats the same key.
// resume: `RunState.fromString(agent, saved)` and `run(agent, state)`: the SDK's way to continue. A state the SDK
//         refuses to load throws out of `fromString`, with the SDK's own message.
//
// The model is scripted and offline: it asks for the refund until the conversation holds the tool's output, then
// answers, with new ids on every call as a real model makes them. Lines marked `plugpull` are the instrumentation.
import { readFileSync, writeFileSync, existsSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import path from "node:path";
import process from "node:process";

import { Agent, RunState, Usage, run, setTracingDisabled, tool } from "@openai/agents";
import { z } from "zod";

import { PAUSED_AGAIN_EXIT, announce, recordEffect, recordResult } from "plugpull-client"; // plugpull

const ORDER = "A-1001";
const STATE_FILE = "state.json";
const PHASES = ["start", "resume"];

const log = (message) => console.error(`openai_agents_js_runstate: ${message}`);

function installedVersion(name) {
  // The version of the installation this process runs, read from its package.json (never from a pin file); the
  // package exports no ./package.json, so it is found beside the entry point require resolves.
  const require = createRequire(import.meta.url);
  const entry = require.resolve(name);
  const root = entry.slice(0, entry.lastIndexOf(`/node_modules/${name}/`) + `/node_modules/${name}/`.length);
  return JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")).version;
}

// Asks for the refund until the conversation holds its output, then answers. It chooses from the conversation, not a
// call counter, so start and resume (two processes) agree; it makes new ids on every call, as a real model does.
class ScriptedModel {
  async getResponse(request) {
    const items = typeof request.input === "string" ? [{ role: "user", content: request.input }] : request.input;
    const refunded = items.some((item) => item.type === "function_call_result");
    if (!refunded) {
      const callId = `call_${randomBytes(6).toString("hex")}`;
      // An id made up per run: the harness names it when it compares sessions (docs/agent-protocol.md).
      await announce({ run_value: callId }); // plugpull
      const call = { type: "function_call", callId, name: "refund", arguments: JSON.stringify({ order: ORDER }), status: "completed" };
      return { usage: new Usage(), output: [call] };
    }
    // The reply never quotes the user and names its own id, so a second answer from a second model call is a
    // different item, while the same answer written twice is a duplicate.
    const notes = items.filter((item) => item.role === "user").length - 1;
    const replyId = `msg_${randomBytes(6).toString("hex")}`;
    await announce({ run_value: replyId }); // plugpull
    const text = `Refunded ${ORDER} (${notes} later note(s) read; reply ${replyId}).`;
    const reply = { id: replyId, type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text }] };
    return { usage: new Usage(), output: [reply] };
  }

  // eslint-disable-next-line require-yield
  async *getStreamedResponse() {
    throw new Error("this app runs run(), not a streamed run");
  }
}

// The run's result: the final answer, with the reply id the model made up apart (in reply_id, which the agent
// announces as result_ignore), so the answer keeps its place as `<reply id>`.
function outcome(finalOutput) {
  const text = String(finalOutput);
  const replyId = text.match(/reply (msg_[0-9a-f]+)/)?.[1] ?? null;
  return { answer: replyId ? text.replace(replyId, "<reply id>") : text, reply_id: replyId };
}

function buildAgent() {
  const refund = tool({
    name: "refund",
    description: "Refund an order (a human approves first).",
    parameters: z.object({ order: z.string() }),
    needsApproval: true,
    execute: async ({ order }, _runContext, details) => {
      await recordEffect("refund", { key: details?.toolCall?.callId ?? null }); // plugpull: the side effect, keyed by the saved call id
      return `refunded ${order}`;
    },
  });
  return new Agent({ name: "Refunds", instructions: "Refund the order the user names.", model: new ScriptedModel(), tools: [refund] });
}

const statePath = () => {
  const workdir = process.env.PLUGPULL_WORKDIR;
  if (!workdir) throw new Error("PLUGPULL_WORKDIR is not set: the app keeps its saved runs there");
  return path.join(workdir, STATE_FILE);
};

// Runs the state to its end and records the outcome: exit 0. A run that ends paused at an approval again records
// nothing: exit 5 (PAUSED_AGAIN_EXIT), as the Python twin's finish() does.
async function finish(agent, state) {
  const result = await run(agent, state);
  if (result.interruptions?.length) {
    log(`the run paused again: ${result.interruptions.length} approval(s) pending: ${result.interruptions[0].name}`);
    return PAUSED_AGAIN_EXIT;
  }
  await recordResult(outcome(result.finalOutput)); // plugpull: the run's outcome
  log(`done: ${result.finalOutput}`);
  return 0;
}

async function start(agent) {
  const result = await run(agent, `Refund order ${ORDER}, please.`);
  if (result.interruptions.length !== 1) {
    log(`expected one approval interruption, got ${result.interruptions.length}`);
    return 1;
  }
  const state = result.state;
  state.approve(result.interruptions[0]);
  writeFileSync(statePath(), state.toString());
  log(`approved ${result.interruptions[0].name}; state saved to ${STATE_FILE}`);
  return finish(agent, state);
}

async function resume(agent) {
  if (!existsSync(statePath())) {
    log(`nothing to resume: no ${STATE_FILE}`);
    return 1;
  }
  return finish(agent, await RunState.fromString(agent, readFileSync(statePath(), "utf8")));
}

const phase = process.argv[2];
if (process.argv.length !== 3 || !PHASES.includes(phase)) {
  console.error(`usage: agent.mjs {${PHASES.join("|")}}`);
  process.exit(2);
}
setTracingDisabled(true); // offline: no trace export
// The reply id differs per model call by design: left out of the comparison with the clean run's result.
await announce({ framework: "openai-agents-js", version: installedVersion("@openai/agents"), result_ignore: "reply_id" }); // plugpull
try {
  process.exitCode = await { start, resume }[phase](buildAgent());
} catch (error) {
  // Node ends an uncaught error's report with a line of its own version; the error's message goes last instead,
  // as a Python traceback ends, since the last line is where a reader (and plugpull's line) looks for why the
  // process stopped: e.g. RunState.fromString refusing a state saved by a newer release ("Run state schema version
  // 1.22 is not supported", buildRunStateFromString in node_modules/@openai/agents-core/dist/runState.mjs: an older
  // release reads only the schema versions it lists in SUPPORTED_SCHEMA_VERSIONS).
  console.error(error?.stack ?? error);
  console.error(`${error?.name ?? "Error"}: ${error?.message ?? error}`);
  process.exitCode = 1;
}

// An OpenAI Agents SDK for JS refund app with a tool that needs approval: the twin of
// src/plugpull/targets/openai_agents_approval.py.
//
//   node approval.mjs [--design plain|claim-and-key] {start|approve|recover}
//   plugpull --agent "node clients/js/examples/openai-agents/approval.mjs" --scenario resume-after-approval
//
// What the SDK's docs ("Human in the loop": long-running approvals) say an app does: the run pauses on a tool with
// `needsApproval: true`; the app saves `result.state.toString()` and exits; later, another process restores it with
// `await RunState.fromString(agent, saved)`, calls `state.approve(interruption)` and `run(agent, state)`. The model is
// scripted and offline: it asks for the refund until the conversation holds its result, then answers.
//
// plain:         the docs' steps and nothing more; the refund passes no idempotency key, so what a restore of the
//                snapshot does shows.
// claim-and-key: what the app adds: approve first claims the stored pause (an atomic rename of paused.json to
//                claimed.json; a loser exits 3, refused), and the refund is keyed by the tool call's id, which every
//                state saved from the pause keeps.
// start:   run to the approval; save the paused state to $PLUGPULL_WORKDIR/paused.json; exit 0.
// approve: restore the paused state (claimed first in claim-and-key), approve, save the approved state to
//          approved.json, run to the end.
// recover: restore approved.json and run it again; when approve died before it saved approved.json, apply the
//          approval again to the paused (or claimed) state, as the Python twin does.
import { readFileSync, renameSync, writeFileSync, existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import process from "node:process";

import { Agent, RunState, Usage, run, setTracingDisabled, tool } from "@openai/agents";
import { z } from "zod";

import { PAUSED_AGAIN_EXIT, announce, gate, recordEffect, recordResult } from "plugpull-client"; // plugpull

const ORDER = "A-1001";
const PAUSED = "paused.json";
const CLAIMED = "claimed.json";
const APPROVED = "approved.json";
const DESIGNS = ["plain", "claim-and-key"];
const PHASES = ["start", "approve", "recover"];
const REFUSED = 3; // docs/agent-protocol.md: approve refused (another approval claimed the pause)

const log = (message) => console.error(`openai_agents_js_approval: ${message}`);

function installedVersion(name) {
  // The version of the installation this process runs, read from its package.json (never from a pin file); the
  // package exports no ./package.json, so it is found beside the entry point require resolves.
  const require = createRequire(import.meta.url);
  const entry = require.resolve(name);
  const root = entry.slice(0, entry.lastIndexOf(`/node_modules/${name}/`) + `/node_modules/${name}/`.length);
  return JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")).version;
}

// The scripted model: decides from the conversation alone, so a fresh process makes the same choice.
class ScriptedModel {
  async getResponse(request) {
    const items = Array.isArray(request.input) ? request.input : [];
    const answered = items.some((item) => item.type === "function_call_result" && item.name === "refund");
    const output = answered
      ? [
          {
            type: "message",
            role: "assistant",
            status: "completed",
            content: [{ type: "output_text", text: `Refund for order ${ORDER} is done.` }],
          },
        ]
      : [
          {
            type: "function_call",
            callId: "call_refund_1",
            name: "refund",
            arguments: JSON.stringify({ order: ORDER }),
            status: "completed",
          },
        ];
    return { usage: new Usage(), output, responseId: `scripted-${answered ? 2 : 1}` };
  }

  // eslint-disable-next-line require-yield
  async *getStreamedResponse() {
    throw new Error("the scripted model does not stream");
  }
}

function buildAgent(design) {
  const refund = tool({
    name: "refund",
    description: "Refund an order (a human approves first).",
    parameters: z.object({ order: z.string() }),
    needsApproval: true,
    execute: async ({ order }, _context, details) => {
      // claim-and-key: the tool call id is in every RunState saved from the pause on: a restore repeats the same key.
      const key = design === "claim-and-key" ? details?.toolCall?.callId : undefined;
      await recordEffect("refund", key === undefined ? {} : { key }); // plugpull: the side effect, after approval
      return `refunded ${order}`;
    },
  });
  return new Agent({ name: "Refunds", instructions: "Refund the order the user names.", model: new ScriptedModel(), tools: [refund] });
}

const where = (name) => path.join(process.env.PLUGPULL_WORKDIR ?? ".", name);
const save = (state, name) => writeFileSync(where(name), state.toString());
const load = (agent, name) => RunState.fromString(agent, readFileSync(where(name), "utf8"));

async function approved(agent, pending) {
  const state = await load(agent, pending);
  const interruptions = state.getInterruptions();
  if (interruptions.length === 0) {
    log("the saved state has nothing to approve");
    return null;
  }
  for (const item of interruptions) state.approve(item);
  save(state, APPROVED);
  return state;
}

async function finish(agent, state) {
  const result = await run(agent, state);
  if (result.interruptions?.length) {
    log(`the run paused again for ${result.interruptions[0].name}`);
    return PAUSED_AGAIN_EXIT;
  }
  await recordResult({ answer: result.finalOutput }); // plugpull
  log(`done: ${result.finalOutput}`);
  return 0;
}

async function start(agent) {
  const result = await run(agent, `Refund order ${ORDER}, please.`);
  if (result.interruptions.length !== 1) {
    log(`expected one approval interruption, got ${result.interruptions.length}`);
    return 1;
  }
  save(result.state, PAUSED);
  log(`paused for approval of ${result.interruptions[0].name}`);
  return 0;
}

async function approve(agent, design) {
  if (design === "plain") {
    const state = await approved(agent, PAUSED);
    if (state === null) return 1;
    await gate(); // plugpull: racing approvers are released together here
    return finish(agent, state);
  }
  await gate(); // plugpull: racing approvers are released together here, before the claim they race for
  try {
    renameSync(where(PAUSED), where(CLAIMED)); // atomic: one approval takes the stored pause
  } catch (error) {
    if (error.code !== "ENOENT") throw error;
    log(`refused: no ${PAUSED}, another approval claimed it`);
    return REFUSED;
  }
  const state = await approved(agent, CLAIMED);
  return state === null ? 1 : finish(agent, state);
}

async function recover(agent) {
  if (existsSync(where(APPROVED))) return finish(agent, await load(agent, APPROVED));
  const pending = [CLAIMED, PAUSED].find((name) => existsSync(where(name)));
  if (pending === undefined) {
    log(`nothing to recover: no ${APPROVED}, ${CLAIMED} or ${PAUSED}`);
    return 1;
  }
  log(`no ${APPROVED}: the approval was never saved; applying it again to ${pending}`);
  const state = await approved(agent, pending);
  return state === null ? 1 : finish(agent, state);
}

function parse(argv) {
  let design = "plain";
  let phase = null;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--design") design = argv[++i];
    else phase = argv[i];
  }
  if (!PHASES.includes(phase) || !DESIGNS.includes(design)) {
    console.error(`usage: approval.mjs [--design ${DESIGNS.join("|")}] {${PHASES.join("|")}}`);
    process.exit(2);
  }
  return { design, phase };
}

const args = parse(process.argv.slice(2));
setTracingDisabled(true); // offline: no trace export
await announce({ framework: "openai-agents-js", version: installedVersion("@openai/agents") }); // plugpull
const agent = buildAgent(args.design);
const phases = { start: () => start(agent), approve: () => approve(agent, args.design), recover: () => recover(agent) };
process.exitCode = await phases[args.phase]();

// A framework-only witness (no plugpull): does a LangGraph.js approval run its tool once when approvers race, and
// when the approver is SIGKILLed inside the approved tool and the run is recovered?
//
//   node approval.mjs --point racing-resumers|killed-after-effect [--durability sync|async] [--racers 5]
//
// The graph of the finding's agent: a scripted model node that asks for a refund, LangGraph.js's prebuilt ToolNode,
// its own SqliteSaver on a file; the refund tool calls interrupt() (https://docs.langchain.com/oss/javascript/langgraph/
// interrupts) and, approved, writes the refund to a ledger file (the payment provider: one line per refund, no key).
// A child process runs to the interrupt; then
// - racing-resumers: N child processes, released together once each has opened the saver, each
//   invoke(new Command({ resume: { approved: true } }));
// - killed-after-effect: one approver is SIGKILLed (its process group) right after the refund, and a new process
//   recovers with the public API: getState(); a pending interrupt is resumed with the approval, else invoke(null).
// One JSON line (verdict FAIL when the refund did not happen exactly once; exit 0 PASS, 1 FAIL, 2 ERROR).
// Measured on @langchain/langgraph 1.2.0 and 1.7.3 (Node 20.20.2): racing-resumers refund 5 of 5 racers,
// killed-after-effect refund 2, under sync and async.
import { spawn } from "node:child_process";
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { Command, MessagesAnnotation, START, StateGraph, interrupt } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { ToolNode, toolsCondition } from "@langchain/langgraph/prebuilt";
import Database from "better-sqlite3";
import { z } from "zod";

const FRAMEWORK = "@langchain/langgraph";
const THREAD = { configurable: { thread_id: "refund-A-1001" } };

function option(name, fallback) {
  const at = process.argv.indexOf(name);
  return at >= 0 ? process.argv[at + 1] : fallback;
}

function installedVersion(name) {
  // The version this process runs, from the package's own package.json (import.meta.resolve: Node 20.6 and later).
  const entry = fileURLToPath(import.meta.resolve(name));
  const root = entry.slice(0, entry.lastIndexOf(`/node_modules/${name}/`) + `/node_modules/${name}/`.length);
  return JSON.parse(readFileSync(`${root}package.json`, "utf8")).version;
}

class ScriptedChatModel extends BaseChatModel {
  _llmType() {
    return "scripted";
  }

  bindTools() {
    return this;
  }

  async _generate(messages) {
    const reply = messages.some((m) => ToolMessage.isInstance(m))
      ? new AIMessage("Refund for order A-1001 is done.")
      : new AIMessage({
          content: "",
          tool_calls: [{ name: "refund", args: { order_id: "A-1001" }, id: `call_${crypto.randomUUID().slice(0, 8)}` }],
        });
    return { generations: [{ message: reply, text: typeof reply.content === "string" ? reply.content : "" }] };
  }
}

async function child(phase, folder, durability) {
  const refund = tool(
    async ({ order_id }) => {
      const decision = interrupt({ question: `Refund order ${order_id}?` });
      if (!decision?.approved) return "refund declined";
      appendFileSync(join(folder, "ledger"), `${process.pid}\n`);
      if (phase === "approve-held") await new Promise(() => appendFileSync(join(folder, "held"), "1"));
      return `refunded order ${order_id}`;
    },
    { name: "refund", description: "Refund an order.", schema: z.object({ order_id: z.string() }) },
  );
  const model = new ScriptedChatModel({});
  const graph = new StateGraph(MessagesAnnotation)
    .addNode("model", async (state) => ({ messages: [await model.invoke(state.messages)] }))
    .addNode("tools", new ToolNode([refund]))
    .addEdge(START, "model")
    .addConditionalEdges("model", toolsCondition)
    .addEdge("tools", "model")
    .compile({ checkpointer: new SqliteSaver(new Database(join(folder, "checkpoints.sqlite"), { timeout: 30000 })) });
  const config = { ...THREAD, durability };
  const approved = new Command({ resume: { approved: true } });
  if (phase === "approve") {
    // A barrier: every racer has imported LangGraph and opened the saver before any resumes, as approvers that
    // click at once are (node's start-up alone would otherwise space them out).
    appendFileSync(join(folder, "ready"), "1");
    while (!existsSync(join(folder, "go"))) await new Promise((resolve) => setTimeout(resolve, 5));
  }
  if (phase === "start") await graph.invoke({ messages: [new HumanMessage("Please refund order A-1001.")] }, config);
  else if (phase === "recover") {
    const state = await graph.getState(THREAD);
    const pending = state.tasks.some((task) => task.interrupts?.length);
    if (pending) await graph.invoke(approved, config);
    else if (state.next.length) await graph.invoke(null, config);
  } else await graph.invoke(approved, config);
}

function runChild(args, { killWhen } = {}) {
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, [fileURLToPath(import.meta.url), ...args], { detached: true, stdio: "inherit" });
    let timer;
    if (killWhen) {
      timer = setInterval(() => {
        if (killWhen()) {
          clearInterval(timer);
          process.kill(-proc.pid, "SIGKILL"); // the child's whole process group, as a crash takes it
        }
      }, 10);
    }
    proc.on("exit", (code, signal) => {
      clearInterval(timer);
      resolve({ code, signal });
    });
  });
}

async function main() {
  const durability = option("--durability", "sync");
  const point = option("--point", "racing-resumers");
  if (option("--phase", null)) return child(option("--phase"), option("--folder"), durability);
  const folder = mkdtempSync(join(tmpdir(), "witness-"));
  try {
    const common = ["--folder", folder, "--durability", durability];
    const problems = [];
    const started = await runChild(["--phase", "start", ...common]);
    if (started.code !== 0) problems.push(`the start exited ${started.code ?? started.signal}`);
    let did;
    if (point === "racing-resumers") {
      const racers = Number(option("--racers", "5"));
      const ready = () => existsSync(join(folder, "ready")) && readFileSync(join(folder, "ready"), "utf8").length >= racers;
      const go = setInterval(() => ready() && (clearInterval(go), writeFileSync(join(folder, "go"), "1")), 5);
      const ends = await Promise.all(Array.from({ length: racers }, () => runChild(["--phase", "approve", ...common])));
      clearInterval(go);
      did = `${racers} approvers resumed the interrupt at once: ${ends.filter((e) => e.code === 0).length} exited 0`;
    } else {
      const held = await runChild(["--phase", "approve-held", ...common], { killWhen: () => existsSync(join(folder, "held")) });
      if (held.signal !== "SIGKILL") problems.push(`the approver was not killed in its tool (${held.code ?? held.signal})`);
      const recovered = await runChild(["--phase", "recover", ...common]);
      if (recovered.code !== 0) problems.push(`the recovery exited ${recovered.code ?? recovered.signal}`);
      did = "the approver SIGKILLed after the refund, the run recovered from the saver (getState, then the pending interrupt resumed)";
    }
    const ledger = join(folder, "ledger");
    const refunds = existsSync(ledger) ? readFileSync(ledger, "utf8").split("\n").filter(Boolean).length : 0;
    const verdict = problems.length ? "ERROR" : refunds === 1 ? "PASS" : "FAIL";
    const out = { witness: "approval.mjs", framework: FRAMEWORK, version: installedVersion(FRAMEWORK), verdict };
    const said = problems.length ? problems.join("; ") : `${did} (durability ${durability}): ${refunds} refund(s)`;
    console.log(JSON.stringify({ ...out, counts: { refund: refunds }, did: said }));
    process.exitCode = { PASS: 0, FAIL: 1 }[verdict] ?? 2;
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

await main();

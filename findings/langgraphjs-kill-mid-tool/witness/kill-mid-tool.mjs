// A framework-only witness (no plugpull): is a LangGraph.js tool SIGKILLed after its side effect run again on resume?
//
//   node kill-mid-tool.mjs [--durability sync|async] [--key none|tool-call-id] [--point after-effect|before-effect]
//
// The graph of the finding's agent: a scripted model node that asks for a refund (a new tool call id every time it
// runs, as an LLM does), LangGraph.js's prebuilt ToolNode and its own SqliteSaver on a file. A child process runs
// graph.invoke(input, {configurable: {thread_id}, durability}); its tool writes the refund to a ledger file (the
// payment provider: one line per refund, with its idempotency key) and then, at after-effect, waits forever; this
// process SIGKILLs the child's process group, then runs graph.invoke(null, config) in a new child, LangGraph's way to
// continue a thread from its last checkpoint. The provider honours a key: refunds are the distinct keys, or every
// line without one. One JSON line (verdict FAIL when the refund did not happen exactly once; exit 0 PASS, 1 FAIL,
// 2 ERROR). Measured on @langchain/langgraph 1.2.0 and 1.7.3 (Node 20.20.2): key none, after-effect: refund 2 under
// sync and async; tool-call-id: refund 1 (the model's message was checkpointed before the tool ran).
import { spawn } from "node:child_process";
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
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

async function child(phase, folder, durability, key, point) {
  const refund = tool(
    async ({ order_id }, config) => {
      if (phase === "start" && point === "before-effect") await new Promise(() => appendFileSync(join(folder, "held"), "1"));
      appendFileSync(join(folder, "ledger"), `${key === "tool-call-id" ? config.toolCall?.id : "-"}\n`);
      if (phase === "start" && point === "after-effect") await new Promise(() => appendFileSync(join(folder, "held"), "1"));
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
    .compile({ checkpointer: new SqliteSaver(new Database(join(folder, "checkpoints.sqlite"))) });
  const input = phase === "start" ? { messages: [new HumanMessage("Please refund order A-1001.")] } : null;
  const final = await graph.invoke(input, { ...THREAD, durability });
  console.log(final.messages.at(-1).content);
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
  const key = option("--key", "none");
  const point = option("--point", "after-effect");
  if (option("--phase", null)) return child(option("--phase"), option("--folder"), durability, key, point);
  const folder = mkdtempSync(join(tmpdir(), "witness-"));
  try {
    const common = ["--folder", folder, "--durability", durability, "--key", key, "--point", point];
    const start = await runChild(["--phase", "start", ...common], { killWhen: () => existsSync(join(folder, "held")) });
    const resumed = await runChild(["--phase", "resume", ...common]);
    const lines = existsSync(join(folder, "ledger")) ? readFileSync(join(folder, "ledger"), "utf8").split("\n").filter(Boolean) : [];
    const refunds = key === "tool-call-id" ? new Set(lines).size : lines.length;
    let verdict = refunds === 1 ? "PASS" : "FAIL";
    let did = `killed at ${point} (durability ${durability}, key ${key}), resumed with graph.invoke(null): ${lines.length} refund call(s), ${refunds} refund(s)`;
    if (start.signal !== "SIGKILL" || resumed.code !== 0) {
      verdict = "ERROR";
      did = `the start was not killed in its tool (${start.signal ?? start.code}) or the resume failed (exit ${resumed.code})`;
    }
    const out = { witness: "kill-mid-tool.mjs", framework: FRAMEWORK, version: installedVersion(FRAMEWORK), verdict };
    console.log(JSON.stringify({ ...out, counts: { refund: refunds }, did }));
    process.exitCode = { PASS: 0, FAIL: 1 }[verdict] ?? 2;
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

await main();

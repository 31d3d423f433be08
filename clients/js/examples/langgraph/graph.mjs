// What the LangGraph.js example agents share (agent.mjs, approval.mjs): the scripted model, the marked saver, the
// graph (a model node + ToolNode), and the installed version.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage, ToolMessage } from "@langchain/core/messages";
import { MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { ToolNode, toolsCondition } from "@langchain/langgraph/prebuilt";
import Database from "better-sqlite3";

import { boundary } from "plugpull-client"; // plugpull

export const THREAD = { configurable: { thread_id: "refund-A-1001" } };

// An offline model that decides from the conversation, like a real LLM would: it asks for the refund until the
// conversation holds a tool result, with a new tool call id every time it runs.
export class ScriptedChatModel extends BaseChatModel {
  _llmType() {
    return "plugpull-scripted";
  }

  bindTools() {
    return this;
  }

  async _generate(messages) {
    let reply;
    if (messages.some((m) => ToolMessage.isInstance(m))) reply = new AIMessage("Refund for order A-1001 is done.");
    else {
      const id = `call_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
      reply = new AIMessage({ content: "", tool_calls: [{ name: "refund", args: { order_id: "A-1001", cents: 1999 }, id }] });
    }
    return { generations: [{ message: reply, text: typeof reply.content === "string" ? reply.content : "" }] };
  }
}

// LangGraph.js's own SqliteSaver, each write marked as a boundary for every-boundary (the saver still saves).
export class MarkedSqliteSaver extends SqliteSaver {
  put(config, checkpoint, metadata) {
    return boundary("checkpoint-save", () => super.put(config, checkpoint, metadata)); // plugpull
  }

  putWrites(config, writes, taskId) {
    return boundary("pending-writes", () => super.putWrites(config, writes, taskId)); // plugpull
  }
}

export function buildGraph(checkpointer, refundTool) {
  const model = new ScriptedChatModel({});
  const callModel = async (state) =>
    boundary("model-call", async () => ({ messages: [await model.bindTools([refundTool]).invoke(state.messages)] })); // plugpull
  return new StateGraph(MessagesAnnotation)
    .addNode("model", callModel)
    .addNode("tools", new ToolNode([refundTool]))
    .addEdge(START, "model")
    .addConditionalEdges("model", toolsCondition)
    .addEdge("tools", "model")
    .compile({ checkpointer });
}

export function installedVersion(name) {
  // The version of the installation this process runs, read from its package.json (never from a pin file).
  const require = createRequire(import.meta.url);
  const entry = require.resolve(name);
  const root = entry.slice(0, entry.lastIndexOf(`/node_modules/${name}/`) + `/node_modules/${name}/`.length);
  return JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version;
}

// SqliteSaver.fromConnString(path) builds a plain SqliteSaver, so the marked one is built from the database.
export function openSaver(workdir) {
  return new MarkedSqliteSaver(new Database(join(workdir, "checkpoints.sqlite")));
}

// A framework-only witness (no plugpull): when is the checkpoint the tool node runs from on disk?
//
//   node witness-async-save.mjs {sync|async} [io]
//
// The same graph as agent.mjs (a scripted model node, ToolNode, SqliteSaver in memory); the saver logs when each
// put/putWrites begins and ends, and the tool logs the latest checkpoint it can read as it starts. With "io" each
// put first waits one event-loop turn (setImmediate), as a saver that talks to a database server does.
// Measured on @langchain/langgraph 1.7.3 (Node 20.20.2): without "io", the step-1 checkpoint (next: tools) is
// saved before the tool starts under sync and async alike (better-sqlite3 writes synchronously). With "io", under
// sync the tool again starts after the step-1 put ended; under async the puts run one after another behind the
// run, and the tool started while the first put (step -1, the input) was still pending: no checkpoint was saved
// yet (here the model node is instant; a model that awaits the network gives the saves time to catch up).
import Database from "better-sqlite3";
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { ToolNode, toolsCondition } from "@langchain/langgraph/prebuilt";
import { z } from "zod";

const [durability, io] = process.argv.slice(2);
const log = [];
class LoggedSaver extends SqliteSaver {
  async put(config, checkpoint, metadata) {
    log.push(`put begin step=${metadata.step}`);
    if (io === "io") await new Promise((resolve) => setImmediate(resolve));
    const saved = await super.put(config, checkpoint, metadata);
    log.push(`put end step=${metadata.step}`);
    return saved;
  }
}
const saver = new LoggedSaver(new Database(":memory:"));
const THREAD = { configurable: { thread_id: "t" } };
const refund = tool(
  async () => {
    const latest = await saver.getTuple(THREAD);
    log.push(`tool starts; latest saved checkpoint step=${latest?.metadata?.step ?? "none"}`);
    return "done";
  },
  { name: "refund", description: "Refund an order.", schema: z.object({}) },
);
const model = async (state) => ({
  messages: [
    state.messages.some((m) => ToolMessage.isInstance(m))
      ? new AIMessage("done")
      : new AIMessage({ content: "", tool_calls: [{ name: "refund", args: {}, id: "call_1" }] }),
  ],
});
const graph = new StateGraph(MessagesAnnotation)
  .addNode("model", model)
  .addNode("tools", new ToolNode([refund]))
  .addEdge(START, "model")
  .addConditionalEdges("model", toolsCondition)
  .addEdge("tools", "model")
  .compile({ checkpointer: saver });
await graph.invoke({ messages: [new HumanMessage("Refund A-1001.")] }, { ...THREAD, durability });
console.log(`${durability}${io ? " io" : ""}: ${log.join("; ")}`);

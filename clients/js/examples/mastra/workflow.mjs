// What the Mastra example agents share (agent.mjs, approval.mjs): the run id, the order, the marked LibSQL storage,
// the workflow around a refund step (lookup-order -> refund -> notify), the Mastra instance and the installed version.
//
// Mastra keeps a workflow run as one snapshot row per run id in its storage (here @mastra/libsql, a SQLite file in
// $PLUGPULL_WORKDIR). The default execution engine writes the snapshot with the run "running" and the step "running"
// right before each step's execute() and again after it (node_modules/@mastra/core/dist/chunk-GSQD3QNR.js,
// DefaultExecutionEngine.executeStep -> persistStepUpdate), and "suspended"/"success" when the run stops there;
// https://mastra.ai/docs/server-db/snapshots describes what a snapshot holds. The source cited in these files is the
// installed package's bundled JavaScript (@mastra/core ships no TypeScript sources); chunk file names are those of
// 0.24.9 and change from release to release (0.24.7: Run is in dist/chunk-Y2BH2LUD.js): grep for the name cited.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

import { Mastra } from "@mastra/core";
import { createStep, createWorkflow } from "@mastra/core/workflows";
import { LibSQLStore } from "@mastra/libsql";
import { z } from "zod";

import { boundary } from "plugpull-client"; // plugpull

// One run per workdir, under an id the app chooses (createRunAsync({ runId })), so a new process finds it again.
export const RUN_ID = "refund-A-1001";
export const ORDER = { order_id: "A-1001", cents: 1999 };
export const ANSWER = "Refund for order A-1001 is done.";

export const Order = z.object({ order_id: z.string(), cents: z.number().int() });
export const Refunded = Order.extend({ refunded: z.boolean() });

// Mastra's own LibSQLStore, each snapshot write marked as a boundary for every-boundary (the store still writes).
export class MarkedLibSQLStore extends LibSQLStore {
  persistWorkflowSnapshot(args) {
    return boundary("snapshot-save", () => super.persistWorkflowSnapshot(args)); // plugpull
  }
}

// lookup-order -> refund -> notify: the steps around the refund give a kill a snapshot before and after it.
// refundStep is the app's: agent.mjs refunds at once, approval.mjs first suspends for a human's approval.
export function buildWorkflow(refundStep) {
  const lookup = createStep({
    id: "lookup-order",
    inputSchema: Order,
    outputSchema: Order,
    execute: ({ inputData }) => boundary("lookup-order", () => inputData), // plugpull
  });
  const notify = createStep({
    id: "notify",
    inputSchema: Refunded,
    outputSchema: z.object({ answer: z.string() }),
    execute: ({ inputData }) =>
      boundary("notify", () => ({ answer: inputData.refunded ? ANSWER : `Refund of ${inputData.order_id} rejected.` })), // plugpull
  });
  return createWorkflow({ id: "refund-workflow", inputSchema: Order, outputSchema: z.object({ answer: z.string() }) })
    .then(lookup)
    .then(refundStep)
    .then(notify)
    .commit();
}


// Storage is given to the Mastra instance, which hands it to every workflow registered with it (the `storage` and
// `workflows` options, node_modules/@mastra/core/dist/mastra/index.d.ts). Mastra's deprecated OpenTelemetry setup
// is off: on, it logs two warnings a process (node_modules/@mastra/core/dist/chunk-QQKRUSCB.js, the constructor).
export function openMastra(workdir, workflow) {
  const storage = new MarkedLibSQLStore({ url: `file:${join(workdir, "mastra.db")}` });
  const mastra = new Mastra({ workflows: { refund: workflow }, storage, telemetry: { enabled: false } });
  return mastra.getWorkflow("refund");
}

export function installedVersion(name) {
  // The version of the installation this process runs, read from its package.json (never from a pin file).
  const require = createRequire(import.meta.url);
  const entry = require.resolve(name);
  const root = entry.slice(0, entry.lastIndexOf(`/node_modules/${name}/`) + `/node_modules/${name}/`.length);
  return JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version;
}

// A framework-only witness (no plugpull): how many of N concurrent resumes of one suspended Mastra run run the
// approved step?
//
//   node racing-resume.mjs [--racers N]
//
// One LibSQL file in a fresh temporary directory; a run of a one-step workflow suspends in it; then N Mastra
// instances over the same file (as N approving processes would open it) each call
// run.resume({ step, resumeData: { approved: true } }) at once. Mastra's only guard is a read: Run._resume loads the
// snapshot and throws "This workflow run was not suspended" unless its status is "suspended"
// (node_modules/@mastra/core/dist/chunk-GSQD3QNR.js); the snapshot is written "running" only later, by the engine
// right before the step's execute() (DefaultExecutionEngine.executeStep -> persistStepUpdate), with a plain upsert
// (node_modules/@mastra/libsql/dist/index.js, persistWorkflowSnapshot: INSERT OR REPLACE, no version check). So
// every resume that read the snapshot before the first "running" write runs the step: nothing claims the
// suspended step (https://mastra.ai/docs/v0/workflows/suspend-and-resume describes resume, not a claim).
// Upstream: mastra-ai/mastra#20443 (concurrent resume() calls both proceed; the in-process fix, PR #20512, says it
// "does not add a storage-backed claim across independent Mastra processes").
// One JSON line, the witness contract of plugpull's findings: refund = the executions of the approved step, verdict
// FAIL when more than one; exit 0 PASS, 1 FAIL, 2 ERROR.
// Measured on @mastra/core 0.24.9 and 0.24.7 with @mastra/libsql 0.16.4 (Node 20.20.2): 5 of 5 resumes ran the step
// in each of several runs; plugpull's racing-resumers (5 processes) saw 4 and 5 of 5.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { Mastra } from "@mastra/core";
import { createStep, createWorkflow } from "@mastra/core/workflows";
import { LibSQLStore } from "@mastra/libsql";
import { z } from "zod";

const FRAMEWORK = "@mastra/core";
const at = process.argv.indexOf("--racers");
const n = Number(at >= 0 ? process.argv[at + 1] : 5);
const dir = mkdtempSync(join(tmpdir(), "mastra-witness-"));
let executions = 0;

function open() {
  // A workflow is bound to one Mastra instance (Workflow.__registerMastra), so each "process" builds its own.
  const approve = createStep({
    id: "approve",
    inputSchema: z.object({}),
    outputSchema: z.object({ done: z.boolean() }),
    resumeSchema: z.object({ approved: z.boolean() }),
    execute: async ({ resumeData, suspend }) => {
      if (resumeData === undefined) return await suspend({});
      executions += 1;
      return { done: true };
    },
  });
  const workflow = createWorkflow({ id: "w", inputSchema: z.object({}), outputSchema: z.object({ done: z.boolean() }) })
    .then(approve)
    .commit();
  const mastra = new Mastra({
    workflows: { w: workflow },
    storage: new LibSQLStore({ url: `file:${join(dir, "mastra.db")}` }),
    telemetry: { enabled: false },
  });
  return mastra.getWorkflow("w");
}

try {
  const paused = await (await open().createRunAsync({ runId: "r" })).start({ inputData: {} });
  if (paused.status !== "suspended") throw new Error(`the run did not suspend: ${paused.status}`);
  const runs = await Promise.all(Array.from({ length: n }, () => open().createRunAsync({ runId: "r" })));
  const outcomes = await Promise.allSettled(runs.map((run) => run.resume({ step: "approve", resumeData: { approved: true } })));
  const refused = outcomes.filter((o) => o.status === "rejected" && /was not suspended/.test(o.reason?.message)).length;
  const verdict = executions === 1 ? "PASS" : "FAIL";
  const entry = fileURLToPath(import.meta.resolve(FRAMEWORK));
  const root = entry.slice(0, entry.lastIndexOf(`/node_modules/${FRAMEWORK}/`) + `/node_modules/${FRAMEWORK}/`.length);
  const version = JSON.parse(readFileSync(`${root}package.json`, "utf8")).version;
  const did = `${n} resume() calls on one suspended run at once: ${executions} ran the step, ${refused} refused`;
  console.log(JSON.stringify({ witness: "racing-resume.mjs", framework: FRAMEWORK, version, verdict, counts: { refund: executions }, did }));
  process.exitCode = { PASS: 0, FAIL: 1 }[verdict];
} finally {
  rmSync(dir, { recursive: true, force: true });
}

// A framework-only witness (no plugpull): what does run.restart() do with a run whose process was SIGKILLed?
//
//   node restart-after-kill.mjs [--case plain|completed|approved]
//
// Each phase is a new Node process (this file again) on one LibSQL file in a fresh temporary directory; the step
// "work" logs each execution to a file (synchronously, so the line is on disk before a kill). Three runs:
// - plain: work -> next, started and killed inside work, after its effect; a new process reads the stored status
//   and calls run.restart() (https://mastra.ai/reference/v0/workflows/run-methods/restart).
// - completed: the same workflow, killed right after Mastra saved the snapshot that holds work's success (from the
//   store, once its write returned), before next began; a new process calls run.restart().
// - approved: work suspends until resumed; a new process resumes it with { approved: true } and is killed inside it
//   after its effect; a third process calls run.restart(), and the app gives the approval again to the step that
//   asked again (run.resume, as the finding's approval.mjs recover does).
// What the installed source says (node_modules/@mastra/core/dist/chunk-GSQD3QNR.js in 0.24.9): the engine saves the
// snapshot "running" before a step's execute() (DefaultExecutionEngine.executeStep -> persistStepUpdate) and again
// after it (executeEntry -> persistStepUpdate) with the step's result, both times with activePaths = that step's
// index; Run._restart starts the engine at activePaths[0] and executeStep runs that step from its start whatever its
// stored result. So a restart runs the step that was running at the kill again (plain: at-least-once), and also a
// step whose success was already saved (completed). The killed resume's data stays in the snapshot (the step's
// resumePayload) but is not given back: executeStep passes resumeData only from a resume() call, so the restarted
// step sees none and suspends again (approved).
// One JSON line, the witness contract of plugpull's findings: the case's refunds (executions of "work" that did its
// effect: every one in plain and completed, those with the approval in approved) and verdict FAIL when more than
// one; exit 0 PASS, 1 FAIL, 2 ERROR.
// Measured on @mastra/core 0.24.9 and 0.24.7 with @mastra/libsql 0.16.4 (Node 20.20.2), every run: refund 2 in each
// case; status after the kill "running"; restart "success" (plain, completed), "suspended" (approved: it asked again).
import { spawnSync } from "node:child_process";
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";

import { fileURLToPath } from "node:url";

import { Mastra } from "@mastra/core";
import { createStep, createWorkflow } from "@mastra/core/workflows";
import { LibSQLStore } from "@mastra/libsql";
import { z } from "zod";

const RUN = "r";
const kill = () => process.kill(process.pid, "SIGKILL");

function executions(dir) {
  const file = join(dir, "executions.log");
  return existsSync(file) ? readFileSync(file, "utf8").trim().split("\n") : [];
}

function open(dir, kind) {
  const first = () => executions(dir).length === 1;
  const work = createStep({
    id: "work",
    inputSchema: z.object({}),
    outputSchema: z.object({}),
    resumeSchema: z.object({ approved: z.boolean() }),
    execute: async ({ resumeData, suspend }) => {
      if (kind === "approved" && resumeData === undefined && executions(dir).length === 0) return await suspend({});
      appendFileSync(join(dir, "executions.log"), `${resumeData?.approved === true ? "with-approval" : "without"}\n`);
      if (kind === "approved" && resumeData === undefined) return await suspend({}); // the restarted step asks again
      if (kind !== "completed" && first()) kill(); // killed inside the step, after its effect, once
      return {};
    },
  });
  const next = createStep({ id: "next", inputSchema: z.object({}), outputSchema: z.object({}), execute: async () => ({}) });
  class Store extends LibSQLStore {
    async persistWorkflowSnapshot(args) {
      await super.persistWorkflowSnapshot(args);
      const { context, status } = args.snapshot;
      if (kind === "completed" && status === "running" && context.work?.status === "success" && first()) kill();
    }
  }
  const workflow = createWorkflow({ id: kind, inputSchema: z.object({}), outputSchema: z.object({}) })
    .then(work)
    .then(next)
    .commit();
  const storage = new Store({ url: `file:${join(dir, "mastra.db")}` });
  const mastra = new Mastra({ workflows: { [kind]: workflow }, storage, telemetry: { enabled: false } });
  return mastra.getWorkflow(kind);
}

async function phase(dir, kind, name) {
  const workflow = open(dir, kind);
  const stored = await workflow.getWorkflowRunExecutionResult(RUN);
  const run = await workflow.createRunAsync({ runId: RUN });
  let status;
  if (name === "start") status = (await run.start({ inputData: {} })).status;
  else if (name === "restart") status = (await run.restart()).status;
  else status = (await run.resume({ step: "work", resumeData: { approved: true } })).status;
  return JSON.stringify({ stored: stored?.status, work: stored?.steps?.work?.status, status });
}

if (process.argv[2] === "phase") {
  console.log(await phase(process.argv[3], process.argv[4], process.argv[5]));
} else {
  const FRAMEWORK = "@mastra/core";
  const at = process.argv.indexOf("--case");
  const kind = at >= 0 ? process.argv[at + 1] : "plain";
  const phases = { plain: ["start", "restart"], completed: ["start", "restart"], approved: ["start", "resume", "restart"] };
  const dir = mkdtempSync(join(tmpdir(), "mastra-witness-"));
  let out;
  try {
    if (!phases[kind]) throw new Error(`--case is one of ${Object.keys(phases).join(", ")}`);
    const steps = [];
    for (const name of phases[kind]) {
      const done = spawnSync(process.execPath, [process.argv[1], "phase", dir, kind, name], { encoding: "utf8" });
      if (done.status !== 0 && !(name !== "restart" && done.signal === "SIGKILL")) throw new Error(done.stderr);
      steps.push(done.signal === "SIGKILL" ? { killed: true } : JSON.parse(done.stdout.trim().split("\n").at(-1)));
    }
    const restarted = steps.at(-1);
    if (kind === "approved" && restarted.status === "suspended") {
      // The restarted step asked again: the app gives the approval the human gave (approval.mjs's recover).
      const again = spawnSync(process.execPath, [process.argv[1], "phase", dir, kind, "resume"], { encoding: "utf8" });
      if (again.status !== 0) throw new Error(again.stderr);
    }
    const log = executions(dir);
    const refunds = kind === "approved" ? log.filter((line) => line === "with-approval").length : log.length;
    const verdict = refunds === 1 ? "PASS" : "FAIL";
    const did =
      `${kind}: killed ${kind === "completed" ? "once the step's success was saved" : "inside the step, after its effect"}` +
      ` (status after the kill: ${restarted.stored}), run.restart() ended` +
      ` ${restarted.status}; the step ran ${log.length} time(s), ${refunds} refund(s)`;
    out = { verdict, counts: { refund: refunds }, did };
  } catch (error) {
    out = { verdict: "ERROR", counts: {}, did: String(error?.message ?? error).split("\n")[0] };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const entry = fileURLToPath(import.meta.resolve(FRAMEWORK));
  const root = entry.slice(0, entry.lastIndexOf(`/node_modules/${FRAMEWORK}/`) + `/node_modules/${FRAMEWORK}/`.length);
  const version = JSON.parse(readFileSync(`${root}package.json`, "utf8")).version;
  console.log(JSON.stringify({ witness: "restart-after-kill.mjs", framework: FRAMEWORK, version, ...out }));
  process.exitCode = { PASS: 0, FAIL: 1 }[out.verdict] ?? 2;
}

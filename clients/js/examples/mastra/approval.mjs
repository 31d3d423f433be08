// A Mastra workflow refund agent whose refund step asks for approval: the Mastra twin of
// clients/js/examples/langgraph/approval.mjs.
//
//   node approval.mjs {start|approve|recover}
//   plugpull --agent "node clients/js/examples/mastra/approval.mjs" --scenario resume-after-approval
//
// The workflow of agent.mjs (workflow.mjs: lookup-order -> refund -> notify, Mastra's LibSQL storage in
// $PLUGPULL_WORKDIR). The refund step calls suspend() until it runs with resumeData (Mastra docs, "Suspend &
// Resume": the step's execute() runs again from its start on resume, with resumeData,
// https://mastra.ai/docs/v0/workflows/suspend-and-resume) and only after an approval records the refund, with no
// key, so the framework's own behaviour shows.
// start:   run.start({ inputData }) runs to the suspend; exits 0 with the run suspended.
// approve: run.resume({ step: "refund", resumeData: { approved: true } }) in a new process, from the stored snapshot
//          alone. Mastra refuses a run whose snapshot is not "suspended" ("This workflow run was not suspended",
//          Run._resume in node_modules/@mastra/core/dist/chunk-GSQD3QNR.js): that refusal exits 3. It is a read of
//          the snapshot's status, not a claim: approvers racing on one suspended run each run the step
//          (findings/mastra-approval/witness/racing-resume.mjs).
// recover: what an app does after a crash, with the public API only: read the stored run; if a step is still
//          suspended, resume it with the approval the human gave; if the run was active ("running": killed inside
//          the approved step), run.restart() (https://mastra.ai/reference/v0/workflows/run-methods/restart), which
//          runs the active step again without its resumeData, so the step suspends again: the app then resumes it
//          with the approval the human already gave (kept in the stored step as its resumePayload); else the run is
//          finished.
import process from "node:process";

import { createStep } from "@mastra/core/workflows";
import { z } from "zod";

import { PAUSED_AGAIN_EXIT, REFUSED_EXIT, announce, gate, recordEffect, recordResult } from "plugpull-client"; // plugpull
import { ORDER, Order, RUN_ID, Refunded, buildWorkflow, installedVersion, openMastra } from "./workflow.mjs";

const APPROVED = { approved: true };
const PHASES = ["start", "approve", "recover"];

const log = (message) => console.error(`mastra_approval: ${message}`);

const refund = createStep({
  id: "refund",
  inputSchema: Order,
  outputSchema: Refunded,
  resumeSchema: z.object({ approved: z.boolean() }),
  suspendSchema: z.object({ action: z.string(), order_id: z.string(), cents: z.number().int() }),
  execute: async ({ inputData, resumeData, suspend }) => {
    if (resumeData === undefined) return await suspend({ action: "refund", ...inputData });
    if (!resumeData.approved) return { ...inputData, refunded: false };
    await recordEffect("refund"); // plugpull: the side effect, after the approval
    return { ...inputData, refunded: true };
  },
});

function parse(argv) {
  const [phase, ...rest] = argv;
  if (!PHASES.includes(phase) || rest.length > 0) {
    console.error(`usage: approval.mjs {${PHASES.join("|")}}`);
    process.exit(2);
  }
  return { phase };
}

// Mastra's refusals of a resume (node_modules/@mastra/core/dist/chunk-GSQD3QNR.js, Run._resume): the stored run
// is not suspended (already resumed, or finished), or the step named is not a suspended one.
const REFUSALS = [
  /This workflow run was not suspended/,
  /No suspended steps found/,
  /was not suspended\. Available suspended steps/,
];

const approve = (run) => run.resume({ step: "refund", resumeData: APPROVED });

async function main() {
  const args = parse(process.argv.slice(2));
  await announce({ framework: "mastra", version: installedVersion("@mastra/core") }); // plugpull
  const workflow = openMastra(process.env.PLUGPULL_WORKDIR ?? ".", buildWorkflow(refund));
  const stored = args.phase === "start" ? null : await workflow.getWorkflowRunExecutionResult(RUN_ID);
  if (args.phase !== "start" && stored === null) {
    log(`no stored run ${RUN_ID}: nothing to approve or recover`);
    return 1;
  }
  const run = await workflow.createRunAsync({ runId: RUN_ID });
  let result;

  if (args.phase === "start") {
    result = await run.start({ inputData: ORDER });
    if (result.status !== "suspended") {
      log(`start did not suspend for approval (status ${result.status})`);
      return 1;
    }
    log(`suspended for approval: ${JSON.stringify(result.steps.refund.suspendPayload)}`);
    return 0;
  }
  if (args.phase === "approve") {
    await gate(); // plugpull: racing approvers are released together here
    try {
      result = await approve(run);
    } catch (error) {
      if (!REFUSALS.some((refusal) => refusal.test(error.message))) throw error;
      log(`Mastra refused the approval: ${error.message}`);
      return REFUSED_EXIT;
    }
  } else if (stored.status === "suspended") {
    log("an approval is still pending: resuming it with the approval given");
    result = await approve(run);
  } else if (stored.status === "running" || stored.status === "waiting") {
    log(`restarting the run from its snapshot (status ${stored.status})`);
    result = await run.restart();
    if (result.status === "suspended" && result.steps.refund?.status === "suspended") {
      // The killed resume's data is still in the stored step (its resumePayload), but restart() does not pass it on.
      const given = stored.steps.refund?.resumePayload ?? APPROVED;
      log(`the restarted refund step suspended again: resuming it with the approval given (${JSON.stringify(given)})`);
      result = await run.resume({ step: "refund", resumeData: given });
    }
  } else {
    log(`the run already ended (status ${stored.status}): nothing to recover`);
    result = stored;
  }
  if (result.status === "suspended") {
    log(`the run suspended again: ${JSON.stringify(result.suspended)}`);
    return PAUSED_AGAIN_EXIT;
  }
  if (result.status !== "success") {
    log(`the run did not finish: status ${result.status} ${result.error ?? ""}`);
    return 1;
  }
  // The run's outcome as its stored snapshot holds it (the same whichever process finished the run).
  const { answer } = result.result;
  await recordResult({ answer }); // plugpull
  log(`done: ${answer}`);
  return 0;
}

process.exitCode = await main();

// A Mastra workflow refund agent for `plugpull --agent`: the Mastra twin of clients/js/examples/langgraph/agent.mjs.
//
//   node agent.mjs {no-key|run-id} {start|resume}
//   plugpull --agent "node clients/js/examples/mastra/agent.mjs run-id"
//
// A real Mastra workflow (createWorkflow/createStep from @mastra/core/workflows: lookup-order -> refund -> notify,
// workflow.mjs) with Mastra's own LibSQL storage (@mastra/libsql) on $PLUGPULL_WORKDIR. No model: the workflow's
// steps are code, as Mastra workflows are. Refund variants (the refund's idempotency key):
// - no-key: none, so every call is a new refund;
// - run-id: the run id Mastra passes to the step's execute() with the step's id, stable across a restart because
//   the restarted run is the same stored run.
// start:  workflow.createRunAsync({ runId }) then run.start({ inputData }).
// resume: Mastra's own way to continue a run that stopped mid-step, run.restart() ("restarts an active workflow run
//         that lost connection to the server ... from the last active step",
//         https://mastra.ai/reference/v0/workflows/run-methods/restart; new in @mastra/core 0.24.7, CHANGELOG.md in
//         the package: 0.24.6 and older have no way to continue a run that died mid-step). It continues a run whose
//         snapshot says "running" or "waiting" and runs the active step again from its start (Run._restart in
//         node_modules/@mastra/core/dist/chunk-GSQD3QNR.js), even one whose success was saved just before the kill
//         (findings/mastra-kill-mid-tool/witness/restart-after-kill.mjs); it refuses any other run ("This workflow run was not active"), so resume
//         reads the stored status first: a finished run reports its stored result, and a run killed before its first
//         step's snapshot (none, or "pending") has nothing to continue, so resume starts it again from its input, as
//         a correct app does.
// Lines marked `plugpull` are the instrumentation.
import process from "node:process";

import { createStep } from "@mastra/core/workflows";

import { announce, recordEffect, recordResult } from "plugpull-client"; // plugpull
import { ORDER, Order, RUN_ID, Refunded, buildWorkflow, installedVersion, openMastra } from "./workflow.mjs";

const VARIANTS = ["no-key", "run-id"];

const log = (message) => console.error(`mastra_agent: ${message}`);

function parse(argv) {
  const [variant, phase, ...rest] = argv;
  if (!VARIANTS.includes(variant) || !["start", "resume"].includes(phase) || rest.length > 0) {
    console.error(`usage: agent.mjs {${VARIANTS.join("|")}} {start|resume}`);
    process.exit(2);
  }
  return { variant, phase };
}

function makeRefundStep(variant) {
  return createStep({
    id: "refund",
    inputSchema: Order,
    outputSchema: Refunded,
    execute: async ({ inputData, runId }) => {
      const key = variant === "run-id" ? `${runId}/refund` : null;
      await recordEffect("refund", { key }); // plugpull: where the payment API's refund call goes
      return { ...inputData, refunded: true };
    },
  });
}

async function main() {
  const args = parse(process.argv.slice(2));
  await announce({ framework: "mastra", version: installedVersion("@mastra/core") }); // plugpull
  const workflow = openMastra(process.env.PLUGPULL_WORKDIR ?? ".", buildWorkflow(makeRefundStep(args.variant)));
  // Read before createRunAsync, which writes a "pending" snapshot for a run id storage does not hold yet.
  const stored = args.phase === "resume" ? await workflow.getWorkflowRunExecutionResult(RUN_ID) : null;
  const run = await workflow.createRunAsync({ runId: RUN_ID });
  let result;
  if (args.phase === "start" || stored === null || stored.status === "pending") {
    if (args.phase === "resume") log(`no step of the run was saved (${stored?.status ?? "no snapshot"}): starting it again`);
    result = await run.start({ inputData: ORDER });
  } else if (stored.status === "running" || stored.status === "waiting") {
    log(`restarting the run from its snapshot (status ${stored.status})`);
    result = await run.restart();
  } else {
    log(`the run already ended (status ${stored.status}): nothing to continue`);
    result = stored;
  }
  if (result.status !== "success") {
    log(`the run did not finish: status ${result.status} ${result.error ?? ""}`);
    return 1;
  }
  const { answer } = result.result;
  await recordResult({ answer }); // plugpull: the run's outcome, compared with the clean run's
  console.log(answer);
  return 0;
}

process.exitCode = await main();

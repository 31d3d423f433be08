// The Node client against plugpull's real channel server (test/harness.py runs plugpull.channel.Channel).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { after, before, beforeEach, describe, test } from "node:test";

import * as plugpull from "../index.js";
import { agent, PYTHON, startHarness } from "./helpers.mjs";

const groupAlive = (pgid) => {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("outside a run", () => {
  beforeEach(() => {
    delete process.env.PLUGPULL_SOCKET;
    delete process.env.PLUGPULL_STRICT;
  });

  test("recordEffect answers as a fresh provider would, counted in this process", async () => {
    const name = "charge-outside-a-run";
    assert.deepEqual(await plugpull.recordEffect(name, { key: "order-1" }), {
      name,
      key: "order-1",
      new: true,
      count: 1,
    });
    assert.deepEqual(await plugpull.recordEffect(name, { key: "order-1" }), {
      name,
      key: "order-1",
      new: false,
      count: 1,
    });
    assert.deepEqual(await plugpull.recordEffect(name), { name, key: null, new: true, count: 2 });
  });

  test("every other call sends nothing and returns what it would return", async () => {
    assert.equal(await plugpull.recordResult({ answer: "done" }), undefined);
    assert.equal(await plugpull.announce({ framework: "langgraphjs", version: "1.0.0" }), undefined);
    assert.equal(await plugpull.gate(), undefined);
    assert.equal(await plugpull.boundary("model-call", () => 42), 42);
    const session = "outside-a-run";
    await plugpull.callStore("add_items", session, { items: [{ role: "user", content: "hi" }, "two"] });
    assert.deepEqual(await plugpull.callStore("get_items", session, { limit: 1 }), ["two"]);
    assert.equal(await plugpull.callStore("pop_item", session), "two");
    assert.deepEqual(await plugpull.callStore("get_items", session), [{ role: "user", content: "hi" }]);
    await plugpull.callStore("clear_session", session);
    assert.deepEqual(await plugpull.callStore("get_items", session), []);
    assert.equal(await plugpull.waitForCancel(), false);
  });

  test("PLUGPULL_STRICT=1 makes every call outside a run throw NotInRun", async () => {
    process.env.PLUGPULL_STRICT = "1";
    const calls = [
      () => plugpull.recordEffect("charge"),
      () => plugpull.recordResult("done"),
      () => plugpull.announce({ framework: "x" }),
      () => plugpull.gate(),
      () => plugpull.callStore("get_items", "s"),
      () => plugpull.boundary("model-call", () => 1),
    ];
    for (const call of calls) {
      await assert.rejects(call, (err) => err instanceof plugpull.NotInRun && /PLUGPULL_STRICT/.test(err.message));
    }
    process.env.PLUGPULL_STRICT = "0";
    assert.equal((await plugpull.recordEffect("charge-strict-off")).new, true);
  });

  test("bad input is refused before anything is sent", async () => {
    process.env.PLUGPULL_SOCKET = "/nonexistent";
    await assert.rejects(() => plugpull.recordEffect(""), TypeError);
    await assert.rejects(() => plugpull.recordEffect("refund", { key: 7 }), TypeError);
    await assert.rejects(() => plugpull.recordEffect("refund", "call_1"), /options object/);
    for (const value of [{ when: new Date(0) }, Number.NaN, { a: undefined }, [1n], new Map()]) {
      await assert.rejects(() => plugpull.recordResult(value), /recordResult: value must be a JSON value/);
    }
    await assert.rejects(() => plugpull.markBoundary("model-call", "during"), TypeError);
  });

  test("the exit codes and names are the Python client's", () => {
    const code =
      "import json, plugpull.client as c; print(json.dumps([c.REFUSED_EXIT, c.PAUSED_AGAIN_EXIT, c.SOCKET_ENV, " +
      "c.WORKDIR_ENV, c.BOUNDARIES_ENV, c.STRICT_ENV, c.PROTOCOL_VERSION, list(c.EDGES)]))";
    const out = spawnSync(PYTHON, ["-c", code], { encoding: "utf8" });
    assert.equal(out.status, 0, out.stderr);
    assert.deepEqual(JSON.parse(out.stdout), [
      plugpull.REFUSED_EXIT,
      plugpull.PAUSED_AGAIN_EXIT,
      plugpull.SOCKET_ENV,
      plugpull.WORKDIR_ENV,
      plugpull.BOUNDARIES_ENV,
      plugpull.STRICT_ENV,
      plugpull.PROTOCOL_VERSION,
      [...plugpull.EDGES],
    ]);
  });
});

describe("in a run", () => {
  let harness;
  before(async () => {
    harness = await startHarness();
  });
  after(async () => {
    await harness.close();
  });
  beforeEach(async () => {
    process.env.PLUGPULL_SOCKET = harness.socket;
    delete process.env.PLUGPULL_STRICT;
    delete process.env.PLUGPULL_BOUNDARIES;
    await harness.cmd({ cmd: "arm", point: null });
  });

  test("effects reach the provider with this process's pid, main thread, and the provider's key rules", async () => {
    const before = (await harness.state()).calls.length;
    assert.deepEqual(await plugpull.recordEffect("refund-a", { key: "k1" }), {
      name: "refund-a",
      key: "k1",
      new: true,
      count: 1,
    });
    assert.equal((await plugpull.recordEffect("refund-a", { key: "k1" })).new, false);
    assert.equal((await plugpull.recordEffect("refund-b", { key: "k1" })).count, 1); // another name: another effect
    assert.equal((await plugpull.recordEffect("refund-a")).count, 2); // no key: a new effect every call
    const calls = (await harness.state()).calls.slice(before);
    assert.deepEqual(
      calls.map((c) => [c.name, c.key, c.recorded, c.pid, c.main_thread]),
      [
        ["refund-a", "k1", true, process.pid, true],
        ["refund-a", "k1", false, process.pid, true],
        ["refund-b", "k1", true, process.pid, true],
        ["refund-a", null, true, process.pid, true],
      ],
    );
  });

  test("one connection carries a process's calls one after another", async () => {
    await plugpull.announce({ framework: "warm-up" }); // a connection is open and idle now
    const opened = (await harness.state()).connections;
    for (let i = 0; i < 5; i++) await plugpull.recordEffect("sequential", { key: String(i) });
    await plugpull.recordResult("five");
    assert.equal((await harness.state()).connections, opened);
  });

  test("a worker thread's call says it is not the main thread", async () => {
    const { Worker } = await import("node:worker_threads");
    const url = new URL("../index.js", import.meta.url).href;
    const worker = new Worker(
      `import(${JSON.stringify(url)}).then((p) => p.recordEffect("from-worker", { key: "w" })).then(() => process.exit(0))`,
      { eval: true, env: process.env },
    );
    await new Promise((resolve, reject) => worker.on("exit", resolve).on("error", reject));
    const call = (await harness.state()).calls.find((c) => c.name === "from-worker");
    assert.equal(call.main_thread, false);
    assert.equal(call.pid, process.pid);
  });

  test("results and announcements are kept with the caller's pid; every result call is kept", async () => {
    await harness.cmd({ cmd: "phase", phase: "resume" });
    await plugpull.announce({ framework: "langgraphjs", version: "1.0.1", result_ignore: "id" });
    await plugpull.recordResult({ answer: "done", cents: 1999, items: [null, true] });
    await plugpull.recordResult("again");
    const state = await harness.state();
    const mine = state.results.filter((r) => r.phase === "resume");
    assert.deepEqual(
      mine.map((r) => [r.value, r.pid]),
      [
        [{ answer: "done", cents: 1999, items: [null, true] }, process.pid],
        ["again", process.pid],
      ],
    );
    assert.deepEqual(state.announced.at(-1), {
      phase: "resume",
      pid: process.pid,
      framework: "langgraphjs",
      version: "1.0.1",
      result_ignore: "id",
    });
    await harness.cmd({ cmd: "phase", phase: "start" });
  });

  test("a refusal throws PlugpullError and the next call gets a new connection", async () => {
    await assert.rejects(
      () => plugpull.callStore("drop_table", "s"),
      (err) => err instanceof plugpull.PlugpullError && /unknown store method/.test(err.message),
    );
    assert.equal((await plugpull.recordEffect("after-refusal", { key: "x" })).new, true);
  });

  test("the store: its four methods, and a dropped write or ack is ChannelClosed", async () => {
    const s = "session-1";
    assert.equal(await plugpull.callStore("add_items", s, { items: ["a", { role: "user", content: "b" }] }), null);
    assert.deepEqual(await plugpull.callStore("get_items", s, { limit: 1 }), [{ role: "user", content: "b" }]);
    assert.deepEqual(await plugpull.callStore("pop_item", s), { role: "user", content: "b" });
    const writes = (await harness.state()).writes.length;
    await harness.cmd({ cmd: "fault", write: writes + 1, point: "write-lost" });
    await assert.rejects(() => plugpull.callStore("add_items", s, { items: ["lost"] }), plugpull.ChannelClosed);
    await harness.cmd({ cmd: "fault", write: writes + 2, point: "ack-lost" });
    await assert.rejects(() => plugpull.callStore("add_items", s, { items: ["kept"] }), plugpull.ChannelClosed);
    assert.deepEqual(await plugpull.callStore("get_items", s), ["a", "kept"]);
    await plugpull.callStore("clear_session", s);
    assert.deepEqual((await harness.state()).store[s], []);
  });

  test("boundary marks are sent only when PLUGPULL_BOUNDARIES is set; a step that throws marks no after", async () => {
    const marks = async () => (await harness.state()).marks.map((m) => [m.name, m.edge, m.main_thread]);
    const was = (await marks()).length;
    assert.equal(await plugpull.boundary("quiet-step", () => 1), 1);
    assert.equal((await marks()).length, was);
    process.env.PLUGPULL_BOUNDARIES = "1";
    assert.equal(await plugpull.boundary("model-call", async () => "reply"), "reply");
    await assert.rejects(
      plugpull.boundary("model-call", async () => {
        throw new Error("model down");
      }),
      /model down/,
    );
    assert.deepEqual((await marks()).slice(was), [
      ["model-call", "before", true],
      ["model-call", "after", true],
      ["model-call", "before", true],
    ]);
  });

  test("a held effect call never resolves; its connection closes when its process group is SIGKILLed", async () => {
    await harness.cmd({ cmd: "arm", point: "after-effect", hold: ["refund", 1] });
    const child = agent(
      `import { recordEffect } from "plugpull";
       await recordEffect("refund", { key: "call_1" });
       console.log("answered");`,
      { PLUGPULL_SOCKET: harness.socket },
    );
    const held = await harness.cmd({ cmd: "wait_held", timeout: 20 });
    assert.equal(held.name, "refund");
    assert.equal(held.held_at, "after-effect");
    assert.equal(held.recorded, true);
    assert.equal(held.pid, child.pid);
    assert.equal(held.group, child.pid); // the agent leads its own group: the held call came from inside it
    process.kill(-child.pid, "SIGKILL");
    const out = await child.output();
    assert.equal(out.signal, "SIGKILL");
    assert.equal(out.stdout, "");
    assert.equal(await harness.cmd({ cmd: "wait_closed", timeout: 10 }), true);
  });

  test("a child the agent started in a new session does not keep a held call's connection open", async () => {
    await harness.cmd({ cmd: "arm", point: "before-effect", hold: ["refund", 1] });
    const child = agent(
      `import { spawn } from "node:child_process";
       import { announce, recordEffect } from "plugpull";
       await announce({ framework: "fork-test" }); // a connection exists before the child starts
       const helper = spawn("sleep", ["60"], { detached: true, stdio: "ignore" });
       console.log(helper.pid);
       await recordEffect("refund", { key: "call_2" });`,
      { PLUGPULL_SOCKET: harness.socket },
    );
    const held = await harness.cmd({ cmd: "wait_held", timeout: 20 });
    assert.equal(held.recorded, false);
    const helperPid = Number.parseInt(child.text(), 10); // printed before the held call was sent
    assert.ok(helperPid > 0, child.text());
    try {
      process.kill(-child.pid, "SIGKILL");
      await child.output();
      assert.equal(groupAlive(helperPid), true); // the helper outlived the kill, in its own session
      assert.equal(await harness.cmd({ cmd: "wait_closed", timeout: 10 }), true);
    } finally {
      process.kill(-helperPid, "SIGKILL");
    }
  });

  test("a held call does not queue the process's other calls behind it (each call in flight has a connection)", async () => {
    await harness.cmd({ cmd: "arm", point: "after-effect", hold: ["refund", 1] });
    const child = agent(
      `import { recordEffect } from "plugpull";
       const refund = recordEffect("refund", { key: "r" });
       await new Promise((r) => setTimeout(r, 200));
       const email = await recordEffect("send_email", { key: "e" });
       console.log(JSON.stringify(email));
       await refund;`,
      { PLUGPULL_SOCKET: harness.socket },
    );
    await harness.cmd({ cmd: "wait_held", timeout: 20 });
    // The agent prints send_email's answer while refund is still held (wait for the line, not the server's side).
    for (let i = 0; i < 1000 && !child.text().includes("\n"); i++) await new Promise((r) => setTimeout(r, 20));
    const email = (await harness.state()).calls.find((c) => c.name === "send_email" && c.pid === child.pid);
    assert.equal(email?.answered, true);
    assert.equal((await harness.state()).calls.find((c) => c.name === "refund" && c.pid === child.pid).answered, false);
    process.kill(-child.pid, "SIGKILL");
    const out = await child.output();
    assert.deepEqual(JSON.parse(out.stdout), { name: "send_email", key: "e", new: true, count: 1 });
  });

  test("a boundary mark the line kills at is held like an effect call", async () => {
    await harness.cmd({ cmd: "arm_step", kind: "mark", name: "checkpoint-save", n: 2, side: "before" });
    const child = agent(
      `import { boundary } from "plugpull";
       for (let i = 1; i <= 3; i++) await boundary("checkpoint-save", () => console.log("save", i));`,
      { PLUGPULL_SOCKET: harness.socket, PLUGPULL_BOUNDARIES: "1" },
    );
    const held = await harness.cmd({ cmd: "wait_held", timeout: 20 });
    assert.deepEqual([held.kind, held.name, held.edge, held.held_at, held.group], [
      "mark",
      "checkpoint-save",
      "before",
      "before",
      child.pid,
    ]);
    process.kill(-child.pid, "SIGKILL");
    assert.equal((await child.output()).stdout, "save 1\n");
  });

  test("gate holds each racer until all of them wait, then releases them together", async () => {
    await harness.cmd({ cmd: "gate", n: 2 });
    const racer = () =>
      agent(`import { gate } from "plugpull"; await gate(); console.log(Date.now());`, {
        PLUGPULL_SOCKET: harness.socket,
      });
    const first = racer();
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(first.exitCode, null); // still waiting at the line alone
    const second = racer();
    const [a, b] = await Promise.all([first.output(), second.output()]);
    assert.deepEqual([a.code, b.code], [0, 0]);
    const { gate } = await harness.state();
    assert.deepEqual(gate.arrived.sort(), [first.pid, second.pid].sort());
    assert.equal(gate.released_with, 2);
    await harness.cmd({ cmd: "gate", n: 0 });
  });

  test("the Python and the Node client send the same requests for the same calls (docs/protocol.md)", async () => {
    const seen = async (phase) => {
      const s = await harness.state();
      const strip = ({ pid, group, seq, ...rest }) => rest;
      return {
        calls: s.calls.filter((c) => c.phase === phase).map(strip),
        marks: s.marks.filter((m) => m.phase === phase).map(strip),
        results: s.results.filter((r) => r.phase === phase).map(strip),
        announced: s.announced.filter((a) => a.phase === phase).map(strip),
        writes: s.writes.filter((w) => w.phase === phase).map(({ pid, number, ...rest }) => rest),
      };
    };
    const env = { ...process.env, PLUGPULL_SOCKET: harness.socket, PLUGPULL_BOUNDARIES: "1" };
    await harness.cmd({ cmd: "phase", phase: "python" });
    const py = spawnSync(
      PYTHON,
      [
        "-c",
        `from plugpull import boundary, record_effect, record_result
from plugpull.client import announce, call_store, gate
announce(framework="twin", version="1")
with boundary("model-call"):
    record_effect("twin-refund", key="twin-py-k")
record_effect("twin-refund", key="twin-py-k")
record_effect("twin-mail")
call_store("add_items", "twin-py", items=[{"role": "user", "content": "hi"}])
call_store("get_items", "twin-py", limit=None)
gate()
record_result({"answer": "done", "n": [1, 2.5, None, True]})`,
      ],
      { env, encoding: "utf8" },
    );
    assert.equal(py.status, 0, py.stderr);
    await harness.cmd({ cmd: "phase", phase: "node" });
    const js = agent(
      `import { announce, boundary, callStore, gate, recordEffect, recordResult } from "plugpull";
       await announce({ framework: "twin", version: "1" });
       await boundary("model-call", () => recordEffect("twin-refund", { key: "twin-js-k" }));
       await recordEffect("twin-refund", { key: "twin-js-k" });
       await recordEffect("twin-mail");
       await callStore("add_items", "twin-js", { items: [{ role: "user", content: "hi" }] });
       await callStore("get_items", "twin-js", { limit: null });
       await gate();
       await recordResult({ answer: "done", n: [1, 2.5, null, true] });`,
      env,
    );
    assert.equal((await js.output()).code, 0);
    const [p, n] = [await seen("python"), await seen("node")];
    const phaseless = (x) => JSON.parse(JSON.stringify(x).replaceAll('"python"', '"P"').replaceAll('"node"', '"P"'));
    // The sessions' and keys' names differ on purpose (one provider and one store serve both clients).
    const sameShape = (x) =>
      JSON.parse(JSON.stringify(phaseless(x)).replaceAll("twin-py", "twin-S").replaceAll("twin-js", "twin-S"));
    assert.equal(p.calls.length, 3);
    assert.deepEqual(sameShape(n).calls, sameShape(p).calls);
    assert.deepEqual(sameShape(n).marks, sameShape(p).marks);
    assert.deepEqual(sameShape(n).results, sameShape(p).results);
    assert.deepEqual(sameShape(n).announced, sameShape(p).announced);
    assert.deepEqual(sameShape(n).writes, sameShape(p).writes);
    await harness.cmd({ cmd: "phase", phase: "start" });
  });
});

test("the client has no runtime dependencies", async () => {
  const { readFile } = await import("node:fs/promises");
  const pkg = JSON.parse(await readFile(new URL("../package.json", import.meta.url), "utf8"));
  assert.equal(pkg.dependencies, undefined);
  const source = await readFile(new URL("../index.js", import.meta.url), "utf8");
  const imports = [...source.matchAll(/^import .* from "([^"]+)";$/gm)].map((m) => m[1]);
  assert.ok(imports.length > 0);
  assert.ok(imports.every((m) => m.startsWith("node:")), imports.join(", "));
});

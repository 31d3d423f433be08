// Start plugpull's real channel server (test/harness.py) and agents that talk to it.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
export const CLIENT = join(here, "..", "index.js");
// The interpreter with plugpull installed: the pytest wrapper (tests/test_js_client.py) passes its own;
// by hand, `PLUGPULL_PYTHON=.venv/bin/python node --test clients/js/test/`.
export const PYTHON = process.env.PLUGPULL_PYTHON || "python3";

export async function startHarness() {
  const child = spawn(PYTHON, [join(here, "harness.py")], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async () => {
    const { value, done } = await lines.next();
    if (done) throw new Error("the harness exited");
    return JSON.parse(value);
  };
  const { socket } = await next();
  return {
    socket,
    async cmd(command) {
      child.stdin.write(JSON.stringify(command) + "\n");
      return next();
    },
    state() {
      return this.cmd({ cmd: "state" });
    },
    async close() {
      child.stdin.end();
      if (child.exitCode === null) await once(child, "exit");
    },
  };
}

// Run `code` (an ES module that may import CLIENT as "plugpull") in a new Node process of its own process
// group, with the channel's socket in its environment. Resolves to the child; `.output()` awaits its exit.
export function agent(code, env = {}) {
  const source = code.replaceAll('"plugpull"', JSON.stringify(CLIENT));
  const child = spawn(process.execPath, ["--input-type=module", "-e", source], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true, // a new session and group, as plugpull starts an agent's `start`
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  const exited = new Promise((resolve) => child.on("close", (code, signal) => resolve({ code, signal })));
  child.text = () => stdout;
  child.output = async () => ({ ...(await exited), stdout, stderr });
  return child;
}

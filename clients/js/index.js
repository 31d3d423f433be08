// The agent side of plugpull for Node: report effects, results and boundaries to the harness.
//
// The same calls as the Python client (src/plugpull/client.py) over the same wire format (docs/protocol.md):
// a Unix stream socket whose path is in PLUGPULL_SOCKET, one request line of UTF-8 JSON, one reply line.
// Node has no blocking socket API, so every call that talks to the harness is an async function the agent
// awaits: "blocks until the harness answers" is "its promise settles when the harness answers", and at a
// kill point it never settles (the harness SIGKILLs the process group while the call is held). An agent
// must await recordEffect before it does the real work, as a Python tool calls record_effect first.
//
// No runtime dependencies: node:net, node:worker_threads and node:process only.

import net from "node:net";
import process from "node:process";
import { isMainThread } from "node:worker_threads";

export const SOCKET_ENV = "PLUGPULL_SOCKET";
export const WORKDIR_ENV = "PLUGPULL_WORKDIR";
// Set by the every-boundary scenario (and kill-mid-tool's start under --save) only: other runs send no
// boundary marks, so marking a run's steps changes nothing of their timing.
export const BOUNDARIES_ENV = "PLUGPULL_BOUNDARIES";
// Set by a test that must run under plugpull: every call outside a run throws NotInRun.
export const STRICT_ENV = "PLUGPULL_STRICT";
export const PROTOCOL_VERSION = 1;

// resume-after-approval's exit codes besides 0 (docs/agent-protocol.md): the framework refused the
// approval; the run ended paused at an approval again instead of finished.
export const REFUSED_EXIT = 3;
export const PAUSED_AGAIN_EXIT = 5;

export const EDGES = Object.freeze(["before", "after"]);
export const STORE_METHODS = Object.freeze(["get_items", "add_items", "pop_item", "clear_session"]);

/** The harness refused a request or is not there. */
export class PlugpullError extends Error {
  constructor(message) {
    super(message);
    this.name = "PlugpullError";
  }
}

/** Called outside a plugpull run (PLUGPULL_SOCKET unset) with PLUGPULL_STRICT=1. */
export class NotInRun extends PlugpullError {
  constructor(message) {
    super(message);
    this.name = "NotInRun";
  }
}

/** The harness closed the call without an answer (a store fault point: a lost write or a lost ack). */
export class ChannelClosed extends PlugpullError {
  constructor(message) {
    super(message);
    this.name = "ChannelClosed";
  }
}

/** A model request's history a real provider API refuses (HTTP 400), from checkModelRequest. */
export class RequestRejected extends PlugpullError {
  constructor(message) {
    super(message);
    this.name = "RequestRejected";
  }
}

/** PLUGPULL_STRICT is set to anything but "" and "0". */
export function strict() {
  const value = process.env[STRICT_ENV] ?? "";
  return value !== "" && value !== "0";
}

/**
 * Whether this process runs under plugpull (PLUGPULL_SOCKET set). Outside a run every call does nothing
 * and returns what it would return; with PLUGPULL_STRICT=1 it throws NotInRun instead.
 */
export function inRun(call) {
  if (process.env[SOCKET_ENV]) return true;
  if (strict()) {
    throw new NotInRun(
      `plugpull: ${call} called outside a plugpull run (${SOCKET_ENV} is not set and ${STRICT_ENV} is); ` +
        "run the agent through `plugpull --agent`",
    );
  }
  return false;
}

const copy = (value) => JSON.parse(JSON.stringify(value));

// What the provider and the store would answer, kept in this process, for calls outside a run (the
// provider's rules in docs/protocol.md, "Effect semantics"), so instrumented code ships unchanged.
const local = {
  keys: new Map(),
  anonymous: new Map(),
  sessions: new Map(),
  effect(name, key) {
    if (!this.keys.has(name)) this.keys.set(name, new Set());
    const keys = this.keys.get(name);
    let isNew = true;
    if (key === null) this.anonymous.set(name, (this.anonymous.get(name) ?? 0) + 1);
    else {
      isNew = !keys.has(key);
      keys.add(key);
    }
    return { name, key, new: isNew, count: (this.anonymous.get(name) ?? 0) + keys.size };
  },
  store(method, session, args) {
    if (!this.sessions.has(session)) this.sessions.set(session, []);
    const items = this.sessions.get(session);
    if (method === "get_items") {
      const limit = args.limit ?? null;
      return copy(limit === null ? items : limit > 0 ? items.slice(-limit) : []);
    }
    if (method === "add_items") {
      items.push(...copy(args.items ?? []));
      return null;
    }
    if (method === "pop_item") return items.length ? items.pop() : null;
    if (method === "clear_session") {
      items.length = 0;
      return null;
    }
    throw new PlugpullError(`plugpull refused the store call: unknown store method ${JSON.stringify(method)}`);
  },
};

// The connections to the harness. Python keeps one per process and thread, so each thread has one request
// in flight at most; Node runs concurrent calls (two tools awaited with Promise.all) in one thread, so
// here each call in flight has a connection of its own, taken from the idle ones or opened, and given
// back after its reply: one request at a time per connection, as the protocol says, and a held call
// never queues another tool's call behind it. An idle connection is unref'd (it does not keep the
// process alive); one with a call in flight is ref'd, so the process waits for the answer.
// Children started with child_process do not inherit them: libuv opens every socket close-on-exec, so
// a held call's connection closes when this process dies, whatever it started.
const idle = [];
let idlePath = null;

function drop(sock) {
  const i = idle.indexOf(sock);
  if (i >= 0) idle.splice(i, 1);
  sock.destroy();
}

function connect(path) {
  if (idlePath !== path) {
    // another run's socket (a test process running many): its connections are done with
    for (const sock of idle.splice(0)) sock.destroy();
    idlePath = path;
  }
  const reused = idle.pop();
  if (reused) return Promise.resolve(reused);
  return new Promise((resolve, reject) => {
    const sock = net.createConnection({ path });
    const fail = (err) => {
      sock.destroy();
      reject(err);
    };
    sock.once("error", fail);
    sock.once("connect", () => {
      sock.off("error", fail);
      // Errors between requests (the harness went away) are seen by the next request as a closed
      // socket; without a listener an 'error' event would crash the process.
      sock.on("error", () => {});
      sock.on("close", () => {
        const i = idle.indexOf(sock);
        if (i >= 0) idle.splice(i, 1);
      });
      resolve(sock);
    });
  });
}

function exchange(sock, line) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    const done = (fn, value) => {
      sock.off("data", onData);
      sock.off("end", onEnd);
      sock.off("close", onEnd);
      sock.off("error", onError);
      fn(value);
    };
    const onData = (chunk) => {
      chunks.push(chunk);
      if (chunk[chunk.length - 1] === 0x0a) done(resolve, Buffer.concat(chunks));
    };
    const onEnd = () => done(resolve, null);
    const onError = (err) => {
      if (err.code === "ECONNRESET" || err.code === "EPIPE") done(resolve, null);
      else done(reject, err);
    };
    sock.on("data", onData);
    sock.once("end", onEnd);
    sock.once("close", onEnd);
    sock.once("error", onError);
    if (sock.destroyed || sock.readyState !== "open") {
      done(resolve, null);
      return;
    }
    sock.write(line);
  });
}

async function request(payload) {
  const path = process.env[SOCKET_ENV];
  if (!path) {
    throw new NotInRun(
      `plugpull: ${payload.op} called outside a plugpull run (${SOCKET_ENV} is not set); ` +
        "run the agent through `plugpull --agent`",
    );
  }
  const body = JSON.stringify({ v: PROTOCOL_VERSION, ...payload }) + "\n";
  const sock = await connect(path);
  sock.ref();
  let buf;
  try {
    buf = await exchange(sock, body);
  } catch (err) {
    drop(sock);
    throw err;
  }
  if (buf === null) {
    drop(sock); // the harness closed it: a fault point, or the run is over
    throw new ChannelClosed(`plugpull closed the ${payload.op} call without an answer`);
  }
  const reply = JSON.parse(buf.toString("utf8"));
  if (!reply.ok) {
    drop(sock); // the harness closes the connection after a refusal
    throw new PlugpullError(`plugpull refused the ${payload.op} call: ${reply.error}`);
  }
  sock.unref();
  if (process.env[SOCKET_ENV] === path) idle.push(sock);
  else sock.destroy();
  return reply;
}

/**
 * Report one outside action (a charge, a refund, a sent message) to the provider; await it before the
 * real call. Same name and key is one effect however often it is called; key null (or omitted) is a new
 * effect on every call. Resolves with the provider's answer {name, key, new, count}; at a kill point it
 * never resolves (the process group is SIGKILLed while the call is held). Outside a run: the answer a
 * fresh provider would give, counted in this process.
 */
export async function recordEffect(name, options = {}) {
  if (typeof name !== "string" || !name) throw new TypeError("recordEffect: name must be a non-empty string");
  // A key given as the second argument itself (Python's positional habit) would otherwise be read as no key.
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw new TypeError("recordEffect: the second argument is an options object: recordEffect(name, { key })");
  }
  let key = options.key ?? null;
  if (key !== null && typeof key !== "string") throw new TypeError("recordEffect: key must be a string or null");
  if (!inRun("recordEffect")) return local.effect(name, key);
  // Which thread asked: a duplicate made by a worker thread is named under its FAIL line.
  return (await request({ op: "effect", name, key, main_thread: isMainThread })).effect;
}

/** One call to the fake Session store: get_items ({limit}), add_items ({items}), pop_item, clear_session. */
export async function callStore(method, session, args = {}) {
  if (!inRun("callStore")) return local.store(method, String(session), args);
  return (await request({ op: "store", method, session, ...args })).result;
}

/** Wait at plugpull's start line (racing-resumers), then resolve; outside a race it resolves at once. */
export async function gate() {
  if (!inRun("gate")) return;
  await request({ op: "gate" });
}

function jsonProblem(value, path, seen) {
  if (value === null || typeof value === "string" || typeof value === "boolean") return null;
  if (typeof value === "number") return Number.isFinite(value) ? null : `${path} is ${value}`;
  if (typeof value !== "object") return `${path} is a ${typeof value}`;
  if (seen.has(value)) return `${path} is circular`;
  seen.add(value);
  try {
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const problem = jsonProblem(value[i], `${path}[${i}]`, seen);
        if (problem) return problem;
      }
      return null;
    }
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) return `${path} is a ${value.constructor?.name ?? "object"}`;
    for (const [k, v] of Object.entries(value)) {
      const problem = jsonProblem(v, `${path}.${k}`, seen);
      if (problem) return problem;
    }
    return null;
  } finally {
    seen.delete(value);
  }
}

/**
 * Report this run's final outcome (any JSON value: plain objects, arrays, strings, finite numbers,
 * booleans, null), once per finished run. Throws TypeError for anything else, in and outside a run,
 * where JSON.stringify would silently drop or change it (undefined, NaN, a Date, a Map).
 */
export async function recordResult(value) {
  const problem = jsonProblem(value, "$", new Set());
  if (problem) throw new TypeError(`recordResult: value must be a JSON value (${problem})`);
  if (!inRun("recordResult")) return;
  await request({ op: "result", value });
}

/** Tell the harness facts read inside this process: framework, version, result_ignore, run_value... */
export async function announce(info = {}) {
  if (!inRun("announce")) return;
  const fields = {};
  for (const [k, v] of Object.entries(info)) {
    if (typeof v !== "string" && typeof v !== "number") {
      throw new TypeError(`announce: ${k} must be a string or a number`);
    }
    fields[k] = v;
  }
  await request({ op: "announce", ...fields });
}

/**
 * Mark one side of a step of the run ("before" or "after"). Sent only when plugpull asks for marks
 * (PLUGPULL_BOUNDARIES set); at the boundary a line kills at it never resolves.
 */
export async function markBoundary(name, edge) {
  if (typeof name !== "string" || !name) throw new TypeError("boundary: name must be a non-empty string");
  if (!EDGES.includes(edge)) throw new TypeError(`boundary: edge must be one of ${EDGES.join(", ")}`);
  if (!inRun("boundary") || !process.env[BOUNDARIES_ENV]) return;
  await request({ op: "boundary", name, edge, main_thread: isMainThread });
}

/**
 * Mark one step: `const reply = await boundary("model-call", () => model.invoke(messages))`. Marks
 * "before", awaits fn, marks "after" and resolves with fn's value; when fn throws, no "after" (the step
 * did not finish).
 */
export async function boundary(name, fn) {
  if (typeof name !== "string" || !name) throw new TypeError("boundary: name must be a non-empty string");
  if (typeof fn !== "function") throw new TypeError("boundary: fn must be a function");
  await markBoundary(name, "before");
  const value = await fn();
  await markBoundary(name, "after");
  return value;
}

/** Report the history a model call is about to send (neutral messages); throws RequestRejected as a 400 would. */
export async function checkModelRequest(messages) {
  if (!process.env[SOCKET_ENV]) return;
  const { rejected } = await request({ op: "model-request", messages });
  if (rejected) throw new RequestRejected(`400 Bad Request: ${rejected}`);
}

/** Report the conversation the framework saved, read through its own API (cancel-mid-stream's resume). */
export async function recordConversation(messages) {
  if (!process.env[SOCKET_ENV]) return;
  await request({ op: "conversation", messages });
}

/**
 * Resolves true when plugpull tells this run's client to walk away (cancel-mid-stream); false outside a
 * run or when the harness goes away without asking. Await it beside the stream's consumer, then abort
 * the stream (an AbortController) and call recordCancel.
 */
export async function waitForCancel() {
  if (!process.env[SOCKET_ENV]) return false;
  try {
    return Boolean((await request({ op: "cancel-wait" })).cancel);
  } catch (err) {
    if (err instanceof ChannelClosed) return false;
    throw err;
  }
}

/** Report that the cancel landed: how the consumer cancelled and what the user had on screen. */
export async function recordCancel(style, seen) {
  if (!process.env[SOCKET_ENV]) return;
  await request({ op: "cancelled", style, seen });
}

// The sandbox side of code mode: one program per process. Jarvis writes one JSON line ({code}) on stdin;
// this file runs it and speaks JSON lines with Jarvis over stdin/stdout for every tool call it makes.
// Deno runs it with no permissions at all, so the program can reach nothing but these two pipes.
const encoder = new TextEncoder();
const decoder = new TextDecoder();
const stdout = Deno.stdout;
const stdin = Deno.stdin;
const exit = Deno.exit;
const stringify = JSON.stringify;
const parse = JSON.parse;
const CONSOLE_MAX = Number(Deno.args[0] || 65536);
// Kept here, before the program runs: it may replace globals, never these.
const pending = new Map();
let nextId = 1;

async function send(message) {
  const bytes = encoder.encode(stringify(message) + "\n");
  let written = 0;
  while (written < bytes.length) written += await stdout.write(bytes.subarray(written));
}

async function* lines() {
  const buffer = new Uint8Array(1 << 16);
  let carry = "";
  for (;;) {
    const n = await stdin.read(buffer);
    if (n === null) return;
    carry += decoder.decode(buffer.subarray(0, n), { stream: true });
    let at;
    while ((at = carry.indexOf("\n")) >= 0) {
      yield carry.slice(0, at);
      carry = carry.slice(at + 1);
    }
  }
}

let consoleText = "";
let consoleDropped = 0;
function show(value) {
  if (typeof value === "string") return value;
  try {
    return stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
function log(...values) {
  const line = values.map(show).join(" ") + "\n";
  const room = CONSOLE_MAX - consoleText.length;
  if (room <= 0) {
    consoleDropped += line.length;
    return;
  }
  consoleText += line.slice(0, room);
  consoleDropped += Math.max(0, line.length - room);
}
const sandboxConsole = Object.freeze({ log, info: log, warn: log, error: log, debug: log });

function request(message) {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    send({ ...message, id }).catch(reject);
  });
}

const tools = new Proxy(Object.freeze({}), {
  get(_, name) {
    if (typeof name !== "string" || name === "then") return undefined;
    return (args = {}) => request({ t: "call", name, args });
  },
});
// tool_find's arguments as given: Jarvis checks them against tool_find's own schema, as it does a direct call's.
const toolFind = (query, limit) => request({ t: "find", args: { query, limit } });

function where(error) {
  // The program is the data: module; its first line is the wrapper's, so the caller's line is one less.
  const stack = String((error && error.stack) || "");
  const match = stack.match(/data:application\/typescript[^\s)]*:(\d+):(\d+)/);
  return match ? { line: Number(match[1]) - 1, column: Number(match[2]) } : {};
}

async function main() {
  const input = lines();
  const first = await input.next();
  if (first.done) return;
  const { code } = parse(first.value);
  // Replies arrive while the program runs.
  (async () => {
    for await (const line of input) {
      const reply = parse(line);
      const waiting = pending.get(reply.id);
      if (!waiting) continue;
      pending.delete(reply.id);
      if (reply.ok) waiting.resolve(reply.value);
      else waiting.reject(new Error(reply.error));
    }
  })();
  const source = "export default async function (tools, tool_find, console) {\n" + code + "\n}";
  let outcome;
  try {
    const module = await import("data:application/typescript;base64," + toBase64(source));
    delete globalThis.Deno;
    globalThis.console = sandboxConsole;
    const value = await module.default(tools, toolFind, sandboxConsole);
    outcome = { t: "done", ok: true, value: value === undefined ? null : value };
  } catch (error) {
    const name = error && error.name ? error.name : "Error";
    const message = error && error.message !== undefined ? String(error.message) : String(error);
    outcome = { t: "done", ok: false, error: `${name}: ${message}`, ...where(error) };
  }
  outcome.console = consoleText;
  outcome.console_dropped = consoleDropped;
  let text;
  try {
    text = stringify(outcome);
  } catch (error) {
    text = stringify({ t: "done", ok: false, error: `the return value is not JSON: ${error.message}`, console: consoleText });
  }
  const bytes = encoder.encode(text + "\n");
  let written = 0;
  while (written < bytes.length) written += await stdout.write(bytes.subarray(written));
  exit(0);
}

function toBase64(text) {
  const bytes = encoder.encode(text);
  let binary = "";
  for (let i = 0; i < bytes.length; i += 8192) binary += String.fromCharCode(...bytes.subarray(i, i + 8192));
  return btoa(binary);
}

await send({ t: "ready" });
main();

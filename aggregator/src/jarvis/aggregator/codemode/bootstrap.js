// The sandbox side of code mode: one program per process. Jarvis speaks JSON lines with this file over a pair of
// pipes of their own (Deno.args[1] in, Deno.args[2] out), opened here before the program exists and reachable
// from nothing the program holds: its first line is {code}, then this file asks for every tool call the program
// makes. Deno runs it with no permission but those two paths, revoked once they are open; `Deno` is gone before
// the program's text is even loaded, so a program that closes the function it is wrapped in runs its top level
// with no more than its body has. stdout carries only the program's console (Jarvis caps what it reads of it).
const bind = Function.prototype.bind;
const uncurry = bind.bind(Function.prototype.call);
const encoder = new TextEncoder();
const decoder = new TextDecoder();
// Kept here, before the program runs: it may replace globals and prototypes, never these.
const encode = uncurry(TextEncoder.prototype.encode);
const decode = uncurry(TextDecoder.prototype.decode);
const lengthOf = uncurry(Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), "length").get);
const bufferOf = uncurry(Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), "buffer").get);
const U8 = Uint8Array;
const stringify = JSON.stringify;
const ErrorOf = Error;
const parse = JSON.parse;
const mapGet = uncurry(Map.prototype.get);
const mapSet = uncurry(Map.prototype.set);
const mapDelete = uncurry(Map.prototype.delete);
const stringIndexOf = uncurry(String.prototype.indexOf);
const stringIncludes = uncurry(String.prototype.includes);
const stringSplit = uncurry(String.prototype.split);
const regExpExec = uncurry(RegExp.prototype.exec);
const stringSlice = uncurry(String.prototype.slice);
const exit = Deno.exit;
const CONSOLE_MAX = Number(Deno.args[0] || 65536);
const requestsPath = Deno.args[1];
const answersPath = Deno.args[2];
const requests = Deno.openSync(requestsPath, { read: true });
const answers = Deno.openSync(answersPath, { write: true });
Deno.permissions.revokeSync({ name: "read", path: requestsPath });
Deno.permissions.revokeSync({ name: "write", path: answersPath });
const readRequests = bind.call(requests.read, requests);
const writeAnswers = bind.call(answers.writeSync, answers);
const writeConsole = bind.call(Deno.stdout.writeSync, Deno.stdout);
const pending = new Map();
let nextId = 1;

function writeAll(write, bytes) {
  const total = lengthOf(bytes);
  const buffer = bufferOf(bytes);
  let written = 0;
  while (written < total) written += write(new U8(buffer, written, total - written));
}

function send(message) {
  writeAll(writeAnswers, encode(encoder, stringify(message) + "\n"));
}

async function* lines() {
  const buffer = new U8(1 << 16);
  let carry = "";
  for (;;) {
    const n = await readRequests(buffer);
    if (n === null) return;
    carry += decode(decoder, new U8(bufferOf(buffer), 0, n), { stream: true });
    let at;
    while ((at = stringIndexOf(carry, "\n")) >= 0) {
      yield stringSlice(carry, 0, at);
      carry = stringSlice(carry, at + 1);
    }
  }
}

// The console goes to stdout as the program writes it, up to CONSOLE_MAX bytes; past that, only counted.
let consoleBytes = 0;
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
  let line = "";
  for (let i = 0; i < values.length; i++) line += (i ? " " : "") + show(values[i]);
  const bytes = encode(encoder, line + "\n");
  const size = lengthOf(bytes);
  const room = CONSOLE_MAX - consoleBytes;
  const kept = size < room ? size : room > 0 ? room : 0;
  if (kept > 0) writeAll(writeConsole, new U8(bufferOf(bytes), 0, kept));
  consoleBytes += kept;
  consoleDropped += size - kept;
}
const sandboxConsole = Object.freeze({ log, info: log, warn: log, error: log, debug: log });

function request(message) {
  const id = nextId++;
  // Made here, while the program's call is on the stack: a refusal thrown into the program names its line.
  const site = new ErrorOf();
  return new Promise((resolve, reject) => {
    mapSet(pending, id, { resolve, reject, site });
    send({ t: message.t, name: message.name, args: message.args, id });
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

function described(error) {
  // "Name: message" as the program would see it. A program that does not parse is reported by Deno as a TypeError
  // whose message is "SyntaxError: …", then a code frame numbered by the module's lines (one more than the
  // program's) and the data: URL; the caller gets the SyntaxError alone, and where it is from `where`.
  let name = error && error.name ? error.name : "Error";
  let message = error && error.message !== undefined ? String(error.message) : String(error);
  if (stringIncludes(message, "data:application/typescript")) {
    message = stringSplit(message, "\n")[0];
    const inner = regExpExec(/^([A-Z][A-Za-z]*Error): (.*)$/, message);
    if (inner) {
      name = inner[1];
      message = inner[2];
    }
  }
  return `${name}: ${message}`;
}

function toBase64(text) {
  const bytes = encode(encoder, text);
  let binary = "";
  for (let i = 0; i < bytes.length; i += 8192) binary += String.fromCharCode(...bytes.subarray(i, i + 8192));
  return btoa(binary);
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
      const waiting = mapGet(pending, reply.id);
      if (!waiting) continue;
      mapDelete(pending, reply.id);
      if (reply.ok) waiting.resolve(reply.value);
      else {
        waiting.site.message = reply.error;
        waiting.reject(waiting.site);
      }
    }
  })();
  const url = "data:application/typescript;base64," + toBase64(
    "export default async function (tools, tool_find, console) {\n" + code + "\n}",
  );
  // From here on the program's text may run (a module's top level runs as it loads): no Deno, and its console.
  delete globalThis.Deno;
  globalThis.console = sandboxConsole;
  let outcome;
  try {
    const module = await import(url);
    const value = await module.default(tools, toolFind, sandboxConsole);
    outcome = { t: "done", ok: true, value: value === undefined ? null : value };
  } catch (error) {
    outcome = { t: "done", ok: false, error: described(error), ...where(error) };
  }
  let text;
  try {
    text = stringify({ ...outcome, console_bytes: consoleBytes, console_dropped: consoleDropped });
  } catch (error) {
    const error_ = `the return value is not JSON: ${error.message}`;
    text = stringify({ t: "done", ok: false, error: error_, console_bytes: consoleBytes });
  }
  // The console is whole before the answer, which says how many bytes of it to wait for.
  writeAll(writeAnswers, encode(encoder, text + "\n"));
  exit(0);
}

send({ t: "ready" });
main();

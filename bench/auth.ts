/**
 * `deno task bench:auth [--calls 21]`: what a worker function's bearer check costs for hostile
 * input, the figures tests/edge/auth_test.ts leaves out (timing assertions do not belong in tests).
 * Prints two tables with the load average.
 *
 * Header parse: the median time to refuse a normal header (`Bearer xxx…y`) and a crafted one
 * (`Bearer x   …y`, the shape that makes a backtracking regex such as `^Bearer\s+(.+?)\s*$`
 * quadratic) of the same length, in process (`handler.fetch`) and over HTTP (Deno.serve refuses
 * headers above about 400 KB). 4,009 characters are parsed; the larger ones are over the
 * 4,096-character cap and refused unparsed. Crafted / normal near 1 means the crafted shape costs
 * nothing extra.
 *
 * Secret comparison: the median time of `BearerAuth.verify` for the secret, a wrong token of the
 * same length differing in its first or its last character, and a one-character token. Equal
 * times mean the comparison leaks neither the first differing byte nor the length.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { Flow } from "../mod.ts";
import { createWorkerHandler } from "../src/edge/mod.ts";
import { BearerAuth } from "../src/edge/bearer_auth.ts";
import { loadAverage } from "./_machine.ts";
import { markdownTable, median } from "./_stats.ts";

const args = parseArgs({ args: Deno.args, options: { calls: { type: "string", default: "21" } } });
const CALLS = Number(args.values.calls);
if (!Number.isInteger(CALLS) || CALLS < 1) {
  throw new RangeError(`--calls must be a whole number >= 1, got ${args.values.calls}`);
}
/** Verify calls per timed sample of the comparison: one call is below the timer's resolution. */
const VERIFY_BATCH = 2000;

const SECRET = "bench-worker-secret-0123456789abcdef";
const flow = new Flow({ slug: "bench_auth" }).step({ slug: "a" }, () => 1);
// Every request below is refused before the database is touched: the address is never dialled.
await using handler = createWorkerHandler(flow, {
  secret: SECRET,
  connectionString: "postgres://127.0.0.1:1/none",
  edgeRuntime: null,
  env: {},
  logger: () => {},
});
const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, handler.fetch);
const url = `http://127.0.0.1:${server.addr.port}/functions/v1/worker`;

/**
 * Median milliseconds of `CALLS` calls of each request (after one untimed round), taken in turn
 * so that a drift of the machine's load shifts all of them alike; each must be refused.
 */
async function mediansMs(requests: (() => Promise<Response>)[]): Promise<number[]> {
  const times: number[][] = requests.map(() => []);
  for (let i = 0; i <= CALLS; i++) {
    for (const [k, request] of requests.entries()) {
      const started = performance.now();
      const response = await request();
      await response.body?.cancel();
      const elapsed = performance.now() - started;
      if (response.status !== 401) {
        throw new Error(`Cannot measure a refusal: the handler answered ${response.status}`);
      }
      if (i > 0) times[k].push(elapsed);
    }
  }
  return times.map(median);
}

const normal = (length: number) => `Bearer x${"x".repeat(length)}y`;
const crafted = (length: number) => `Bearer x${" ".repeat(length)}y`;
const inProcess = (authorization: string) => () =>
  handler.fetch(new Request(url, { method: "POST", headers: { authorization } }));
const overHttp = (authorization: string) => () =>
  fetch(url, { method: "POST", headers: { authorization } });

console.log(
  `${CALLS} calls per figure (median, after one untimed); load average before: ${await loadAverage()}\n`,
);

const parseRows: string[][] = [];
for (
  const [path, length, call] of [
    ["in process", 4000, inProcess],
    ["in process", 64 * 1024, inProcess],
    ["in process", 512 * 1024, inProcess],
    ["HTTP", 4000, overHttp],
    ["HTTP", 384 * 1024, overHttp],
  ] as const
) {
  const [normalMs, craftedMs] = await mediansMs([call(normal(length)), call(crafted(length))]);
  parseRows.push([
    path,
    (length + 9).toLocaleString("en-US"),
    `${normalMs.toFixed(3)} ms`,
    `${craftedMs.toFixed(3)} ms`,
    (craftedMs / normalMs).toFixed(2),
  ]);
}
await server.shutdown();
console.log("Refusing an Authorization header:\n");
console.log(
  markdownTable(["path", "header characters", "normal", "crafted", "crafted / normal"], parseRows),
);

const auth = new BearerAuth(SECRET);
const wrongFirst = `Bearer ${"X" + SECRET.slice(1)}`;
const wrongLast = `Bearer ${SECRET.slice(0, -1) + "X"}`;
const tokens = [
  ["the secret", `Bearer ${SECRET}`, true],
  ["wrong first character", wrongFirst, false],
  ["wrong last character", wrongLast, false],
  ["one character", "Bearer x", false],
] as const;
// Per-call microseconds of each token, sampled in turn like the header figures.
const samples: number[][] = tokens.map(() => []);
for (let i = 0; i <= CALLS; i++) {
  for (const [k, [label, header, expected]] of tokens.entries()) {
    const started = performance.now();
    for (let j = 0; j < VERIFY_BATCH; j++) {
      if (await auth.verify(header) !== expected) {
        throw new Error(`Cannot measure ${label}: verify did not answer ${expected}`);
      }
    }
    if (i > 0) samples[k].push((performance.now() - started) * 1000 / VERIFY_BATCH);
  }
}
const compareRows = tokens.map(([label], k) => [label, `${median(samples[k]).toFixed(2)} µs`]);
console.log(`\nComparing the token with the secret (${SECRET.length} characters):\n`);
console.log(markdownTable(["token", "verify, median per call"], compareRows));
console.log(`\nload average after: ${await loadAverage()}`);

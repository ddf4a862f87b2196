// `startWorker(flow)` with its options omitted, as a user's script calls it from the root export:
// the connection comes from the environment, in the documented order.
import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";
import { scaled } from "../_support.ts";

const MOD = new URL("../../mod.ts", import.meta.url).href;

/** A user's script: a worker started without options, one run through it, its output printed. */
const SCRIPT = `
import { connect, Flow, startFlow, startWorker, waitForRun } from ${JSON.stringify(MOD)};
const flow = new Flow<{ n: number }>({ slug: "env_math" })
  .step({ slug: "double" }, (input) => input.n * 2);
const worker = await startWorker(flow);
const sql = connect(Deno.env.get("PRODUCER_URL")!);
const runId = await startFlow(sql, flow, { n: 21 });
console.log("output: " + JSON.stringify(await waitForRun(sql, runId, { flow, timeoutMs: ${
  scaled(30_000)
} })));
await worker.stop();
await sql.end();
`;

async function runScript(env: Record<string, string>): Promise<Deno.CommandOutput> {
  const dir = await Deno.makeTempDir({ prefix: "sluice-env-worker-" });
  try {
    const path = `${dir}/worker.ts`;
    await Deno.writeTextFile(path, SCRIPT);
    return await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", path],
      env,
      clearEnv: true,
      stdout: "piped",
      stderr: "piped",
    }).output();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const BASE = { HOME: Deno.env.get("HOME") ?? "/", NO_COLOR: "1", ...denoDir() };

function denoDir(): Record<string, string> {
  const value = Deno.env.get("DENO_DIR");
  return value === undefined ? {} : { DENO_DIR: value };
}

for (const variable of ["SLUICE_DATABASE_URL", "SUPABASE_DB_URL", "DATABASE_URL"]) {
  Deno.test(`startWorker(flow) without options connects through ${variable}`, async () => {
    await using db = await freshDatabase();
    const output = await runScript({ ...BASE, [variable]: db.url, PRODUCER_URL: db.url });
    const stderr = new TextDecoder().decode(output.stderr);
    assert.equal(output.code, 0, stderr);
    // The worker logs JSON lines to stdout too; the script's own line is marked.
    const line = new TextDecoder().decode(output.stdout).split("\n")
      .find((text) => text.startsWith("output: "));
    assert.ok(line, "the script printed no output");
    assert.deepEqual(JSON.parse(line.slice("output: ".length)), { double: 42 });
  });
}

Deno.test("startWorker(flow) prefers SLUICE_DATABASE_URL over DATABASE_URL", async () => {
  await using db = await freshDatabase();
  // DATABASE_URL leads nowhere: a worker that read it first would never connect.
  const output = await runScript({
    ...BASE,
    SLUICE_DATABASE_URL: db.url,
    DATABASE_URL: "postgres://nobody:wrong@127.0.0.1:1/none",
    PRODUCER_URL: db.url,
  });
  assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
});

Deno.test("startWorker(flow) with no connection anywhere names the variables it read", async () => {
  const output = await runScript({ ...BASE, PRODUCER_URL: "postgres://127.0.0.1:1/none" });
  assert.notEqual(output.code, 0);
  assert.match(
    new TextDecoder().decode(output.stderr),
    /give sql \(a postgres\.js client\) or connectionString \(a connection URL\), or set SLUICE_DATABASE_URL, SUPABASE_DB_URL, DATABASE_URL/,
  );
});

import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";

const ROOT = new URL("../../", import.meta.url);

/** Runs `deno task demo` with `env` added; resolves with its exit code and output. */
async function runDemo(
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["task", "demo"],
    cwd: ROOT,
    env: { ...env, NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return { code, stdout: decoder.decode(stdout), stderr: decoder.decode(stderr) };
}

/** The pretty JSON the demo prints after "Run output:". */
function runOutput(stdout: string): unknown {
  const start = stdout.indexOf("Run output:\n");
  assert.ok(start >= 0, `no run output in:\n${stdout}`);
  const json = stdout.slice(start + "Run output:\n".length).split("\n\n")[0];
  return JSON.parse(json);
}

/** What the demo's run ends with, on a server or embedded. */
const RUN_OUTPUT = {
  invoice: {
    customer: "Ada Lovelace",
    items: 18,
    lines: [
      { sku: "notebook", amount: 1350 },
      { sku: "pencil", amount: 960 },
      { sku: "eraser", amount: 240 },
      { sku: "ruler", amount: 300 },
    ],
    subtotal: 2850,
    shipping: 0,
    total: 2850,
  },
};

Deno.test("deno task demo migrates an empty database and runs the example flow to completion", async () => {
  await using db = await freshDatabase({ empty: true });
  const { code, stdout, stderr } = await runDemo({ DATABASE_URL: db.url });
  assert.equal(code, 0, `exit code ${code}\nstdout:\n${stdout}\nstderr:\n${stderr}`);
  assert.deepEqual(runOutput(stdout), RUN_OUTPUT);
  assert.match(stdout, /reserve_stock: attempt 1 failed: Error: inventory service timed out/);
  assert.match(stdout, /express_shipping was skipped/);
  assert.match(stdout, /price ran 4 map tasks/);
  assert.match(stdout, /run completed \| steps 5\/5 resolved \| tasks 7\/7 done/);

  const [{ status }] = await db.sql<{ status: string }[]>`select status from sluice.runs`;
  assert.equal(status, "completed");
  const live = await db.sql`select 1 from sluice.workers where stopped_at is null`;
  assert.equal(live.length, 0, "the demo's workers were not marked stopped");
});

Deno.test("deno task demo stops its throwaway PostgreSQL when interrupted", async () => {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "examples/demo.ts"],
    cwd: ROOT,
    // An empty DATABASE_URL counts as unset: the demo starts its own cluster.
    env: { DATABASE_URL: "", NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  // Interrupt the demo once its cluster is up.
  let stdout = "";
  const decoder = new TextDecoder();
  const reader = child.stdout.getReader();
  let port: number | undefined;
  while (port === undefined) {
    const { value, done } = await reader.read();
    if (done) break;
    stdout += decoder.decode(value, { stream: true });
    const match = stdout.match(/PostgreSQL on port (\d+)/);
    if (match) port = Number(match[1]);
  }
  assert.ok(port !== undefined, `no port announced:\n${stdout}`);
  child.kill("SIGINT");
  reader.releaseLock();
  await child.stdout.cancel();
  const status = await child.status;
  const stderr = await new Response(child.stderr).text();
  assert.equal(status.code, 130, `exit code ${status.code}\nstderr:\n${stderr}`);
  assert.match(stderr, /SIGINT received/);
  await assert.rejects(
    () => Deno.connect({ hostname: "127.0.0.1", port }),
    "the throwaway PostgreSQL still accepts connections",
  );
});

Deno.test("deno task demo with SLUICE_EMBEDDED=1 runs the example flow on the embedded database", async () => {
  // An empty DATABASE_URL counts as unset; the variable forces embedded mode although this
  // machine has server binaries.
  const { code, stdout, stderr } = await runDemo({ DATABASE_URL: "", SLUICE_EMBEDDED: "1" });
  assert.equal(code, 0, `exit code ${code}\nstdout:\n${stdout}\nstderr:\n${stderr}`);
  assert.match(stdout, /Started an embedded PostgreSQL \(PGlite, in this process\)/);
  assert.match(stdout, /Installed sluice: \d+ migrations applied, PGMQ compat/);
  assert.deepEqual(runOutput(stdout), RUN_OUTPUT);
  assert.match(stdout, /reserve_stock: attempt 1 failed: Error: inventory service timed out/);
  assert.match(stdout, /express_shipping was skipped/);
  assert.match(stdout, /run completed \| steps 5\/5 resolved \| tasks 7\/7 done/);
});

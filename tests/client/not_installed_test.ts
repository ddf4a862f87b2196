// A database sluice was never installed in: starting a run, starting a worker and `sluice dev`
// each fail with one line naming the fix (apply the migrations), not the database's
// `schema "sluice" does not exist`.
import assert from "node:assert/strict";
import { join } from "node:path";
import { Flow, SluiceNotInstalledError, startFlow, startWorker } from "../../mod.ts";
import { main } from "../../src/cli/main.ts";
import { freshDatabase } from "../_db.ts";
import { Output } from "../ops/_ops.ts";

const MOD = new URL("../../mod.ts", import.meta.url).href;
const FIX = 'sluice is not installed in this database (schema "sluice" does not exist); apply ' +
  "its migrations with `deno task sluice migrate` (or `supabase migration up` after " +
  "`deno task sluice install`)";

Deno.test("startFlow, startWorker and sluice dev on a database without sluice name the migration to apply", async () => {
  await using db = await freshDatabase({ empty: true });
  const flow = new Flow<{ id: number }>({ slug: "orders" }).step({ slug: "load" }, () => 1);

  const started = await startFlow(db.sql, flow, { id: 1 }).then(() => null, (e: unknown) => e);
  assert.ok(started instanceof SluiceNotInstalledError, String(started));
  assert.equal(started.message, `Cannot start flow "orders": ${FIX}`);
  assert.equal(started.action, 'Cannot start flow "orders"');

  const worker = await startWorker(flow, { connectionString: db.url, logger: () => {} })
    .then(() => null, (e: unknown) => e);
  assert.ok(worker instanceof SluiceNotInstalledError, String(worker));
  assert.equal(worker.message, `Cannot compile flow "orders": ${FIX}`);

  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "sluice-not-installed-" }));
  try {
    await Deno.mkdir(join(dir, "supabase/functions/_shared"), { recursive: true });
    await Deno.writeTextFile(join(dir, "deno.json"), "{}\n");
    await Deno.writeTextFile(
      join(dir, "supabase/functions/_shared/flows.ts"),
      `import { Flow } from ${JSON.stringify(MOD)};\n\n` +
        `export const orders = new Flow({ slug: "orders" }).step({ slug: "load" }, () => 1);\n`,
    );
    const output = new Output();
    const code = await main(["dev", "--config", join(dir, "deno.json")], {
      databaseUrl: db.url,
      signal: new AbortController().signal,
      io: output.io,
    });
    assert.equal(code, 1, output.text);
    assert.deepEqual(output.err, [`Cannot start sluice dev: Cannot compile flow "orders": ${FIX}`]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  const [{ schemas }] = await db.sql`
    select count(*)::int as schemas from pg_namespace where nspname = 'sluice'`;
  assert.equal(schemas, 0, "nothing installed");
});

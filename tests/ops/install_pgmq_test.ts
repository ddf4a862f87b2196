import assert from "node:assert/strict";
import {
  choosePgmqInstall,
  detectPgmq,
  installPgmq,
  PGMQ_COMPAT_SQL_URL,
} from "../../src/migrations/install_pgmq.ts";
import { freshDatabase, installedPgmq } from "../_db.ts";

// Which branch of installPgmq() runs depends on the server: `deno task test` covers the compat
// branch, `SLUICE_TEST_PGMQ=extension deno task test` the extension branch and the guard.
const offersExtension = installedPgmq() === "extension";

async function extensionCount(sql: import("postgres").Sql): Promise<number> {
  const [row] = await sql`select count(*)::int as n from pg_extension where extname = 'pgmq'`;
  return row.n;
}

Deno.test("choosePgmqInstall() prefers the real extension and never installs over an existing PGMQ", () => {
  assert.equal(choosePgmqInstall({ present: false, available: true }), "extension");
  assert.equal(choosePgmqInstall({ present: false, available: false }), "compat");
  assert.equal(choosePgmqInstall({ present: true, available: true }), "present");
  assert.equal(choosePgmqInstall({ present: true, available: false }), "present");
});

Deno.test("installPgmq() creates the extension where the server offers it, else the compat layer", async () => {
  await using db = await freshDatabase({ empty: true });
  assert.deepEqual(await detectPgmq(db.sql), { present: false, available: offersExtension });
  const [listed] = await db
    .sql`select count(*)::int as n from pg_available_extensions where name = 'pgmq'`;
  assert.equal(listed.n, offersExtension ? 1 : 0);

  assert.equal(await installPgmq(db.sql), offersExtension ? "extension" : "compat");
  assert.deepEqual(await detectPgmq(db.sql), { present: true, available: offersExtension });
  assert.equal(await extensionCount(db.sql), offersExtension ? 1 : 0);
  await db.sql`select pgmq.create('jobs')`;
  const [sent] = await db.sql`select * from pgmq.send('jobs', '{"n": 1}'::jsonb)`;
  assert.equal(sent.send, "1");
});

Deno.test("installPgmq() leaves an installed PGMQ untouched", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('kept')`;
  await db.sql`select pgmq.send('kept', '{"n": 1}'::jsonb)`;
  const extensions = await extensionCount(db.sql);
  assert.equal(await installPgmq(db.sql), "present");
  const [queue] = await db.sql`select count(*)::int as n from pgmq.q_kept`;
  assert.equal(queue.n, 1);
  assert.equal(await extensionCount(db.sql), extensions);
});

Deno.test({
  name: "the compat layer refuses to install over the pgmq extension and changes nothing",
  ignore: !offersExtension, // needs a server with the extension: SLUICE_TEST_PGMQ=extension
  async fn() {
    await using db = await freshDatabase();
    await db.sql`select pgmq.create('kept')`;
    const functions = async () => {
      const [row] = await db.sql`
        select count(*)::int as n from pg_proc where pronamespace = 'pgmq'::regnamespace
      `;
      return row.n;
    };
    const before = await functions();
    const compat = await Deno.readTextFile(PGMQ_COMPAT_SQL_URL);
    await assert.rejects(db.sql.unsafe(compat), {
      message: "Cannot install the PGMQ compatibility layer: the pgmq extension is installed",
    });
    assert.equal(await functions(), before);
    assert.equal(await extensionCount(db.sql), 1);
    const [queue] = await db.sql`select count(*)::int as n from pgmq.list_queues()`;
    assert.equal(queue.n, 1);
  },
});

import assert from "node:assert/strict";
import postgres from "postgres";
import { startDevPostgres, startEmbeddedPostgres } from "../../dev/embedded_postgres.ts";

Deno.test("the embedded bridge keeps each connection's extended-protocol exchanges apart", async () => {
  await using pg = await startEmbeddedPostgres();
  // Two pools of several connections; every query has its own text and unnamed statement
  // (Parse/Describe/Flush, then Bind/Execute/Sync), so running one connection's Bind against
  // another's Parse returns another query's row. pglite-socket 0.2.17 does that here.
  const a = postgres(pg.url, { max: 4, prepare: false, onnotice: () => {} });
  const b = postgres(pg.url, { max: 4, prepare: false, onnotice: () => {} });
  try {
    const results = await Promise.all(
      Array.from(
        { length: 200 },
        (_, i) =>
          (i % 2 ? a : b).unsafe(`select $1::int as v, $2::text as s, ${i} as k`, [i, `s${i}`]),
      ),
    );
    assert.deepEqual(
      results.map((rows) => [rows[0].v, rows[0].s, rows[0].k]),
      Array.from({ length: 200 }, (_, i) => [i, `s${i}`, i]),
    );
  } finally {
    await a.end();
    await b.end();
  }
});

Deno.test("the embedded bridge pins the session to a connection for its open transaction", async () => {
  await using pg = await startEmbeddedPostgres();
  const a = postgres(pg.url, { max: 4, onnotice: () => {} });
  const b = postgres(pg.url, { max: 4, onnotice: () => {} });
  try {
    await a`create table counter (n int not null)`;
    await a`insert into counter values (0)`;
    // Read-modify-write transactions from both pools at once: statements of another connection
    // running inside one of them would lose increments or commit its rolled-back writes.
    await Promise.all(Array.from({ length: 40 }, (_, i) =>
      (i % 2 ? a : b).begin(async (tx) => {
        const [{ n }] = await tx<{ n: number }[]>`select n from counter`;
        await tx`update counter set n = ${n + 1}`;
        if (i % 4 === 0) throw new Error("rolled back");
      }).catch((error) => {
        if (error.message !== "rolled back") throw error;
      })));
    const [{ n }] = await b<{ n: number }[]>`select n from counter`;
    assert.equal(n, 30);
  } finally {
    await a.end();
    await b.end();
  }
});

Deno.test("an embedded database with a data directory keeps its data across restarts", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sluice-embedded-" });
  try {
    {
      await using pg = await startEmbeddedPostgres({ dataDir: `${dir}/data` });
      const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
      await sql`create table kept (v text)`;
      await sql`insert into kept values ('still here')`;
      await sql.end();
    }
    await using pg = await startEmbeddedPostgres({ dataDir: `${dir}/data` });
    const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
    try {
      assert.deepEqual([...await sql`select v from kept`], [{ v: "still here" }]);
    } finally {
      await sql.end();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a local run falls back to the embedded database where no server binaries exist", async () => {
  const empty = await Deno.makeTempDir({ prefix: "sluice-no-pg-" });
  try {
    await using db = await startDevPostgres({ server: { path: empty, postgresqlRoot: empty } });
    assert.equal(db.embedded, true);
    const sql = postgres(db.url, { max: 1, onnotice: () => {} });
    try {
      const [{ version }] = await sql<{ version: string }[]>`select version()`;
      assert.match(version, /PGlite/);
    } finally {
      await sql.end();
    }
  } finally {
    await Deno.remove(empty, { recursive: true });
  }
});

/**
 * The payloads `sql.listen` delivers on `channel`; `arrived` resolves once `count` arrived, and
 * rejects after 15 s naming what did arrive (a bound against hanging, not a timing check);
 * `forget()` stops that bound for a collector whose count is never meant to arrive.
 */
function collect(sql: postgres.Sql, channel: string, count: number) {
  const payloads: string[] = [];
  let done!: () => void;
  let timer!: number;
  const arrived = new Promise<void>((resolve, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${count} notifications on ${channel} expected, got ${payloads}`)),
      15_000,
    );
    done = () => {
      clearTimeout(timer);
      resolve();
    };
  });
  const listening = sql.listen(channel, (payload) => {
    payloads.push(payload);
    if (payloads.length === count) done();
  });
  return { payloads, arrived, listening, forget: () => clearTimeout(timer) };
}

Deno.test("the embedded bridge delivers a NOTIFY to the connections that LISTEN on its channel", async () => {
  await using pg = await startEmbeddedPostgres();
  const a = postgres(pg.url, { max: 2, onnotice: () => {} });
  const b = postgres(pg.url, { max: 2, onnotice: () => {} });
  const c = postgres(pg.url, { max: 2, onnotice: () => {} });
  try {
    const onA = collect(a, "orders", 2);
    const onB = collect(b, "orders", 1);
    const other = collect(c, "Other Channel", 1);
    const [, listenB] = await Promise.all([onA.listening, onB.listening, other.listening]);
    // From a third pool, in a transaction and outside one.
    await c.begin((tx) => tx`select pg_notify('orders', 'first')`);
    await onB.arrived;
    // B's UNLISTEN must not end A's subscription, although the session is shared.
    await listenB.unlisten();
    await c`select pg_notify('orders', 'second')`;
    await c`select pg_notify('Other Channel', 'quoted')`;
    await Promise.all([onA.arrived, other.arrived]);
    assert.deepEqual(onA.payloads, ["first", "second"]);
    assert.deepEqual(onB.payloads, ["first"]);
    assert.deepEqual(other.payloads, ["quoted"]);
  } finally {
    await a.end();
    await b.end();
    await c.end();
  }
});

Deno.test("the embedded bridge keeps delivering to a listener after another listener disconnects", async () => {
  await using pg = await startEmbeddedPostgres();
  const a = postgres(pg.url, { max: 1, onnotice: () => {} });
  const b = postgres(pg.url, { max: 1, onnotice: () => {} });
  try {
    const onA = collect(a, "jobs", 1);
    const onB = collect(b, "jobs", 1);
    await Promise.all([onA.listening, onB.listening]);
    onB.forget();
    await b.end();
    await a`select pg_notify('jobs', 'after b left')`;
    await onA.arrived;
    assert.deepEqual(onA.payloads, ["after b left"]);
    assert.deepEqual(onB.payloads, []);
  } finally {
    await a.end();
  }
});

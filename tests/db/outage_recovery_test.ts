// Outage recovery of the pools sluice opens: during a server outage their connections wait at most
// 1 s between connects (postgres.js alone waits up to 20 s, so its statements parked for 10–20 s
// after the server was back), a pool ended while its connections wait opens no session
// afterwards, and a listener session copies none of the pool's reconnect state.
import assert from "node:assert/strict";
import postgres from "postgres";
import { Flow } from "../../src/dsl/flow.ts";
import { startWorker } from "../../src/worker/start_worker.ts";
import { connect } from "../../src/db/connect.ts";
import { RECONNECT_MAX_MS, type ReconnectGate } from "../../src/db/driver/reconnect.ts";
import { subscribeChannel } from "../../src/db/run_listener.ts";
import { isTransientDatabaseError } from "../../src/db/transient_error.ts";
import { waitUntil } from "../_support.ts";
import { startPrivateServer } from "../worker/_private_server.ts";

/** The reconnect gate of a pool that `connect()` opened. */
function gateOf(sql: postgres.Sql): ReconnectGate {
  return (sql.options as unknown as { socket: { gate: ReconnectGate } }).socket.gate;
}

/** Sends `select 1` until one fails: the pool has noticed the outage. */
async function untilFailing(sql: postgres.Sql): Promise<void> {
  await waitUntil(
    () => sql`select 1`.then(() => false, (error) => isTransientDatabaseError(error)),
    "a statement to fail during the outage",
  );
}

/** Sessions of `application` on the server. */
async function sessions(admin: postgres.Sql, application: string): Promise<number> {
  const [{ n }] = await admin<{ n: number }[]>`
    select count(*)::int as n from pg_stat_activity where application_name = ${application}`;
  return n;
}

Deno.test("a connect() pool waits at most 1 s between connects during an outage and serves its next statement within that once the server is back", async () => {
  await using server = await startPrivateServer();
  const sql = connect(server.server.url, { max: 4, applicationName: "outage_pool" });
  try {
    await Promise.all([1, 2, 3, 4].map(() => sql`select pg_sleep(0.05)`));
    await server.stop("immediate");
    await untilFailing(sql);
    const gate = gateOf(sql);
    // Enough failed connects in a row that postgres.js's own backoff would wait 10–20 s.
    const failedBefore = gate.planned.length;
    await waitUntil(async () => {
      await sql`select 1`.catch(() => {});
      return gate.planned.length - failedBefore >= 12;
    }, "12 more connect attempts during the outage");
    assert.ok(
      gate.planned.every((ms) => ms <= RECONNECT_MAX_MS),
      `every planned wait is at most ${RECONNECT_MAX_MS} ms: ${gate.planned.join(", ")}`,
    );
    assert.ok(
      gate.planned.some((ms) => ms >= RECONNECT_MAX_MS / 2),
      `the waits grew with the failures (no connect storm): ${gate.planned.join(", ")}`,
    );
    await server.start();
    // The budget is the longest wait plus a connect, not the 10–20 s of the driver's backoff.
    const started = performance.now();
    await waitUntil(
      () => sql`select 1 as up`.then(() => true, () => false),
      "the pool's first statement after the server is back",
      RECONNECT_MAX_MS * 4,
    );
    const ms = performance.now() - started;
    console.log(`first statement ${Math.round(ms)} ms after the server accepted connections`);
  } finally {
    await sql.end({ timeout: 5 });
  }
});

Deno.test("a connect() pool ended while its connections wait to reconnect ends at once, fails the waiting statement and opens no session afterwards", async () => {
  await using server = await startPrivateServer();
  const application = "outage_ended";
  const sql = connect(server.server.url, { max: 2, applicationName: application });
  await sql`select 1`;
  await server.stop("immediate");
  await untilFailing(sql);
  // Failures in a row make the next connect wait: this statement parks in that wait.
  await waitUntil(async () => {
    await sql`select 1`.catch(() => {});
    return gateOf(sql).planned.at(-1)! >= RECONNECT_MAX_MS / 2;
  }, "a reconnect wait of at least half a second");
  const parked = sql`select 1`.then(() => "answered", (error) => String(error.code));
  // No timeout: the driver alone would wait for the parked connection for as long as it takes.
  await sql.end();
  assert.equal(await parked, "CONNECTION_ENDED");
  await server.start();
  // Nothing can open a session later: the test's sanitizers find no timer left behind.
  assert.equal(await sessions(server.sql, application), 0);
});

Deno.test("a listener session reconnects with its own reconnect state after an outage, telling its watches once", async () => {
  await using server = await startPrivateServer();
  const sql = connect(server.server.url, { max: 2, applicationName: "outage_listener" });
  let interrupts = 0;
  let listening = 0;
  const subscription = subscribeChannel(sql, "outage_listener_channel", {
    onNotify: () => {},
    onInterrupt: () => interrupts++,
    onListening: () => listening++,
  });
  try {
    assert.equal(await subscription.ready, "listening");
    const gate = gateOf(sql);
    const before = gate.planned.length;
    await server.stop("immediate");
    await waitUntil(() => interrupts > 0, "the listener to notice the outage");
    await server.start();
    await waitUntil(() => subscription.listening, "the channel to be LISTENed again", 8000);
    // The listener reconnected through a factory of its own: the idle pool planned no connect.
    assert.deepEqual(gate.planned.slice(before), []);
    // One session was lost, so the watches were told once, not once per failed connect.
    assert.equal(interrupts, 1);
    assert.ok(listening >= 2, "the listener listened again after the outage");
  } finally {
    await subscription.close();
    await sql.end({ timeout: 5 });
  }
});

Deno.test("a postgres() pool of the caller's own, handed to startWorker as sql, serves its next statement within about a second of the server's return", async () => {
  await using server = await startPrivateServer();
  const application = "outage_given";
  const url = new URL(server.server.url);
  url.searchParams.set("application_name", application);
  const sql = postgres(url.href, { max: 2, onnotice: () => {} });
  const flow = new Flow<{ n: number }>({ slug: "outage_given" })
    .step({ slug: "double" }, (input) => input.n * 2);
  const worker = await startWorker(flow, { sql, logger: () => {}, env: {} });
  try {
    await server.stop("immediate");
    await untilFailing(sql);
    // Failures in a row: the driver's own backoff alone would then wait 10–20 s per connect.
    let failures = 0;
    await waitUntil(async () => {
      if (await sql`select 1`.then(() => false, () => true)) failures += 1;
      return failures >= 12;
    }, "12 failed statements during the outage");
    await server.start();
    await waitUntil(
      () => sql`select 1 as up`.then(() => true, () => false),
      "the caller's pool's first statement after the server is back",
      RECONNECT_MAX_MS * 4,
    );
  } finally {
    await worker.stop();
    await sql.end({ timeout: 5 });
  }
});

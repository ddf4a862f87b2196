// watchRun()/waitForRun(): every watch of one pool shares one LISTEN session, which is replaced
// once for all when it is lost or stops answering (issue 27.9).
import assert from "node:assert/strict";
import { waitForRun, watchRun } from "../../src/client/mod.ts";
import { connect } from "../../src/db/connect.ts";
import { freshDatabase } from "../_db.ts";
import { collect, mixedEvents, mixedFlow, MixedRunDriver } from "../_run_events.ts";
import { scaled, waitUntil, within } from "../_support.ts";
import { compileFlow, startFlow } from "../sql/_fixtures.ts";

Deno.test("1,000 concurrent watches of one connect() pool hold the pool's connections and one LISTEN session", async () => {
  await using db = await freshDatabase();
  const pool = connect(db.url, { max: 4, applicationName: "watchers" });
  try {
    const runs: { slug: string; runId: string }[] = [];
    for (let flow = 0; flow < 10; flow++) {
      const slug = `watched_${flow}`;
      await compileFlow(db.sql, mixedFlow(slug));
      runs.push({ slug, runId: await startFlow(db.sql, slug, { tier: "silver" }) });
    }
    const watchers = runs.flatMap(({ runId }) =>
      Array.from({ length: 100 }, () => collect(watchRun(pool, runId)))
    );
    const waits = runs.map(({ runId }) => waitForRun(pool, runId, { timeoutMs: scaled(60_000) }));
    await waitUntil(
      () => watchers.every((watcher) => watcher.events.length >= 2),
      "every watch's replayed start",
      60_000,
    );
    const [{ connections }] = await db.sql<{ connections: number }[]>`
      select count(*)::int as connections from pg_stat_activity
      where application_name = 'watchers'`;
    // The pool's 4 and one shared listener (one session per watch before: 1,010).
    assert.ok(connections <= 5, `${connections} connections for 1,010 watches`);

    for (const { slug } of runs) await new MixedRunDriver(db.sql, slug).finish();
    await within(
      Promise.all(watchers.map((watcher) => watcher.done)),
      "every terminal event",
      30_000,
    );
    for (const [index, watcher] of watchers.entries()) {
      const { runId, slug } = runs[Math.floor(index / 100)];
      assert.deepEqual(
        watcher.events.filter((event) => event.type !== "step:progress"),
        mixedEvents(runId, slug).filter((event) => event.type !== "step:progress"),
      );
    }
    assert.deepEqual(await Promise.all(waits), runs.map(() => ({ flaky: "ok" })));
    // The last watch closes the shared session.
    await waitUntil(async () => {
      const [{ n }] = await db.sql<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity
        where application_name = 'watchers' and (query like 'listen %' or query like '%listener_ping%')`;
      return n === 0;
    }, "the shared listener session closed");
  } finally {
    await pool.end();
  }
});

Deno.test("watchRun() replaces a frozen listener session (SIGSTOP) by its ping and then gets the live events", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, mixedFlow("watched"));
  const runId = await startFlow(db.sql, "watched", { tier: "silver" });
  const pool = connect(db.url, { max: 2, applicationName: "frozen_listener" });
  const listeners = () =>
    db.sql<{ pid: number }[]>`
      select pid from pg_stat_activity
      where application_name = 'frozen_listener' and (query like 'listen %' or query like '%listener_ping%')`;
  try {
    // No periodic resync: only a new LISTEN session can deliver what follows.
    const watcher = collect(watchRun(pool, runId, { resyncIntervalMs: 3_600_000 }));
    await waitUntil(() => watcher.events.length >= 2, "the replayed start");
    const [{ pid }] = await waitUntil(async () => {
      const rows = await listeners();
      return rows.length === 1 ? rows : null;
    }, "the listener session");
    Deno.kill(pid, "SIGSTOP");
    try {
      // A new session LISTENs (the frozen one still counts until it is terminated).
      await waitUntil(async () => {
        const rows = await listeners();
        return rows.some((row) => row.pid !== pid);
      }, "a replacement listener session");
      await new MixedRunDriver(db.sql, "watched").finish();
      await within(watcher.done, "the terminal event over the new session", 5_000);
      assert.deepEqual(
        watcher.events.filter((event) => event.type !== "step:progress"),
        mixedEvents(runId, "watched").filter((event) => event.type !== "step:progress"),
      );
    } finally {
      Deno.kill(pid, "SIGCONT");
      await db.sql`select pg_terminate_backend(${pid})`;
    }
  } finally {
    await pool.end();
  }
});

/** A TCP proxy to the test server that can go down (refusing and resetting) and come back. */
function outageProxy(url: string) {
  const target = new URL(url);
  const conns = new Set<Deno.Conn>();
  let listener: Deno.Listener | null = null;
  let port = 0;
  const pending = new Set<Promise<unknown>>();
  const track = (promise: Promise<unknown>) => {
    const settled = promise.catch(() => {}).finally(() => pending.delete(settled));
    pending.add(settled);
  };
  const accept = async (current: Deno.Listener) => {
    for await (const client of current) {
      try {
        const server = await Deno.connect({
          hostname: target.hostname,
          port: Number(target.port),
        });
        conns.add(client).add(server);
        track(client.readable.pipeTo(server.writable));
        track(server.readable.pipeTo(client.writable));
      } catch {
        client.close();
      }
    }
  };
  const up = () => {
    listener = Deno.listen({ hostname: "127.0.0.1", port });
    port = (listener.addr as Deno.NetAddr).port;
    track(accept(listener));
  };
  up();
  const proxied = new URL(url);
  proxied.hostname = "127.0.0.1";
  proxied.port = String(port);
  return {
    url: proxied.href,
    /** Refuses new connections and cuts every open one. */
    down() {
      listener?.close();
      listener = null;
      for (const conn of conns) {
        try {
          conn.close();
        } catch {
          // Already closed by its peer.
        }
      }
      conns.clear();
    },
    up,
    /** Resolves once every read and write of the connections it carried has ended. */
    async settled() {
      while (pending.size > 0) await Promise.all([...pending]);
    },
  };
}

Deno.test({
  name:
    "waitForRun() and watchRun() ride out a server outage (ECONNREFUSED, cut connections) and resolve",
  async fn() {
    await using db = await freshDatabase();
    const slugs = ["outage_a", "outage_b"];
    const runIds: string[] = [];
    for (const slug of slugs) {
      await compileFlow(db.sql, mixedFlow(slug));
      runIds.push(await startFlow(db.sql, slug, { tier: "silver" }));
    }
    const proxy = outageProxy(db.url);
    const pool = connect(proxy.url, {
      max: 2,
      applicationName: "outage",
      connectTimeoutSeconds: 2,
    });
    try {
      const waits = runIds.map((runId) => waitForRun(pool, runId, { timeoutMs: scaled(60_000) }));
      const watcher = collect(watchRun(pool, runIds[0]));
      await waitUntil(() => watcher.events.length >= 2, "the replayed start");
      await waitUntil(async () => {
        const [{ n }] = await db.sql<{ n: number }[]>`
          select count(*)::int as n from pg_stat_activity
          where application_name = 'outage' and query like 'listen %'`;
        return n === 1;
      }, "the shared listener session");
      proxy.down();
      // While the server is unreachable every read and the listener's reconnects are refused.
      for (const slug of slugs) await new MixedRunDriver(db.sql, slug).finish();
      await new Promise((resolve) => setTimeout(resolve, 1500));
      proxy.up();
      assert.deepEqual(await within(Promise.all(waits), "both waits", 30_000), [
        { flaky: "ok" },
        { flaky: "ok" },
      ]);
      await within(watcher.done, "the watch's terminal event", 5_000);
      assert.equal(watcher.events.at(-1)?.type, "run:completed");
    } finally {
      proxy.down();
      await pool.end({ timeout: 0 });
      await proxy.settled();
    }
  },
});

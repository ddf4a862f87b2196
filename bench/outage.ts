/**
 * `deno task bench:outage [--runs N] [--faults restart,cut] [--cut-ms MS]`: how soon sluice works
 * again after a database outage, from the moment the server accepts connections again.
 *
 * On a throwaway cluster, one worker (its own pool, `connectionString`), one producer (a
 * `connect()` pool starting a run every 20 ms, retrying what fails) and one watcher (`waitForRun`
 * on the producer's pool) all reach the server through a TCP proxy that drops every connection
 * and refuses new ones (ECONNREFUSED, as a restarting server or pooler answers) for the length of
 * each fault:
 *
 * - `restart`: `pg_ctl restart -m immediate` (as after a crash); the server is back when
 *   `pg_ctl` returns (it waits until the server accepts connections);
 * - `cut`: nothing else for `--cut-ms` (default 2000), as a pooler restart or a failover; the
 *   server is back when the proxy listens again.
 *
 * It prints, per fault, p50 / p95 / max over the repetitions of: the first task claimed (its
 * handler started), the first task completed (its run's completion seen by the watcher), the
 * first run started by the producer, each after the server was back; and the connection attempts
 * per second of all three during the outage (load-independent: what the clients send a
 * recovering server; refused ones count), with the load average before and after.
 *
 * @module
 */

import net from "node:net";
import { parseArgs } from "node:util";
import { connect } from "../src/db/connect.ts";
import { Flow } from "../src/dsl/flow.ts";
import { startFlow } from "../src/client/start_flow.ts";
import { waitForRun } from "../src/client/wait_for_run.ts";
import { startWorker } from "../src/worker/mod.ts";
import { benchDatabase } from "./_bench_database.ts";
import { loadAverage } from "./_machine.ts";
import { duration, markdownTable, quantile } from "./_stats.ts";

/**
 * Counts TCP connection attempts of every client in this process (the worker's, the producer's
 * and the watcher's pools), refused ones included: a refused connect is what grows a driver's
 * backoff, and it never reaches a proxy or the server.
 */
function countConnects(): { readonly count: number } {
  const counter = { count: 0 };
  const connect = net.Socket.prototype.connect;
  net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
    counter.count += 1;
    return (connect as (...args: unknown[]) => net.Socket).apply(this, args);
  } as typeof connect;
  return counter;
}

/**
 * A TCP proxy in front of the server that can refuse connections for a while, as a restarting
 * server or a restarting pooler does: while refusing it does not listen, so a connect fails with
 * ECONNREFUSED, and the connections it carried are dropped.
 */
class RefusingProxy {
  #listener: Deno.Listener | undefined;
  readonly #target: { hostname: string; port: number };
  readonly #conns = new Set<Deno.Conn>();
  readonly port: number;

  constructor(targetPort: number) {
    this.#target = { hostname: "127.0.0.1", port: targetPort };
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    this.port = (listener.addr as Deno.NetAddr).port;
    this.#listen(listener);
  }

  /** Drops every connection and refuses new ones until {@linkcode restore}. */
  refuse(): void {
    this.#listener?.close();
    this.#listener = undefined;
    for (const conn of this.#conns) this.#close(conn);
  }

  restore(): void {
    this.#listen(Deno.listen({ hostname: "127.0.0.1", port: this.port }));
  }

  close(): void {
    this.refuse();
  }

  #listen(listener: Deno.Listener): void {
    this.#listener = listener;
    void (async () => {
      try {
        for await (const client of listener) void this.#pipe(client);
      } catch {
        // Closed by refuse().
      }
    })();
  }

  async #pipe(client: Deno.Conn): Promise<void> {
    let server: Deno.Conn;
    try {
      server = await Deno.connect(this.#target);
    } catch {
      this.#close(client);
      return;
    }
    this.#conns.add(client);
    this.#conns.add(server);
    const end = () => {
      this.#close(client);
      this.#close(server);
    };
    client.readable.pipeTo(server.writable).catch(() => {}).finally(end);
    server.readable.pipeTo(client.writable).catch(() => {}).finally(end);
  }

  #close(conn: Deno.Conn): void {
    this.#conns.delete(conn);
    try {
      conn.close();
    } catch {
      // Already closed.
    }
  }
}

/** When something first happened after `since` (ms, performance.now()). */
function firstAfter(times: number[], since: number): number | undefined {
  return times.find((t) => t >= since);
}

/** Resolves once `check()` is defined, polling every 5 ms, or rejects after `ms`. */
async function until<T>(check: () => T | undefined, ms: number, what: string): Promise<T> {
  const deadline = performance.now() + ms;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error(`bench:outage: no ${what} within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      runs: { type: "string", default: "20" },
      faults: { type: "string", default: "restart,cut" },
      "cut-ms": { type: "string", default: "2000" },
    },
  });
  const runs = Number(values.runs);
  const cutMs = Number(values["cut-ms"]);
  const faults = values.faults.split(",");
  for (const fault of faults) {
    if (fault !== "restart" && fault !== "cut") {
      throw new RangeError(`bench:outage: unknown fault ${JSON.stringify(fault)}: restart or cut`);
    }
  }
  if (!Number.isInteger(runs) || runs < 1) {
    throw new RangeError(`bench:outage: --runs must be an integer >= 1, got ${values.runs}`);
  }
  const loadBefore = await loadAverage();
  await using db = await benchDatabase({
    throwaway: true,
    settings: { synchronous_commit: true },
  });
  const cluster = db.cluster!;
  const proxy = new RefusingProxy(cluster.port);
  const connects = countConnects();
  const url = new URL(db.url);
  url.port = String(proxy.port);
  const flow = new Flow<{ n: number }>({ slug: "outage_bench", timeout: 10 })
    .step({ slug: "echo" }, (input) => {
      claims.push(performance.now());
      return input.n;
    });
  const claims: number[] = [];
  const started: number[] = [];
  const completed: number[] = [];
  const worker = await startWorker(flow, {
    connectionString: url.href,
    logger: () => {},
    heartbeatIntervalMs: 1000,
  });
  const sql = connect(url.href, { max: 4, applicationName: "outage-bench-producer" });
  let producing = true;
  let n = 0;
  const producer = (async () => {
    while (producing) {
      try {
        const runId = await startFlow(sql, flow, { n: n++ });
        started.push(performance.now());
        waitForRun(sql, runId, { flow, timeoutMs: 120_000 }).then(
          () => completed.push(performance.now()),
          () => {},
        );
      } catch {
        // Down: the next start tries again.
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  const results = new Map<string, {
    claim: number[];
    complete: number[];
    start: number[];
    connectsPerSecond: number[];
  }>();
  try {
    await until(() => completed[0], 30_000, "first completed run");
    for (const fault of faults) {
      const figures = { claim: [], complete: [], start: [], connectsPerSecond: [] } as {
        claim: number[];
        complete: number[];
        start: number[];
        connectsPerSecond: number[];
      };
      results.set(fault, figures);
      for (let run = 0; run < runs; run++) {
        const down = performance.now();
        const connectsBefore = connects.count;
        proxy.refuse();
        if (fault === "restart") {
          await cluster.control("restart", "immediate");
        } else {
          await new Promise((resolve) => setTimeout(resolve, cutMs));
        }
        proxy.restore();
        const back = performance.now();
        figures.connectsPerSecond.push(
          (connects.count - connectsBefore) / Math.max(0.001, (back - down) / 1000),
        );
        const claim = await until(() => firstAfter(claims, back), 60_000, "claim");
        const complete = await until(() => firstAfter(completed, back), 60_000, "completion");
        const start = await until(() => firstAfter(started, back), 60_000, "start");
        figures.claim.push(claim - back);
        figures.complete.push(complete - back);
        figures.start.push(start - back);
        // Settle between repetitions: the next fault starts from a working system.
        await until(() => firstAfter(completed, performance.now() - 1), 60_000, "steady state");
      }
    }
  } finally {
    producing = false;
    await producer;
    await worker.stop({ graceMs: 2000 });
    await sql.end({ timeout: 5 });
    proxy.close();
  }
  const loadAfter = await loadAverage();
  const row = (label: string, values: number[], format: (v: number) => string) => [
    label,
    format(quantile(values, 0.5)),
    format(quantile(values, 0.95)),
    format(Math.max(...values)),
  ];
  console.log(
    `${db.server}, PGMQ ${db.pgmq}; ${navigator.hardwareConcurrency} CPUs; load average before ` +
      `${loadBefore}, after ${loadAfter}; ${runs} repetitions per fault` +
      (faults.includes("cut") ? `; cut ${cutMs} ms` : ""),
  );
  for (const [fault, figures] of results) {
    console.log(
      `\n${fault === "restart" ? "pg_ctl restart -m immediate" : "connections refused"}:\n`,
    );
    console.log(markdownTable(["after the server is back", "p50", "p95", "max"], [
      row("first task claimed", figures.claim, duration),
      row("first run completed (watcher)", figures.complete, duration),
      row("first run started (producer)", figures.start, duration),
      row(
        "connection attempts/s during the outage",
        figures.connectsPerSecond,
        (v) => v.toFixed(1),
      ),
    ]));
  }
}

if (import.meta.main) await main();

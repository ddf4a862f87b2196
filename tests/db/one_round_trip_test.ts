// The hot-path statements (docs/architecture.md#task-lifecycle-claim-complete-recover) are one
// round trip each: a start, a claim, a completion, a failure and the outcome poll. Counted on the
// wire, through a proxy between the driver and the server that counts the frontend messages
// after which the driver waits for the server: Query (simple protocol), Sync and Flush (extended
// protocol). A parameterized statement is counted too, as the control: with `prepare: false`
// postgres.js sends Parse/Describe/Flush, waits for the parameter types, then Bind/Execute/Sync.
import assert from "node:assert/strict";
import { connect } from "../../src/db/connect.ts";
import { readRunOutcome, startFlowRun } from "../../src/db/client_queries.ts";
import {
  type ClaimResult,
  completeTasks,
  failTask,
  readAndClaim,
  registerWorker,
  trackWorkerFunction,
} from "../../src/db/worker_queries.ts";
import type { Sql } from "../../src/db/driver/postgres.ts";
import { freshDatabase } from "../_db.ts";
import { compileFlow, supportedPairs } from "../sql/_fixtures.ts";

/** A TCP proxy that counts the round trips its clients start. */
function roundTripCounter(target: URL) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let roundTrips = 0;
  const connections: Deno.Conn[] = [];
  const forward = async (client: Deno.Conn) => {
    const server = await Deno.connect({ hostname: target.hostname, port: Number(target.port) });
    connections.push(client, server);
    server.readable.pipeTo(client.writable).catch(() => {});
    let buffer = new Uint8Array(0);
    let started = false;
    try {
      for await (const chunk of client.readable) {
        const joined = new Uint8Array(buffer.length + chunk.length);
        joined.set(buffer);
        joined.set(chunk, buffer.length);
        buffer = joined;
        const view = () => new DataView(buffer.buffer, buffer.byteOffset, buffer.byteLength);
        for (;;) {
          if (!started) {
            // Untyped messages first: SSLRequest, then StartupMessage (protocol 3.0).
            if (buffer.length < 8) break;
            const length = view().getInt32(0);
            if (buffer.length < length) break;
            started = view().getInt32(4) === 196608;
            await server.write(buffer.slice(0, length));
            buffer = buffer.slice(length);
            continue;
          }
          if (buffer.length < 5) break;
          const length = view().getInt32(1) + 1;
          if (buffer.length < length) break;
          const type = String.fromCharCode(buffer[0]);
          if (type === "Q" || type === "S" || type === "H") roundTrips++;
          await server.write(buffer.slice(0, length));
          buffer = buffer.slice(length);
        }
      }
    } catch {
      // The client went away.
    }
  };
  (async () => {
    for await (const client of listener) forward(client);
  })().catch(() => {});
  const url = new URL(target);
  url.hostname = "127.0.0.1";
  url.port = String((listener.addr as Deno.NetAddr).port);
  return {
    url: url.href,
    /** Round trips started by `action`, once every earlier one finished. */
    async count(action: () => Promise<unknown>): Promise<number> {
      const before = roundTrips;
      await action();
      return roundTrips - before;
    },
    close() {
      listener.close();
      for (const connection of connections) {
        try {
          connection.close();
        } catch {
          // Already closed by its peer.
        }
      }
    },
  };
}

Deno.test("a start, a claim, a completion, a failure and an outcome poll are one round trip each", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "trips",
    steps: [{ slug: "a" }, { slug: "b", deps: ["a"], maxAttempts: 2 }],
  });
  const proxy = roundTripCounter(new URL(db.url));
  const sql: Sql = connect(proxy.url, { max: 1 });
  try {
    const workerId = crypto.randomUUID();
    await trackWorkerFunction(sql, "trips_worker");
    await registerWorker(sql, {
      workerId,
      functionName: "trips_worker",
      queue: "trips",
      flowSlug: "trips",
      stepSlug: null,
      flowGeneration: 1,
    });
    const supported = (await supportedPairs(db.sql, "trips")).map((row) => ({ ...row }));
    const claim = () =>
      readAndClaim(sql, {
        queue: "trips",
        visibilityTimeout: 30,
        quantity: 10,
        workerId,
        supported,
        mode: { kind: "read" },
      });

    // The control: a parameterized statement takes two.
    assert.equal(await proxy.count(() => sql`select ${"x"}::text as x`), 2);

    let runId = "";
    assert.equal(
      await proxy.count(async () => {
        runId = await startFlowRun(sql, {
          flowRef: "trips",
          concrete: false,
          inputJson: JSON.stringify({ quote: 'it\'s \\ "quoted"' }),
          runId: undefined,
        });
      }),
      1,
    );
    let claimed: ClaimResult | undefined;
    assert.equal(await proxy.count(async () => (claimed = await claim())), 1);
    const [task] = claimed!.tasks;
    assert.equal(task.stepSlug, "a");
    const token = {
      runId,
      stepSlug: task.stepSlug,
      taskIndex: task.taskIndex,
      attempt: task.attempt,
      workerId,
    };
    assert.equal(
      await proxy.count(() =>
        completeTasks(sql, [{ ...token, outputJson: JSON.stringify({ said: "it's" }) }])
      ),
      1,
    );
    assert.equal(await proxy.count(async () => (claimed = await claim())), 1);
    const [next] = claimed!.tasks;
    assert.equal(next.stepSlug, "b");
    let outcome = "";
    assert.equal(
      await proxy.count(async () => {
        outcome = await failTask(sql, {
          runId,
          stepSlug: next.stepSlug,
          taskIndex: next.taskIndex,
          attempt: next.attempt,
          workerId,
          error: "it's broken \\ here\0",
          retryDelaySeconds: null,
        });
      }),
      1,
    );
    assert.equal(outcome, "retried");
    let status = "";
    assert.equal(
      await proxy.count(async () => (status = (await readRunOutcome(sql, runId))!.status)),
      1,
    );
    assert.equal(status, "started");
  } finally {
    await sql.end({ timeout: 5 });
    proxy.close();
  }
});

// A worker started while its database is down (restarting, failing over: an Edge worker respawned
// at that moment) waits for it with backoff instead of rejecting, up to startupTimeoutMs.
import assert from "node:assert/strict";
import { Flow } from "../../src/dsl/flow.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { isTransientDatabaseError } from "../../src/db/transient_error.ts";
import { startWorker } from "../../src/worker/mod.ts";
import { LogCapture, waitUntil } from "./_helpers.ts";
import { startPrivateServer } from "./_private_server.ts";

Deno.test("startWorker() during an outage waits for the database and then runs work", async () => {
  await using server = await startPrivateServer();
  const flow = new Flow<{ n: number }>({ slug: "startup_outage" })
    .step({ slug: "double" }, (input) => input.n * 2);
  await server.stop("immediate");
  const logs = new LogCapture();
  const starting = startWorker(flow, {
    connectionString: server.server.url,
    logger: logs.sink,
    heartbeatIntervalMs: 200,
  });
  let settled = false;
  starting.then(() => settled = true, () => settled = true);
  // The first failed statement is logged once; startup is still pending then.
  await waitUntil(
    () => logs.find("warn", "database unavailable").length > 0,
    "the outage warning of startup",
  );
  assert.equal(settled, false, "startWorker() waits while the database is down");
  await server.start();
  const worker = await starting;
  try {
    const runId = await startFlow(server.sql, flow, { n: 21 });
    assert.deepEqual(await waitForRun(server.sql, runId, { flow, timeoutMs: 30_000 }), {
      double: 42,
    });
    assert.equal(logs.find("info", "database available again").length, 1);
  } finally {
    await worker.stop();
  }
});

Deno.test("startWorker() with startupTimeoutMs 0 rejects with the connection error while the database is down", async () => {
  await using server = await startPrivateServer();
  const flow = new Flow({ slug: "startup_outage_now" }).step({ slug: "a" }, () => 1);
  await server.stop("immediate");
  await assert.rejects(
    startWorker(flow, {
      connectionString: server.server.url,
      startupTimeoutMs: 0,
      logger: () => {},
    }),
    (error: unknown) => isTransientDatabaseError(error),
  );
  await server.start();
});

Deno.test("startWorker() rejects a negative startupTimeoutMs before touching the database", async () => {
  const flow = new Flow({ slug: "startup_outage_bad" }).step({ slug: "a" }, () => 1);
  await assert.rejects(
    startWorker(flow, {
      connectionString: "postgres://nobody@127.0.0.1:1/x",
      startupTimeoutMs: -1,
    }),
    (error: Error) =>
      error instanceof RangeError &&
      /startupTimeoutMs must be a number >= 0, got -1/.test(error.message),
  );
});

// The same entrypoint as a plain Deno process: no EdgeRuntime, no respawn, stop on signals.
import assert from "node:assert/strict";
import { compileFlow } from "../../src/client/compile_flow.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { Flow } from "../../src/dsl/flow.ts";
import { serveWorker } from "../../src/edge/mod.ts";
import { freshDatabase } from "../_db.ts";
import { lineReader, scaled } from "../_support.ts";
import {
  call,
  countingServer,
  LogCapture,
  SECRET,
  serve,
  testHandler,
  waitUntil,
  workerCounts,
} from "./_helpers.ts";

Deno.test("as a plain process the entrypoint starts at once and stops gracefully on SIGTERM", async () => {
  await using db = await freshDatabase();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("./_local_entrypoint.ts", import.meta.url).pathname],
    env: {
      SLUICE_DATABASE_URL: db.url,
      SLUICE_WORKER_SECRET: SECRET,
      SLUICE_WORKER_START_IMMEDIATELY: "true",
      TEST_FLOW_SLUG: "local_dev",
    },
    stdout: "piped",
    stderr: "null",
  }).spawn();
  try {
    const stdout = lineReader(child.stdout);
    const { port } = JSON.parse((await stdout.next()) ?? "{}");
    // Started without any request; the first answer may still be 202 starting.
    const url = new URL(`http://127.0.0.1:${port}/`);
    const status = await waitUntil(async () => {
      const answer = await call(url);
      return answer.body.status === "running" ? answer : null;
    }, "the worker to run");
    assert.equal(status.status, 200);
    assert.deepEqual(await workerCounts(db, "local-dev"), { started: 1, live: 1 });

    child.kill("SIGTERM");
    const output: string[] = [];
    for (let line = await stdout.next(); line !== null; line = await stdout.next()) {
      output.push(line);
    }
    const { code } = await child.status;
    assert.equal(code, 0, output.join("\n"));
    assert.ok(output.some((line) => line.includes('"message":"worker stopped"')));
    assert.deepEqual(await workerCounts(db, "local-dev"), { started: 1, live: 0 });
  } finally {
    try {
      child.kill("SIGKILL");
    } catch {
      // Already exited.
    }
    await child.status;
  }
});

Deno.test("without EdgeRuntime, beforeunload is not the platform's: the worker keeps running", async () => {
  await using db = await freshDatabase();
  const logs = new LogCapture();
  const flow = new Flow({ slug: "local_inproc" }).step({ slug: "a" }, () => 1);
  await using functionUrl = countingServer();
  const abort = new AbortController();
  const served = serveWorker(flow, {
    port: 0,
    hostname: "127.0.0.1",
    signal: abort.signal,
    handleSignals: false,
    connectionString: db.url,
    secret: SECRET,
    selfUrl: functionUrl.url,
    env: {},
    heartbeatIntervalMs: 100,
    logger: logs.sink,
  });
  try {
    assert.equal(served.handler.onEdge, false);
    const url = new URL(`http://127.0.0.1:${served.addr.port}/`);
    assert.equal((await call(url)).body.status, "running");

    globalThis.dispatchEvent(new Event("beforeunload"));
    // A handler of the event would mark the isolate draining within the dispatch; and a run
    // started afterwards completes: the worker polled on after the event.
    assert.equal(served.handler.status.status, "running");
    const runId = await startFlow(db.sql, flow, {});
    assert.deepEqual(await waitForRun(db.sql, runId, { flow, timeoutMs: scaled(10_000) }), {
      a: 1,
    });
    assert.equal(served.handler.status.status, "running");

    abort.abort();
    await served.finished;
    assert.equal(served.handler.status.status, "stopped");
    assert.equal(functionUrl.requests.length, 0, "stopping a local process requests no successor");
    assert.deepEqual(await workerCounts(db, "local-inproc"), { started: 1, live: 0 });
    assert.equal(logs.find("info", "listening").length, 1);
  } finally {
    await served.shutdown();
  }
});

/** Reads a byte stream line by line; `next()` gives `null` at the end. */
Deno.test("SLUICE_ENVIRONMENT=development lets a worker function recompile a changed flow; production refuses it", async () => {
  await using db = await freshDatabase();
  const logs = new LogCapture();
  await compileFlow(db.sql, new Flow({ slug: "dev_edge" }).step({ slug: "a" }, () => 1));
  const changed = new Flow({ slug: "dev_edge" }).step({ slug: "b" }, () => 2);

  await using production = testHandler(changed, db, logs);
  await using productionServer = serve(production.fetch);
  const refused = await waitUntil(async () => {
    const answer = await call(productionServer.url);
    return answer.body.status === "failed" ? answer : null;
  }, "the production worker to fail");
  assert.match(
    refused.body.error ?? "",
    /FlowShapeMismatchError[\s\S]*SLUICE_ENVIRONMENT=development/,
  );

  await using development = testHandler(changed, db, logs, {
    env: { SLUICE_ENVIRONMENT: "development" },
  });
  await using developmentServer = serve(development.fetch);
  await waitUntil(async () => {
    const answer = await call(developmentServer.url);
    return answer.body.status === "running" ? answer : null;
  }, "the development worker to run");
  const runId = await startFlow(db.sql, changed, {});
  assert.deepEqual(await waitForRun(db.sql, runId, { flow: changed, timeoutMs: scaled(10_000) }), {
    b: 2,
  });
});

Deno.test("serveWorker listens on PORT from the environment and names a bad one", async () => {
  await using db = await freshDatabase();
  const flow = new Flow({ slug: "port_env" }).step({ slug: "a" }, () => 1);
  const port = (() => {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const { port } = listener.addr as Deno.NetAddr;
    listener.close();
    return port;
  })();
  const served = serveWorker(flow, {
    hostname: "127.0.0.1",
    connectionString: db.url,
    secret: SECRET,
    env: { PORT: String(port) },
    handleSignals: false,
    onListen: () => {},
  });
  assert.equal(served.addr.port, port);
  await served[Symbol.asyncDispose]();
  assert.throws(
    () => serveWorker(flow, { connectionString: db.url, secret: SECRET, env: { PORT: "eighty" } }),
    /PORT must be a port number \(0-65535\), got "eighty"/,
  );
});

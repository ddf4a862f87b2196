// Request authorization and configuration errors: nothing starts without the secret.
import assert from "node:assert/strict";
import { Flow } from "../../src/dsl/flow.ts";
import { createWorkerHandler } from "../../src/edge/mod.ts";
import { freshDatabase } from "../_db.ts";
import {
  call,
  LogCapture,
  SECRET,
  serve,
  standInEdgeRuntime,
  testHandler,
  workerCounts,
} from "./_helpers.ts";

Deno.test("requests without the right bearer secret get 401 and start nothing", async () => {
  await using db = await freshDatabase();
  await using edge = standInEdgeRuntime();
  const logs = new LogCapture();
  const flow = new Flow({ slug: "locked" }).step({ slug: "a" }, () => 1);
  await using handler = testHandler(flow, db, logs, { lifecycleEvents: new EventTarget() });
  await using server = serve(handler.fetch);

  for (
    const authorization of [
      null,
      "",
      "Bearer",
      "Bearer wrong",
      `Bearer ${SECRET}x`,
      `Bearer ${SECRET.slice(0, -1)}`,
      `Basic ${btoa(`user:${SECRET}`)}`,
      SECRET,
    ]
  ) {
    const answer = await call(server.url, authorization);
    assert.equal(answer.status, 401, `Authorization: ${JSON.stringify(authorization)}`);
    assert.equal(answer.body.status, undefined, "a refused request learns nothing");
  }

  assert.equal(edge.pending.length, 0);
  assert.equal(handler.status.status, "idle");
  const [{ count }] = await db.sql`select count(*)::int from sluice.worker_functions`;
  assert.equal(count, 0);
  assert.deepEqual(await workerCounts(db, "locked"), { started: 0, live: 0 });

  const accepted = await call(server.url, `bearer  ${SECRET}`);
  assert.equal(accepted.status, 200, "the scheme is case-insensitive");
  assert.equal(accepted.body.status, "running");
});

Deno.test("without a secret every request is refused with a 500 naming the variable to set", async () => {
  await using db = await freshDatabase();
  const logs = new LogCapture();
  const flow = new Flow({ slug: "unset" }).step({ slug: "a" }, () => 1);
  await using handler = createWorkerHandler(flow, {
    connectionString: db.url,
    env: {},
    edgeRuntime: null,
    logger: logs.sink,
  });
  await using server = serve(handler.fetch);

  const answer = await call(server.url, "Bearer anything");
  assert.equal(answer.status, 500);
  assert.match(answer.body.error!, /no secret configured; set SLUICE_WORKER_SECRET/);
  assert.match(logs.find("error")[0].message, /SLUICE_WORKER_SECRET/);
  assert.deepEqual(await workerCounts(db, "unset"), { started: 0, live: 0 });
});

Deno.test("the secret and the database URL come from the environment", async () => {
  await using db = await freshDatabase();
  const flow = new Flow({ slug: "from_env" }).step({ slug: "a" }, () => 1);
  const logs = new LogCapture();
  await using fallback = createWorkerHandler(flow, {
    env: { SUPABASE_SERVICE_ROLE_KEY: "service-role", SUPABASE_DB_URL: db.url },
    edgeRuntime: null,
    logger: logs.sink,
  });
  await using fallbackServer = serve(fallback.fetch);
  assert.equal((await call(fallbackServer.url, "Bearer service-role")).body.status, "running");

  await using dedicated = createWorkerHandler(flow, {
    env: {
      SLUICE_WORKER_SECRET: "dedicated",
      SUPABASE_SERVICE_ROLE_KEY: "service-role",
      SLUICE_DATABASE_URL: db.url,
    },
    edgeRuntime: null,
    logger: logs.sink,
  });
  await using dedicatedServer = serve(dedicated.fetch);
  assert.equal((await call(dedicatedServer.url, "Bearer service-role")).status, 401);
  assert.equal((await call(dedicatedServer.url, "Bearer dedicated")).body.status, "running");
});

Deno.test("without a database URL an authorized request answers 500 failed naming the variables", async () => {
  const flow = new Flow({ slug: "no_db" }).step({ slug: "a" }, () => 1);
  await using handler = createWorkerHandler(flow, {
    secret: SECRET,
    env: {},
    edgeRuntime: null,
    logger: () => {},
  });
  await using server = serve(handler.fetch);

  const answer = await call(server.url);
  assert.equal(answer.status, 500);
  assert.equal(answer.body.status, "failed");
  assert.match(
    answer.body.error!,
    /set SLUICE_DATABASE_URL \(or SUPABASE_DB_URL, or DATABASE_URL\)/,
  );
});

Deno.test("a worker that cannot start answers 500 failed, and the next request tries again", async () => {
  await using db = await freshDatabase();
  const logs = new LogCapture();
  const flow = new Flow({ slug: "blocked" }).step({ slug: "a" }, () => 1);
  // A queue of that name owned by nobody: compilation refuses to adopt it.
  await db.sql`select pgmq.create('blocked')`;
  await using handler = testHandler(flow, db, logs, { edgeRuntime: null });
  await using server = serve(handler.fetch);

  const answer = await call(server.url);
  assert.equal(answer.status, 500);
  assert.equal(answer.body.status, "failed");
  assert.match(answer.body.error!, /blocked/);
  assert.equal(handler.status.status, "failed");

  await db.sql`select pgmq.drop_queue('blocked')`;
  const retried = await call(server.url);
  assert.equal(retried.body.status, "running");
});

Deno.test("option errors are thrown at creation", () => {
  const flow = new Flow({ slug: "opts" }).step({ slug: "a" }, () => 1);
  assert.throws(
    () => createWorkerHandler(flow, { wallClockBudgetMs: -1, env: {}, logger: () => {} }),
    (error: unknown) => error instanceof RangeError && /wallClockBudgetMs/.test(error.message),
  );
  assert.throws(
    () => createWorkerHandler(flow, { drainTimeoutMs: Infinity, env: {}, logger: () => {} }),
    (error: unknown) => error instanceof RangeError && /drainTimeoutMs/.test(error.message),
  );
  assert.throws(
    () => createWorkerHandler(flow, { selfUrl: "not a url", env: {}, logger: () => {} }),
    (error: unknown) => error instanceof TypeError && /selfUrl/.test(error.message),
  );
  // Resolved like startWorker's, before any pool opens; the message names the option.
  const env = { SLUICE_DATABASE_URL: "postgres://127.0.0.1:1/none" };
  assert.throws(
    () => createWorkerHandler(flow, { poolSize: 0, env, logger: () => {} }),
    (error: unknown) =>
      error instanceof RangeError &&
      error.message === 'Cannot create worker handler for "opts": poolSize must be an integer ' +
          ">= 1, got 0",
  );
  assert.throws(
    () => createWorkerHandler(flow, { connectionString: "", env: {}, logger: () => {} }),
    (error: unknown) =>
      error instanceof TypeError &&
      /connectionString must be a non-empty string/.test(error.message),
  );
  // The worker's own settings go through the same resolver at creation, not at the first request.
  assert.throws(
    () => createWorkerHandler(flow, { maxConcurrent: 0, env, logger: () => {} }),
    (error: unknown) =>
      error instanceof RangeError &&
      error.message === 'Cannot create worker handler for "opts": maxConcurrent must be an ' +
          "integer >= 1, got 0",
  );
  assert.throws(
    () => createWorkerHandler(flow, { env: { ...env, SLUICE_ENVIRONMENT: "staging" } }),
    (error: unknown) =>
      error instanceof TypeError &&
      error.message === 'Cannot create worker handler for "opts": SLUICE_ENVIRONMENT must be ' +
          '"production" or "development", got "staging"',
  );
});

Deno.test("an Authorization header over 4096 characters is refused unparsed, even carrying the secret", async () => {
  await using db = await freshDatabase();
  const logs = new LogCapture();
  const flow = new Flow({ slug: "hostile_header" }).step({ slug: "a" }, () => 1);
  await using handler = testHandler(flow, db, logs, { edgeRuntime: null });
  await using server = serve(handler.fetch);
  // The blanks after the scheme are skipped, so padding them shows where parsing stops: at 4096
  // characters the header is parsed and accepted, one blank more and it is refused before any
  // parse, which bounds the work a crafted header can cause whatever the parser does (the time a
  // crafted header costs next to a normal one is measured by `deno task bench:auth`). Inner
  // blanks, because HTTP strips a header value's trailing ones.
  const padded = (length: number) => `Bearer${" ".repeat(length - 6 - SECRET.length)}${SECRET}`;
  const atCap = await call(server.url, padded(4096));
  assert.equal(atCap.status, 200, "a 4096-character header with the secret is accepted");
  assert.equal(atCap.body.status, "running");
  assert.equal(
    (await call(server.url, padded(4097))).status,
    401,
    "a 4097-character header is refused even with the secret",
  );

  // Headers far larger than any secret, in the shape that makes a backtracking regex quadratic:
  // refused, over HTTP (Deno.serve itself refuses headers above about 400 KB) and in process.
  const hostile = (length: number) => `Bearer x${" ".repeat(length)}y`;
  assert.equal((await call(server.url, hostile(384 * 1024))).status, 401);
  for (const authorization of [padded(512 * 1024), hostile(512 * 1024)]) {
    const response = await handler.fetch(
      new Request(server.url, { method: "POST", headers: { authorization } }),
    );
    await response.body?.cancel();
    assert.equal(response.status, 401, `${authorization.length} characters`);
  }
});

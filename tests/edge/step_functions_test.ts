// Worker functions of a step-queued flow: one per step, each starting a step worker on its step's
// queue, named as `deno task gen:functions` names it, and respawning under that name.
import assert from "node:assert/strict";
import { getAlias } from "../../src/deploy/aliases.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { defineDeployedFlow } from "../../src/dsl/deployed_flow.ts";
import { Flow } from "../../src/dsl/flow.ts";
import { withStepQueues } from "../../src/dsl/step_queues.ts";
import { createWorkerHandler, serveWorker } from "../../src/edge/mod.ts";
import { StepSlugError } from "../../src/worker/mod.ts";
import { freshDatabase } from "../_db.ts";
import {
  call,
  countingServer,
  LogCapture,
  SECRET,
  serve,
  standInEdgeRuntime,
  testHandler,
  workerCounts,
} from "./_helpers.ts";
import { scaled } from "../_support.ts";

const digest = withStepQueues(
  new Flow<{ text: string }>({ slug: "edge_digest" })
    .step({ slug: "classify" }, (input) => input.text.includes("?") ? "question" : "comment")
    .step({ slug: "deliver", dependsOn: ["classify"] }, (deps) => `a ${deps.classify}`),
);

Deno.test("one worker function per step: each polls its step's queue under the generated name", async () => {
  await using db = await freshDatabase();
  await using _edge = standInEdgeRuntime();
  const logs = new LogCapture();
  await using selfUrl = countingServer();
  await using classify = testHandler(digest, db, logs, {
    stepSlug: "classify",
    lifecycleEvents: new EventTarget(),
    selfUrl: selfUrl.url,
  });
  await using deliver = testHandler(digest, db, logs, {
    stepSlug: "deliver",
    lifecycleEvents: new EventTarget(),
  });
  assert.equal(classify.functionName, "edge-digest--classify");
  assert.equal(deliver.functionName, "edge-digest--deliver");
  await using classifyServer = serve(classify.fetch);
  await using deliverServer = serve(deliver.fetch);

  const answers = [await call(classifyServer.url), await call(deliverServer.url)];
  assert.deepEqual(
    answers.map(({ status, body }) => [status, body.status, body.functionName, body.queue]),
    [
      [200, "running", "edge-digest--classify", "edge_digest__classify"],
      [200, "running", "edge-digest--deliver", "edge_digest__deliver"],
    ],
  );
  const runId = await startFlow(db.sql, digest, { text: "why?" });
  assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000), flow: digest }), {
    deliver: "a question",
  });
  const rows = await db.sql`
    select function_name, queue_name, step_slug from sluice.workers order by function_name`;
  assert.deepEqual(rows.map((row) => [row.function_name, row.queue_name, row.step_slug]), [
    ["edge-digest--classify", "edge_digest__classify", "classify"],
    ["edge-digest--deliver", "edge_digest__deliver", "deliver"],
  ]);

  // The isolate of one step ends: only that function asks for a successor, under its own name.
  await classify.end();
  assert.equal(selfUrl.requests.length, 1);
  assert.equal(selfUrl.requests[0].authorization, `Bearer ${SECRET}`);
  assert.deepEqual(await workerCounts(db, "edge-digest--classify"), { started: 1, live: 0 });
  assert.deepEqual(await workerCounts(db, "edge-digest--deliver"), { started: 1, live: 1 });
});

Deno.test("createWorkerHandler checks a step-queued flow's stepSlug at creation, listing the valid slugs", () => {
  const options = { secret: SECRET, env: {}, logger: () => {} };
  assert.throws(
    // @ts-expect-error a step-queued flow's function needs a stepSlug
    () => createWorkerHandler(digest, options),
    (error: unknown) =>
      error instanceof StepSlugError && error.reason === "missing" &&
      /give stepSlug, one of "classify", "deliver"/.test(error.message),
  );
  assert.throws(
    // @ts-expect-error "publish" is not a step of the flow
    () => createWorkerHandler(digest, { ...options, stepSlug: "publish" }),
    (error: unknown) =>
      error instanceof StepSlugError && error.reason === "unknown" &&
      error.stepSlug === "publish" &&
      /stepSlug "publish" is not a step of the flow; give one of "classify", "deliver"/.test(
        error.message,
      ),
  );
  assert.throws(
    // @ts-expect-error a plain flow's function takes no stepSlug
    () => createWorkerHandler(digest.flow, { ...options, stepSlug: "classify" }),
    (error: unknown) =>
      error instanceof StepSlugError && error.reason === "not_step_queued" &&
      /stepSlug "classify" is only for step-queued flows/.test(error.message),
  );
  // A JavaScript caller (or a slug known only at run time) passes the type checker: the same
  // checks hold for a deployed step-queued flow and serveWorker.
  const deployed = defineDeployedFlow(digest, { alias: "digest_js" });
  const untyped = { ...options, stepSlug: "clasify" } as unknown as { stepSlug: "classify" };
  assert.throws(
    () => serveWorker(deployed, { ...untyped, port: 0 }),
    (error: unknown) =>
      error instanceof StepSlugError && error.reason === "unknown" &&
      error.stepSlug === "clasify" && error.stepSlugs.join() === "classify,deliver" &&
      /stepSlug "clasify" is not a step of the flow; give one of "classify", "deliver"/.test(
        error.message,
      ),
  );
});

Deno.test('worker functions of a deployed step-queued flow with activate: "on-startup": the last step to start activates the alias', async () => {
  await using db = await freshDatabase();
  await using _edge = standInEdgeRuntime();
  const logs = new LogCapture();
  const deployed = defineDeployedFlow(digest, { alias: "digest" });
  assert.throws(
    // @ts-expect-error not an activation mode
    () => createWorkerHandler(deployed, { stepSlug: "classify", activate: "now", secret: SECRET }),
    /activate must be "on-startup" or "manual", got "now"/,
  );
  const options = { activate: "on-startup", lifecycleEvents: new EventTarget() } as const;
  await using classify = testHandler(deployed, db, logs, { ...options, stepSlug: "classify" });
  await using deliver = testHandler(deployed, db, logs, { ...options, stepSlug: "deliver" });
  // Named and queued after the concrete flow.
  assert.equal(classify.functionName, "edge-digest--classify");
  await using classifyServer = serve(classify.fetch);
  await using deliverServer = serve(deliver.fetch);

  assert.equal((await call(classifyServer.url)).body.status, "running");
  assert.equal(await getAlias(db.sql, "digest"), null, "deliver has no worker yet");
  assert.equal((await call(deliverServer.url)).body.status, "running");
  const alias = await getAlias(db.sql, "digest");
  assert.deepEqual([alias?.flowSlug, alias?.generation], ["edge_digest", 1]);
  assert.deepEqual(
    logs.find("info", "worker started").map((record) => record.fields.alias_activation),
    ["workers_missing", "activated"],
  );

  const runId = await startFlow(db.sql, deployed, { text: "hello" });
  assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000), flow: deployed }), {
    deliver: "a comment",
  });
});

Deno.test("SLUICE_ACTIVATE_ALIAS=on-startup lets a deployed flow's generated functions activate its alias; other flows ignore it", async () => {
  await using db = await freshDatabase();
  await using _edge = standInEdgeRuntime();
  const logs = new LogCapture();
  const deployed = defineDeployedFlow(digest, { alias: "digest_by_env" });
  assert.throws(
    () =>
      createWorkerHandler(deployed, {
        stepSlug: "classify",
        secret: SECRET,
        env: { SLUICE_ACTIVATE_ALIAS: "yes" },
      }),
    /SLUICE_ACTIVATE_ALIAS must be "on-startup" or "manual", got "yes"/,
  );
  // What a generated function passes: no activate option, the project's secrets as env.
  const env = { SLUICE_ACTIVATE_ALIAS: "on-startup" };
  const lifecycle = () => ({ lifecycleEvents: new EventTarget(), env });
  await using classify = testHandler(deployed, db, logs, { ...lifecycle(), stepSlug: "classify" });
  await using deliver = testHandler(deployed, db, logs, { ...lifecycle(), stepSlug: "deliver" });
  // The same secret reaches a plain flow's function too: it has no alias of its own to move.
  const plain = new Flow<{ n: number }>({ slug: "edge_plain_env" }).step({ slug: "a" }, (i) => i.n);
  await using plainHandler = testHandler(plain, db, logs, lifecycle());
  await using classifyServer = serve(classify.fetch);
  await using deliverServer = serve(deliver.fetch);
  await using plainServer = serve(plainHandler.fetch);

  assert.equal((await call(plainServer.url)).body.status, "running");
  assert.equal((await call(classifyServer.url)).body.status, "running");
  assert.equal((await call(deliverServer.url)).body.status, "running");
  const alias = await getAlias(db.sql, "digest_by_env");
  assert.deepEqual([alias?.flowSlug, alias?.generation], ["edge_digest", 1]);
  assert.deepEqual(
    logs.find("info", "worker started").map((record) => record.fields.alias_activation),
    [undefined, "workers_missing", "activated"],
  );
});

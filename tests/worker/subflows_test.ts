// Subflows end to end (docs/subflows.md): a worker completes a subflow's dependency and computes
// the child input; the child run starts in that completion's transaction; the parent step waits
// in the database (no task) until the child's final transaction completes it.
import assert from "node:assert/strict";
import { defineDeployedFlow, Flow, withStepQueues } from "../../mod.ts";
import { activateAlias } from "../../src/deploy/aliases.ts";
import { startWorker } from "../../src/worker/mod.ts";
import { cancelRun } from "../../src/client/cancel_run.ts";
import { retryRun } from "../../src/client/retry_run.ts";
import { RunFailedError } from "../../src/client/errors.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import { testWorker, uniqueSlug, waitUntil } from "./_helpers.ts";
import { scaled } from "../_support.ts";

interface RunRow {
  run_id: string;
  flow_slug: string;
  status: string;
  parent_run_id: string | null;
  parent_step_slug: string | null;
  parent_task_index: number | null;
  depth: number;
  error_message: string | null;
}

async function children(db: TestDatabase, parent: string): Promise<RunRow[]> {
  return await db.sql<RunRow[]>`
    select r.run_id, r.flow_slug, r.status, r.parent_run_id, r.parent_step_slug,
      r.parent_task_index, r.depth, r.error_message
    from sluice.runs r where r.parent_run_id = ${parent}
    order by r.parent_step_slug, r.parent_task_index`;
}

async function stepState(db: TestDatabase, runId: string, step: string) {
  const [row] = await db.sql<{ status: string; tasks: number; error_message: string | null }[]>`
    select ss.status, ss.error_message,
      (select count(*)::integer from sluice.step_tasks t
        where t.run_id = ss.run_id and t.step_slug = ss.step_slug) as tasks
    from sluice.step_states ss where ss.run_id = ${runId} and ss.step_slug = ${step}`;
  return row;
}

Deno.test("subflow: parent -> child -> grandchild; each child records its parent; outputs are the children's", async () => {
  await using db = await freshDatabase();
  const grandchild = new Flow<{ n: number }>({ slug: uniqueSlug("grand") })
    .step({ slug: "square" }, (input) => input.n * input.n);
  const child = new Flow<{ n: number }>({ slug: uniqueSlug("child") })
    .step({ slug: "plus" }, (input) => ({ n: input.n + 1 }))
    .subflow({ slug: "deeper", dependsOn: ["plus"], flow: grandchild, input: (deps) => deps.plus });
  const parent = new Flow<{ n: number }>({ slug: uniqueSlug("parent") })
    .step({ slug: "load" }, (input) => input)
    .subflow({ slug: "sub", dependsOn: ["load"], flow: child, input: (deps) => deps.load })
    .step({ slug: "done", dependsOn: ["sub"] }, (deps) => deps.sub.deeper.square + 1);
  await using _g = await testWorker(grandchild, db);
  await using _c = await testWorker(child, db);
  await using _p = await testWorker(parent, db);

  const runId = await startFlow(db.sql, parent, { n: 2 });
  assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(20_000), flow: parent }), {
    done: 10,
  });
  const [kid] = await children(db, runId);
  assert.deepEqual(
    [kid.flow_slug, kid.status, kid.parent_step_slug, kid.parent_task_index, kid.depth],
    [child.slug, "completed", "sub", 0, 1],
  );
  const [grand] = await children(db, kid.run_id);
  assert.deepEqual([grand.flow_slug, grand.status, grand.depth], [grandchild.slug, "completed", 2]);
  const [out] = await db.sql<{ output: unknown }[]>`
    select ss.output from sluice.step_states ss where ss.run_id = ${runId} and ss.step_slug = 'sub'`;
  assert.deepEqual(out.output, { deeper: { square: 9 } });
  // The subflow step never held a task.
  assert.equal((await stepState(db, runId, "sub")).tasks, 0);
});

Deno.test("mapSubflow: one child per element, the output in element order, an empty array completes at once", async () => {
  await using db = await freshDatabase();
  const child = new Flow<{ i: number }>({ slug: uniqueSlug("item") })
    .step({ slug: "twice" }, async (input) => {
      // Later elements finish first: the output order is the elements', not the completions'.
      await new Promise((resolve) => setTimeout(resolve, (10 - input.i) * 5));
      return input.i * 2;
    });
  const parent = new Flow<{ count: number }>({ slug: uniqueSlug("fan") })
    .step({ slug: "load" }, (input) => Array.from({ length: input.count }, (_, i) => ({ i })))
    .mapSubflow({ slug: "items", dependsOn: ["load"], flow: child, input: (deps) => deps.load })
    .step({ slug: "sum", dependsOn: ["items"] }, (deps) => deps.items.map((o) => o.twice));
  await using _c = await testWorker(child, db, { maxConcurrent: 10 });
  await using _p = await testWorker(parent, db);

  const runId = await startFlow(db.sql, parent, { count: 10 });
  assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(20_000), flow: parent }), {
    sum: [0, 2, 4, 6, 8, 10, 12, 14, 16, 18],
  });
  const kids = await children(db, runId);
  assert.deepEqual(kids.map((k) => k.parent_task_index), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);

  const empty = await startFlow(db.sql, parent, { count: 0 });
  assert.deepEqual(await waitForRun(db.sql, empty, { timeoutMs: scaled(20_000), flow: parent }), {
    sum: [],
  });
  assert.equal((await children(db, empty)).length, 0);
});

Deno.test("subflow: a failed child fails the parent step; retrying the parent retries only the failed child", async () => {
  await using db = await freshDatabase();
  let failing = true;
  let okRuns = 0;
  const child = new Flow<{ i: number }>({ slug: uniqueSlug("flaky"), maxAttempts: 1 })
    .step({ slug: "work" }, (input) => {
      if (input.i === 1 && failing) throw new Error("element 1 broke");
      okRuns++;
      return input.i;
    });
  const parent = new Flow<{ count: number }>({ slug: uniqueSlug("host") })
    .step({ slug: "load" }, (input) => Array.from({ length: input.count }, (_, i) => ({ i })))
    .mapSubflow({ slug: "items", dependsOn: ["load"], flow: child, input: (deps) => deps.load });
  await using _c = await testWorker(child, db);
  await using _p = await testWorker(parent, db);

  const runId = await startFlow(db.sql, parent, { count: 3 });
  const failure = await waitForRun(db.sql, runId, { timeoutMs: scaled(20_000), flow: parent })
    .then(() => null, (error) => error);
  assert.ok(failure instanceof RunFailedError, String(failure));
  assert.match(failure.errorMessage, /index 1\) of subflow step "items" failed: .*element 1 broke/);
  const step = await stepState(db, runId, "items");
  assert.equal(step.status, "failed");
  const kids = await children(db, runId);
  assert.equal(kids.length, 3);
  assert.equal(kids[1].status, "failed");
  // A sibling still running when element 1 failed was cancelled with the parent.
  for (const k of [kids[0], kids[2]]) assert.ok(["completed", "cancelled"].includes(k.status));

  failing = false;
  const before = okRuns;
  const retried = await retryRun(db.sql, runId);
  assert.equal(retried.outcome, "retried");
  assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(20_000), flow: parent }), {
    items: [{ work: 0 }, { work: 1 }, { work: 2 }],
  });
  // The same three children, no new one; only those that had not completed ran again.
  const after = await children(db, runId);
  assert.deepEqual(after.map((k) => k.run_id), kids.map((k) => k.run_id));
  const rerun = kids.filter((k) => k.status !== "completed").length;
  assert.equal(okRuns - before, rerun);
});

Deno.test("subflow: cancelling the parent cancels its live descendants; cancelling a child alone fails the parent step", async () => {
  await using db = await freshDatabase();
  const gate = new Flow<{ id: string }>({ slug: uniqueSlug("gate") })
    .step({ slug: "start" }, (input) => input)
    .waitForSignal({ slug: "open", dependsOn: ["start"], key: (deps) => `gate:${deps.start.id}` });
  const middle = new Flow<{ id: string }>({ slug: uniqueSlug("middle") })
    .step({ slug: "pass" }, (input) => input)
    .subflow({ slug: "inner", dependsOn: ["pass"], flow: gate, input: (deps) => deps.pass });
  const parent = new Flow<{ id: string }>({ slug: uniqueSlug("top") })
    .step({ slug: "load" }, (input) => input)
    .subflow({ slug: "outer", dependsOn: ["load"], flow: middle, input: (deps) => deps.load });
  await using _g = await testWorker(gate, db);
  await using _m = await testWorker(middle, db);
  await using _p = await testWorker(parent, db);

  const grandchildWaiting = async (runId: string) => {
    let grand: RunRow | undefined;
    await waitUntil(async () => {
      const [kid] = await children(db, runId);
      if (kid === undefined) return false;
      [grand] = await children(db, kid.run_id);
      return grand !== undefined &&
        (await stepState(db, grand.run_id, "open")).status === "waiting";
    }, "grandchild waiting");
    return grand!;
  };

  const first = await startFlow(db.sql, parent, { id: "a" });
  const grand = await grandchildWaiting(first);
  assert.equal((await stepState(db, first, "outer")).status, "waiting");
  await cancelRun(db.sql, first, { reason: "stop it" });
  const [kid] = await children(db, first);
  const [g] = await children(db, kid.run_id);
  assert.deepEqual([kid.status, g.status, g.run_id], ["cancelled", "cancelled", grand.run_id]);

  const second = await startFlow(db.sql, parent, { id: "b" });
  const grand2 = await grandchildWaiting(second);
  await cancelRun(db.sql, grand2.run_id, { reason: "not needed" });
  const failure = await waitForRun(db.sql, second, { timeoutMs: scaled(20_000), flow: parent })
    .then(() => null, (error) => error);
  assert.ok(failure instanceof RunFailedError, String(failure));
  assert.match(
    failure.errorMessage,
    /of subflow step "outer" failed: .*of subflow step "inner" was cancelled: not needed/,
  );
  const [kid2] = await children(db, second);
  assert.equal(kid2.status, "failed");
});

Deno.test("compile: a subflow whose child is not compiled is refused, naming the child", async () => {
  await using db = await freshDatabase();
  const child = new Flow<{ n: number }>({ slug: uniqueSlug("absent") })
    .step({ slug: "x" }, (input) => input.n);
  const parent = new Flow<{ n: number }>({ slug: uniqueSlug("needs") })
    .step({ slug: "load" }, (input) => input)
    .subflow({ slug: "sub", dependsOn: ["load"], flow: child, input: (deps) => deps.load });
  const error = await startWorker(parent, { connectionString: db.url, env: {} }).then(
    async (handle) => {
      await handle.stop();
      return null;
    },
    (e) => e,
  );
  assert.ok(error instanceof Error, String(error));
  assert.match(
    error.message,
    new RegExp(`subflow step "sub" starts the flow "${child.slug}", which is not compiled`),
  );
});

Deno.test("subflow by alias: a child on step queues under a parent on a flow queue; after the alias moves, new children run the new version", async () => {
  await using db = await freshDatabase();
  const v1 = new Flow<{ seat: string }>({ slug: uniqueSlug("invite") })
    .step({ slug: "send" }, (input) => `v1:${input.seat}`);
  const v2 = withStepQueues(
    new Flow<{ seat: string }>({ slug: `${v1.slug}_v2` })
      .step({ slug: "send" }, (input) => `v2:${input.seat}`),
  );
  const invite = defineDeployedFlow(v2, { alias: v1.slug });
  const parent = new Flow<{ seat: string }>({ slug: uniqueSlug("onboard") })
    .step({ slug: "load" }, (input) => input)
    .subflow({ slug: "invite", dependsOn: ["load"], flow: invite, input: (deps) => deps.load })
    .step({ slug: "done", dependsOn: ["invite"] }, (deps) => deps.invite.send);
  await using _v1 = await testWorker(v1, db);
  await using _v2 = await testWorker(invite, db, { stepSlug: "send" });
  await using _p = await testWorker(parent, db);

  const before = await startFlow(db.sql, parent, { seat: "a" });
  assert.deepEqual(await waitForRun(db.sql, before, { timeoutMs: scaled(20_000), flow: parent }), {
    done: "v1:a",
  });
  assert.equal(await activateAlias(db.sql, v1.slug, `${v1.slug}_v2`, { expectedGeneration: 1 }), 2);
  const after = await startFlow(db.sql, parent, { seat: "b" });
  assert.deepEqual(await waitForRun(db.sql, after, { timeoutMs: scaled(20_000), flow: parent }), {
    done: "v2:b",
  });
  const [[first], [second]] = [await children(db, before), await children(db, after)];
  assert.deepEqual([first.flow_slug, second.flow_slug], [v1.slug, `${v1.slug}_v2`]);
  const [via] = await db.sql<{ started_via: string }[]>`
    select started_via from sluice.runs where run_id = ${second.run_id}`;
  assert.equal(via.started_via, v1.slug);
});

Deno.test("subflow: a failing grandchild fails the tree; retrying the root re-runs only the grandchild's failed step", async () => {
  await using db = await freshDatabase();
  const ran: string[] = [];
  let broken = true;
  const grandchild = new Flow<{ n: number }>({ slug: uniqueSlug("leaf"), maxAttempts: 1 })
    .step({ slug: "prep" }, (input) => {
      ran.push("leaf.prep");
      return input.n;
    })
    .step({ slug: "risky", dependsOn: ["prep"] }, (deps) => {
      ran.push("leaf.risky");
      if (broken) throw new Error("leaf broke");
      return deps.prep * 3;
    });
  const child = new Flow<{ n: number }>({ slug: uniqueSlug("mid") })
    .step({ slug: "pass" }, (input) => {
      ran.push("mid.pass");
      return input;
    })
    .subflow({ slug: "leaf", dependsOn: ["pass"], flow: grandchild, input: (deps) => deps.pass });
  const root = new Flow<{ n: number }>({ slug: uniqueSlug("root") })
    .step({ slug: "load" }, (input) => {
      ran.push("root.load");
      return input;
    })
    .subflow({ slug: "mid", dependsOn: ["load"], flow: child, input: (deps) => deps.load })
    .step({ slug: "done", dependsOn: ["mid"] }, (deps) => deps.mid.leaf.risky);
  await using _g = await testWorker(grandchild, db);
  await using _c = await testWorker(child, db);
  await using _r = await testWorker(root, db);

  const runId = await startFlow(db.sql, root, { n: 5 });
  const failure = await waitForRun(db.sql, runId, { timeoutMs: scaled(20_000), flow: root })
    .then(() => null, (error) => error);
  assert.ok(failure instanceof RunFailedError, String(failure));
  assert.match(
    failure.errorMessage,
    /subflow step "mid" failed: .*subflow step "leaf" failed: .*leaf broke/,
  );
  const [mid] = await children(db, runId);
  const [leaf] = await children(db, mid.run_id);
  assert.deepEqual([mid.status, leaf.status], ["failed", "failed"]);
  assert.deepEqual(ran, ["root.load", "mid.pass", "leaf.prep", "leaf.risky"]);

  broken = false;
  await retryRun(db.sql, runId);
  assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(20_000), flow: root }), {
    done: 15,
  });
  assert.deepEqual(ran, ["root.load", "mid.pass", "leaf.prep", "leaf.risky", "leaf.risky"]);
  // The same child and grandchild, each retried once.
  const [midAfter] = await children(db, runId);
  const [leafAfter] = await children(db, mid.run_id);
  assert.deepEqual([midAfter.run_id, leafAfter.run_id], [mid.run_id, leaf.run_id]);
  const retries = await db.sql<{ retry_count: number }[]>`
    select retry_count from sluice.runs where run_id in (${runId}, ${mid.run_id}, ${leaf.run_id})`;
  assert.deepEqual(retries.map((r) => r.retry_count), [1, 1, 1]);
});

Deno.test("subflow: a skipped dependency skips the subflow, which starts no child", async () => {
  await using db = await freshDatabase();
  const child = new Flow<{ n: number }>({ slug: uniqueSlug("never") })
    .step({ slug: "x" }, (input) => input.n);
  const parent = new Flow<{ go: boolean; n: number }>({ slug: uniqueSlug("maybe") })
    .step({ slug: "load", if: { go: true } }, (input) => ({ n: input.n }))
    .subflow({ slug: "sub", dependsOn: ["load"], flow: child, input: (deps) => deps.load })
    .step({ slug: "done", dependsOn: ["sub"] }, (deps) => deps.sub?.x ?? "skipped");
  await using _c = await testWorker(child, db);
  await using _p = await testWorker(parent, db);
  const runId = await startFlow(db.sql, parent, { go: false, n: 1 });
  assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(20_000), flow: parent }), {
    done: "skipped",
  });
  assert.equal((await stepState(db, runId, "sub")).status, "skipped");
  assert.equal((await children(db, runId)).length, 0);
});

Deno.test("subflow: the dependency's worker computes the child input; a map input that is not an array, or a child input that is not JSON, fails that attempt", async () => {
  await using db = await freshDatabase();
  const child = new Flow<{ seat: string }>({ slug: uniqueSlug("seat") })
    .step({ slug: "send" }, (input) => input.seat);
  const notArray = new Flow<number>({ slug: uniqueSlug("not_array"), maxAttempts: 1 })
    .step({ slug: "n" }, (input) => input)
    .mapSubflow({ slug: "many", dependsOn: ["n"], flow: child, input: () => ({}) as never });
  const notJson = new Flow<number>({ slug: uniqueSlug("not_json"), maxAttempts: 1 })
    .step({ slug: "n" }, (input) => input)
    .subflow({
      slug: "one",
      dependsOn: ["n"],
      flow: child,
      input: () => ({ seat: NaN as never }),
    });
  await using _c = await testWorker(child, db);
  await using _a = await testWorker(notArray, db);
  await using _j = await testWorker(notJson, db);
  for (
    const [flow, message] of [
      [notArray, /map subflow step "many" must return an array of child inputs, got object/],
      [notJson, /Cannot start the child of subflow step "one"/],
    ] as const
  ) {
    const runId = await startFlow(db.sql, flow.slug, 1);
    const failure = await waitForRun(db.sql, runId, { timeoutMs: scaled(20_000) })
      .then(() => null, (error) => error);
    assert.ok(failure instanceof RunFailedError, String(failure));
    assert.match(failure.errorMessage, message);
    assert.equal(failure.stepSlug, "n");
    assert.equal((await children(db, runId)).length, 0);
  }
});

Deno.test("subflow: a child's sleep, released by the heartbeat's sweep, completes the child and then its parent step", async () => {
  await using db = await freshDatabase();
  const child = new Flow<{ n: number }>({ slug: uniqueSlug("napper") })
    .step({ slug: "before" }, (input) => input.n)
    .sleep({ slug: "nap", dependsOn: ["before"] }, () => ({ seconds: 1 }))
    .step({ slug: "after", dependsOn: ["nap"] }, () => "rested");
  const parent = new Flow<{ n: number }>({ slug: uniqueSlug("waker") })
    .step({ slug: "load" }, (input) => input)
    .subflow({ slug: "sub", dependsOn: ["load"], flow: child, input: (deps) => deps.load });
  await using _c = await testWorker(child, db);
  await using _p = await testWorker(parent, db);
  const runId = await startFlow(db.sql, parent, { n: 1 });
  assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(20_000), flow: parent }), {
    sub: { after: "rested" },
  });
  const [kid] = await children(db, runId);
  const [nap] = await db.sql<{ status: string }[]>`
    select status from sluice.step_states where run_id = ${kid.run_id} and step_slug = 'nap'`;
  assert.equal(nap.status, "completed");
});

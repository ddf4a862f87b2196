// Failed attempts: backoff, RetryAfterError (valid and invalid delays), refused results.
import assert from "node:assert/strict";
import { Flow } from "../../src/dsl/flow.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { RunFailedError } from "../../src/client/errors.ts";
import { RetryAfterError } from "../../src/worker/mod.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import { testWorker, waitUntil } from "./_helpers.ts";
import { scaled } from "../_support.ts";

/** The task's row and how far in the future its message is hidden (seconds, DB clock). */
async function taskState(db: TestDatabase, runId: string, queue: string) {
  const [row] = await db.sql.unsafe(
    `select t.status, t.attempts_count, t.error_message,
       extract(epoch from (q.vt - clock_timestamp()))::float8 as hidden_for
     from sluice.step_tasks t
     left join pgmq.q_${queue} q on q.msg_id = t.message_id
     where t.run_id = $1`,
    [runId],
  );
  return row as unknown as {
    status: string;
    attempts_count: number;
    error_message: string | null;
    hidden_for: number | null;
  };
}

Deno.test("a failing handler is retried with exponential backoff until it succeeds", async () => {
  await using db = await freshDatabase();
  // Attempt times on the database clock: the backoff is measured where it is applied.
  const attemptTimes: number[] = [];
  const flow = new Flow<{ failTimes: number }>({ slug: "flaky", maxAttempts: 3, baseDelay: 1 })
    .step({ slug: "call" }, async (input, ctx) => {
      const [{ now }] = await ctx.sql`select extract(epoch from clock_timestamp())::float8 as now`;
      attemptTimes.push(now);
      if (ctx.attempt <= input.failTimes) throw new Error(`boom on attempt ${ctx.attempt}`);
      return { attempt: ctx.attempt };
    });
  await using _worker = await testWorker(flow, db, { pollIntervalMs: 50 });

  const runId = await startFlow(db.sql, flow, { failTimes: 2 });
  const output = await waitForRun(db.sql, runId, { timeoutMs: scaled(15_000), flow });

  assert.deepEqual(output, { call: { attempt: 3 } });
  assert.equal(attemptTimes.length, 3);
  // base_delay * 2^(attempt - 1): 1 s after the first failure, 2 s after the second. A lower bound
  // by construction (an attempt reads the clock before its failure hides the message, the next
  // one after the message became visible); the 50 ms of tolerance is slack only.
  assert.ok(
    attemptTimes[1] - attemptTimes[0] >= 0.95,
    `first retry after ${attemptTimes[1] - attemptTimes[0]} s`,
  );
  assert.ok(
    attemptTimes[2] - attemptTimes[1] >= 1.95,
    `second retry after ${attemptTimes[2] - attemptTimes[1]} s`,
  );
  const state = await taskState(db, runId, "flaky");
  assert.equal(state.status, "completed");
  assert.equal(state.attempts_count, 3);
});

Deno.test("a handler failing every attempt fails the run with its error message and stack", async () => {
  await using db = await freshDatabase();
  let calls = 0;
  const flow = new Flow<{ secret: string }>({ slug: "doomed", maxAttempts: 2, baseDelay: 1 })
    .step({ slug: "call" }, function failingHandler() {
      calls++;
      throw new TypeError("upstream said no", { cause: new Error("HTTP 503") });
    });
  await using worker = await testWorker(flow, db, { pollIntervalMs: 50 });

  const runId = await startFlow(db.sql, flow, { secret: "s3cr3t-input" });
  const error = await waitForRun(db.sql, runId, { timeoutMs: scaled(15_000) }).catch((e) => e);

  assert.ok(error instanceof RunFailedError);
  assert.equal(error.stepSlug, "call");
  assert.match(error.errorMessage, /TypeError: upstream said no/);
  assert.match(error.errorMessage, /at failingHandler/);
  assert.match(error.errorMessage, /Caused by Error: HTTP 503/);
  assert.ok(!error.errorMessage.includes("s3cr3t-input"));
  assert.doesNotMatch(error.errorMessage, /_task_executor\.ts/, "worker frames are dropped");
  assert.equal(calls, 2);
  assert.ok(!worker.logs.text().includes("s3cr3t-input"), "inputs are never logged");
});

Deno.test("RetryAfterError sets the next attempt's delay instead of the backoff", async () => {
  await using db = await freshDatabase();
  const flow = new Flow<{ delay: number }>({ slug: "retry_after", maxAttempts: 3, baseDelay: 1 })
    .step({ slug: "call" }, (input, ctx) => {
      if (ctx.attempt === 1) {
        throw new RetryAfterError(input.delay, { cause: new Error("rate limited") });
      }
      return ctx.attempt;
    });
  await using _worker = await testWorker(flow, db, { pollIntervalMs: 50 });

  // A long delay: the message stays hidden for it (the backoff would have been 1 s).
  const slow = await startFlow(db.sql, flow, { delay: 3600 });
  const hidden = await waitUntil(async () => {
    const state = await taskState(db, slow, "retry_after");
    return state.status === "queued" && state.attempts_count === 1 ? state : null;
  }, "the first attempt to be reported");
  assert.ok(
    hidden.hidden_for! > 3590 && hidden.hidden_for! <= 3600,
    `hidden for ${hidden.hidden_for}`,
  );
  assert.match(hidden.error_message!, /^RetryAfterError: Retry requested in 3600 s: rate limited/);

  // Delay 0: visible again at once (the backoff would hide it for 1 s). The retry is claimed
  // too soon to read its vt between the attempts, so a trigger records, in order, every vt the
  // queue writes outside a read (a read counts read_ct up): the retry's set_vt, and nothing for
  // the claims, whose reads (after the worker's first claim) already set the claim's visibility.
  // The trigger fires inside sluice's functions, so with their pinned search_path: it names the
  // schema of its table.
  await db.sql.unsafe(`
    create table hidden_log (seq bigserial, msg_id bigint, hidden_for float8);
    create function log_hidden() returns trigger language plpgsql as $$
    begin
      if new.read_ct = old.read_ct and new.vt <> old.vt then
        insert into public.hidden_log (msg_id, hidden_for)
        values (new.msg_id, extract(epoch from new.vt - clock_timestamp())::float8);
      end if;
      return new;
    end;
    $$;
    create trigger log_hidden before update on pgmq.q_retry_after
    for each row execute function log_hidden();
  `);
  const fast = await startFlow(db.sql, flow, { delay: 0 });
  assert.deepEqual(await waitForRun(db.sql, fast, { timeoutMs: scaled(10_000), flow }), {
    call: 2,
  });
  const writes = (await db.sql<{ hidden_for: number }[]>`
    select l.hidden_for from hidden_log l
    join sluice.step_tasks t on t.message_id = l.msg_id
    where t.run_id = ${fast} order by l.seq`).map((w) => w.hidden_for);
  assert.equal(writes.length, 1, `the retry only: ${JSON.stringify(writes)}`);
  assert.ok(writes[0] <= 0, `the retry hid the message for ${writes[0]} s`);
});

for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY, 86_401]) {
  Deno.test(`RetryAfterError with delay ${bad} fails the attempt with the normal backoff`, async () => {
    await using db = await freshDatabase();
    const flow = new Flow({ slug: "bad_delay", maxAttempts: 2, baseDelay: 100 })
      .step({ slug: "call" }, () => {
        throw new RetryAfterError(bad);
      });
    await using _worker = await testWorker(flow, db);

    const runId = await startFlow(db.sql, flow, {});
    const state = await waitUntil(async () => {
      const s = await taskState(db, runId, "bad_delay");
      return s.status === "queued" && s.attempts_count === 1 ? s : null;
    }, "the first attempt to be reported");

    assert.match(state.error_message!, /^Invalid retry delay: RetryAfterError\.delaySeconds/);
    assert.ok(state.error_message!.includes(String(bad)), state.error_message!);
    // base_delay 100 * 2^0
    assert.ok(state.hidden_for! > 95 && state.hidden_for! <= 100, `hidden for ${state.hidden_for}`);
  });
}

Deno.test("a result the database refuses fails the attempt with the database's message", async () => {
  await using db = await freshDatabase();
  let mapped = 0;
  const flow = new Flow({ slug: "refused", maxAttempts: 2, baseDelay: 1 })
    // Lies about its type: returns an object, so the map over it cannot start.
    .array({ slug: "list" }, () => ({ not: "an array" }) as unknown as number[])
    .map({ slug: "each", array: "list" }, (n) => {
      mapped++;
      return n;
    });
  await using worker = await testWorker(flow, db, { pollIntervalMs: 50 });

  const runId = await startFlow(db.sql, flow, {});
  const error = await waitForRun(db.sql, runId, { timeoutMs: scaled(15_000) }).catch((e) => e);

  assert.ok(error instanceof RunFailedError, String(error));
  assert.match(error.errorMessage, /Cannot complete task: .*must be an array, got object/);
  assert.equal(mapped, 0);
  assert.equal(worker.logs.find("warn", "refused").length, 2);
  assert.ok(!worker.logs.text().includes('an array"'), "outputs are never logged");
});

Deno.test("an output that is not JSON-serializable fails the attempt", async () => {
  await using db = await freshDatabase();
  const flow = new Flow({ slug: "bigint_out", maxAttempts: 1 })
    .step({ slug: "call" }, () => ({ n: 1n }) as unknown as { n: number });
  await using _worker = await testWorker(flow, db);

  const runId = await startFlow(db.sql, flow, {});
  const error = await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000) }).catch((e) => e);
  assert.ok(error instanceof RunFailedError);
  assert.match(
    error.errorMessage,
    /JsonValueError: Cannot store the output of step "call": output\.n: a bigint \(1n\) is not JSON/,
  );
});

Deno.test("ctx.maxAttempts is the effective max attempts the database retries by: the step's, else the flow's", async () => {
  await using db = await freshDatabase();
  const seen: string[] = [];
  const flow = new Flow<{ n: number }>({ slug: "budgets", maxAttempts: 2 })
    .step({ slug: "flow_budget" }, (input, ctx) => {
      seen.push(`flow_budget ${ctx.attempt}/${ctx.maxAttempts}`);
      return input.n;
    })
    .step({ slug: "own_budget", maxAttempts: 4 }, (_input, ctx) => {
      seen.push(`own_budget ${ctx.attempt}/${ctx.maxAttempts}`);
      // Retried at once until the last attempt, which the handler recognizes from the context.
      if (ctx.attempt < ctx.maxAttempts) throw new RetryAfterError(0);
      return "last attempt";
    });
  await using _worker = await testWorker(flow, db, { pollIntervalMs: 50 });

  const runId = await startFlow(db.sql, flow, { n: 1 });
  const output = await waitForRun(db.sql, runId, { timeoutMs: scaled(15_000), flow });

  assert.deepEqual(output, { flow_budget: 1, own_budget: "last attempt" });
  assert.deepEqual(seen.toSorted(), [
    "flow_budget 1/2",
    "own_budget 1/4",
    "own_budget 2/4",
    "own_budget 3/4",
    "own_budget 4/4",
  ]);
});

Deno.test("an error message holding NUL and a lone surrogate is reported with them replaced", async () => {
  await using db = await freshDatabase();
  const flow = new Flow({ slug: "nul_error", maxAttempts: 1 })
    .step({ slug: "call" }, () => {
      throw new Error("bad\u0000byte and \ud800 lone");
    });
  await using worker = await testWorker(flow, db);

  const runId = await startFlow(db.sql, flow, {});
  // Before the fix the report threw and the attempt waited for stall recovery (timeout + 30 s).
  const error = await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000) }).catch((e) => e);
  assert.ok(error instanceof RunFailedError, String(error));
  assert.match(error.errorMessage, /Error: bad\ufffdbyte and \ufffd lone/);
  assert.equal(worker.logs.find("error", "result reporter failed").length, 0);
});

Deno.test("an output holding \\u0000 in a string or a key fails the attempt with its path", async () => {
  await using db = await freshDatabase();
  const flow = new Flow({ slug: "nul_output", maxAttempts: 1 })
    .step({ slug: "call" }, () => ({ list: ["ok", "a\u0000b"] }));
  await using _worker = await testWorker(flow, db);

  const runId = await startFlow(db.sql, flow, {});
  const error = await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000) }).catch((e) => e);
  assert.ok(error instanceof RunFailedError, String(error));
  assert.match(
    error.errorMessage,
    /JsonValueError: Cannot store the output of step "call": output\.list\[1\]: the string holds \\u0000/,
  );
});

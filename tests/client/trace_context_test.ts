// startFlow() and fireDueSchedules() record the caller's active trace context on the runs they
// start (docs/observability.md), in the caller's transaction too; with no active span, none.
// The context is made active through the OpenTelemetry API with a context manager of the test's
// own (an SDK registers one the same way), on AsyncLocalStorage.
import assert from "node:assert/strict";
import { AsyncLocalStorage } from "node:async_hooks";
import {
  type Context,
  context,
  type ContextManager,
  ROOT_CONTEXT,
  trace,
} from "@opentelemetry/api";
import { Flow } from "../../src/dsl/flow.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { compileFlow, fireDueSchedules, schedule } from "../../src/admin/mod.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";

class StorageContextManager implements ContextManager {
  readonly #storage = new AsyncLocalStorage<Context>();
  active(): Context {
    return this.#storage.getStore() ?? ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    active: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    return this.#storage.run(active, () => fn.call(thisArg, ...args));
  }
  bind<T>(_active: Context, target: T): T {
    return target;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    this.#storage.disable();
    return this;
  }
}

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const SPAN_ID = "00f067aa0ba902b7";

/** Runs `body` with a sampled remote span active. */
function inSpan<T>(body: () => Promise<T>): Promise<T> {
  const active = trace.setSpanContext(ROOT_CONTEXT, {
    traceId: TRACE_ID,
    spanId: SPAN_ID,
    traceFlags: 1,
    isRemote: true,
  });
  return context.with(active, body);
}

async function traceparentOf(db: TestDatabase, runId: string): Promise<string | null> {
  const [run] = await db.sql`select traceparent from sluice.runs where run_id = ${runId}`;
  return run.traceparent;
}

const flow = new Flow<{ n: number }>({ slug: "traced" }).step({ slug: "only" }, (i) => i.n);

Deno.test("startFlow() and fireDueSchedules() record the active span's traceparent on their runs", async () => {
  assert.ok(context.setGlobalContextManager(new StorageContextManager()));
  try {
    await using db = await freshDatabase();
    await compileFlow(db.sql, flow);
    const expected = `00-${TRACE_ID}-${SPAN_ID}-01`;

    const traced = await inSpan(() => startFlow(db.sql, flow, { n: 1 }));
    assert.equal(await traceparentOf(db, traced), expected);
    const untraced = await startFlow(db.sql, flow, { n: 2 });
    assert.equal(await traceparentOf(db, untraced), null);
    const inTransaction = await inSpan(() => db.sql.begin((tx) => startFlow(tx, flow, { n: 3 })));
    assert.equal(await traceparentOf(db, inTransaction), expected);

    const T0 = new Date("2030-01-01T00:00:30Z");
    await schedule(db.sql, flow, { cron: "* * * * *", input: { n: 4 }, now: T0 });
    const fired = await inSpan(() =>
      fireDueSchedules(db.sql, { now: new Date("2030-01-01T00:01:01Z") })
    );
    assert.equal(fired.fired, 1);
    const [run] = await db.sql`
      select traceparent from sluice.runs where input = '{"n": 4}'::jsonb`;
    assert.equal(run.traceparent, expected);
  } finally {
    context.disable();
  }
});

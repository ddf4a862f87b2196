// The flows of the cancel-race test (tests/worker/cancel_race_test.ts), shared by the test and its
// worker subprocess: a chain with a map fan-out, and a signal wait between two steps. Every handler
// records, in one statement (one snapshot), its run's and its own task's state as it starts.
import { Flow, signalPayload, type StepContext } from "../../mod.ts";

/** The table the handlers record their starts in; the test creates it. */
export const HANDLER_STARTS = "cancel_race_handler_starts";

/** Creates {@linkcode HANDLER_STARTS}. */
export const CREATE_HANDLER_STARTS = `create table ${HANDLER_STARTS} (
  run_id uuid not null, step_slug text not null, task_index integer not null,
  attempt integer not null, run_status text, task_status text, task_attempt integer)`;

async function recordStart(ctx: StepContext): Promise<void> {
  await ctx.sql.unsafe(
    `insert into ${HANDLER_STARTS}
       (run_id, step_slug, task_index, attempt, run_status, task_status, task_attempt)
     select $1, $2, $3, $4, r.status, t.status, t.attempts_count
     from sluice.runs r
     join sluice.step_tasks t on t.run_id = r.run_id
     where r.run_id = $1 and t.step_slug = $2 and t.task_index = $3`,
    [ctx.runId, ctx.stepSlug, ctx.taskIndex, ctx.attempt],
  );
}

/** `list` -> map `each` over it -> `join`. */
export const chainFlow = new Flow<{ n: number }>({ slug: "cancel_race_chain", timeout: 60 })
  .step({ slug: "list" }, async (input, ctx) => {
    await recordStart(ctx);
    return [input.n, input.n + 1];
  })
  .map({ slug: "each", array: "list" }, async (n: number, ctx) => {
    await recordStart(ctx);
    return n * 2;
  })
  .step({ slug: "join", dependsOn: ["each"] }, async (deps, ctx) => {
    await recordStart(ctx);
    return deps.each.length;
  });

/** `ask` -> signal wait `decision` (key `decision:<id>`) -> `settle`. */
export const signalFlow = new Flow<{ id: string }>({ slug: "cancel_race_signal", timeout: 60 })
  .step({ slug: "ask" }, async (input, ctx) => {
    await recordStart(ctx);
    return { id: input.id };
  })
  .waitForSignal({
    slug: "decision",
    dependsOn: ["ask"],
    key: (deps) => `decision:${deps.ask.id}`,
    payload: signalPayload<{ approved: boolean }>(),
  })
  .step({ slug: "settle", dependsOn: ["decision"] }, async (_deps, ctx) => {
    await recordStart(ctx);
    return "settled";
  });

// A run with two durable waits after one step, for tests of what users see of waits (getRun, ops
// run, the dashboard): a signal wait with a one-hour timeout and a one-day sleep.
import { Flow, signalPayload } from "../../mod.ts";
import { getRun, type RunState } from "../../src/client/get_run.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import type { TestDatabase } from "../_db.ts";
import { type TestWorker, testWorker, uniqueSlug, waitUntil } from "./_helpers.ts";

/** `ask -> decision` (a signal wait on `key(id)`, 1 h timeout) and `ask -> pause` (a 1-day sleep). */
export function waitingFlow(slug: string, key: (id: string) => string = (id) => `approval:${id}`) {
  return new Flow<{ id: string }>({ slug: uniqueSlug(slug) })
    .step({ slug: "ask" }, (input) => ({ id: input.id }))
    .waitForSignal({
      slug: "decision",
      dependsOn: ["ask"],
      key: (deps) => key(deps.ask.id),
      payload: signalPayload<boolean>(),
      timeoutSeconds: 3600,
    })
    .sleep({ slug: "pause", dependsOn: ["ask"] }, () => ({ seconds: 86400 }));
}

/** A worker of `flow` and a run of it with input `{ id }`, once both waits wait. */
export async function startWaitingRun(
  db: TestDatabase,
  flow: ReturnType<typeof waitingFlow>,
  id: string,
): Promise<{ worker: TestWorker; runId: string; run: RunState }> {
  const worker = await testWorker(flow, db);
  const runId = await startFlow(db.sql, flow, { id });
  await waitUntil(
    async () => (await getRun(db.sql, runId))?.steps.every((s) => s.status !== "created"),
    "both waits waiting",
  );
  return { worker, runId, run: (await getRun(db.sql, runId))! };
}

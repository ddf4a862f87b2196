// `ops run <id> --watch`: successive views never go back, while steps complete as the watcher
// attaches and while its listener connection is cut (issue 30.4).
import assert from "node:assert/strict";
import { runChannel } from "../../src/events/run_event.ts";
import { freshDatabase } from "../_db.ts";
import { mixedFlow, MixedRunDriver } from "../_run_events.ts";
import { waitUntil } from "../_support.ts";
import { compileFlow, startFlow } from "../sql/_fixtures.ts";
import { ops } from "./_ops.ts";

/** One step line of a view: status, tasks done of total (or "-"), attempts. */
interface StepLine {
  readonly status: string;
  readonly done: number | null;
  readonly attempts: number;
}

/** The step lines and failed-attempt lines of each printed view. */
function views(text: string) {
  return text.split(/\n(?=Run )/).map((view) => {
    const steps = new Map<string, StepLine>();
    for (
      const [, slug, status, tasks, attempts] of view.matchAll(
        /^[ └]*(\w+) +(created|started|completed|failed|skipped|cancelled) +(\S+) +(\d+) /gm,
      )
    ) {
      steps.set(slug, {
        status,
        done: tasks === "-" ? null : Number(tasks.split("/")[0]),
        attempts: Number(attempts),
      });
    }
    const failedTasks = [...view.matchAll(/^ {2}(\w+)\[\d+\] (\w+) after /gm)].map((
      [, slug, status],
    ) => ({ slug, status }));
    return { view, steps, failedTasks };
  });
}

const stage = (status: string) => status === "created" ? 0 : status === "started" ? 1 : 2;

Deno.test("run --watch never shows a step older than already shown, across attach and listener cuts", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, mixedFlow("cliwatch"));
  const runId = await startFlow(db.sql, "cliwatch", { tier: "silver" });
  const driver = new MixedRunDriver(db.sql, "cliwatch");
  // Before the watcher attaches: list completed, premium skipped, double 1 of 3 done.
  await driver.step(1);
  await driver.step(1);

  const { code, output } = ops(db, ["run", runId, "--watch"]);
  const listener = async (not: number[]) => {
    const rows = await db.sql<{ pid: number }[]>`
      select pid from pg_stat_activity
      where query like ${`%listen ${runChannel(runId)}%`} and not (pid = any (${not}::int[]))`;
    return rows[0]?.pid;
  };
  const cut: number[] = [];
  const cutListener = async () => {
    const pid = await waitUntil(() => listener(cut), "the watcher's listener session");
    cut.push(pid);
    await db.sql`select pg_terminate_backend(${pid})`;
  };
  await waitUntil(() => /^Run /m.test(output.text), "the first view");
  await cutListener();
  await driver.step(1); // double[1]
  await cutListener();
  await driver.step(1); // double[2]: double completes
  await driver.finish(); // flaky fails once, then completes; the run completes
  assert.equal(await code, 0, output.errors);

  const shown = views(output.text);
  assert.ok(shown.length >= 2, output.text);
  const last = new Map<string, StepLine>();
  for (const [index, { view, steps, failedTasks }] of shown.entries()) {
    const where = `view ${index}:\n${view}\n(previous views: ${index})`;
    for (const [slug, step] of steps) {
      const before = last.get(slug);
      if (before !== undefined) {
        assert.ok(stage(step.status) >= stage(before.status), `${slug} went back: ${where}`);
        if (stage(step.status) === stage(before.status) && step.done !== null) {
          assert.ok(step.done >= (before.done ?? 0), `${slug}'s tasks went down: ${where}`);
        }
        assert.ok(step.attempts >= before.attempts, `${slug}'s attempts went down: ${where}`);
      }
      if (step.status === "completed") {
        assert.ok(step.attempts > 0, `${slug} completed with 0 attempts: ${where}`);
      }
      last.set(slug, step);
    }
    for (const task of failedTasks) {
      if (steps.get(task.slug)?.status === "completed") {
        assert.equal(task.status, "completed", `${task.slug} completed, a task not: ${where}`);
      }
    }
  }
  assert.match(shown.at(-1)!.view, new RegExp(`^Run ${runId} of flow cliwatch: completed$`, "m"));
  assert.ok(cut.length === 2);
});

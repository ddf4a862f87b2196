/**
 * `deno task ops fence drain`: deprecates the live workers of the fenced functions and waits
 * until none has a fresh heartbeat and no task they claimed is still `started`. While it waits it
 * runs stalled-task recovery itself: once the set's last worker crashed, no heartbeat runs it, and
 * the crashed worker's tasks would stay `started` for good.
 *
 * @module
 */

import type { Sql } from "../../db/driver/postgres.ts";
import type { OpsCommand, OpsIo } from "./command_types.ts";
import { formatIsoTime } from "../../dashboard/format.ts";
import {
  deprecateFunctionWorkers,
  readDrain,
  readLiveWorkersOf,
  readStartedTasksOf,
} from "../../db/fence_queries.ts";
import { requeueStalledTasks } from "../../db/worker_queries.ts";
import { fencedNames, FUNCTIONS_OPTION, STATE_OPTION } from "./_fence.ts";
import { timeoutMs, timeoutOption, waitWithProgress } from "./_wait.ts";

const DEFAULT_TIMEOUT = "10m";

/** Prints the live workers and the started tasks that kept the drain from finishing. */
async function printStillRunning(sql: Sql, names: readonly string[], io: OpsIo): Promise<void> {
  const workers = await readLiveWorkersOf(sql, names);
  const tasks = await readStartedTasksOf(sql, names);
  for (const worker of workers) {
    io.err(
      `  worker ${worker.worker_id} of ${worker.function_name} (queue ${worker.queue_name}) ` +
        `last heartbeat ${formatIsoTime(worker.last_heartbeat_at)}`,
    );
  }
  for (const task of tasks) {
    io.err(
      `  task ${task.step_slug}[${task.task_index}] of run ${task.run_id} started ` +
        `${formatIsoTime(task.started_at)} by worker ${task.worker_id} of ${task.function_name} ` +
        `(attempt ${task.attempts_count})`,
    );
  }
}

/**
 * The `fence drain` command. Exits 0 once drained, 1 on timeout after listing what still runs.
 *
 * @example Usage
 * ```ts ignore
 * import { fenceDrainCommand } from "./fence_drain.ts";
 *
 * await fenceDrainCommand.run(sql, { positional: [], json: false, options: { timeout: "5m" } }, io);
 * ```
 */
export const fenceDrainCommand: OpsCommand = {
  name: "fence drain",
  positional: [],
  options: [
    STATE_OPTION,
    { ...FUNCTIONS_OPTION, summary: "drain these functions instead of the recorded set" },
    timeoutOption(DEFAULT_TIMEOUT),
  ],
  json: false,
  summary: "deprecate the set's workers and wait until they have stopped and their tasks ended",
  description:
    "Deprecates every worker of the set that has not stopped: at its next heartbeat it stops\n" +
    "polling, finishes the tasks it claimed and stops. Waits, printing progress, until no\n" +
    "worker of the set has a fresh heartbeat and no task one of them claimed is started.\n" +
    "A worker that starts meanwhile (a direct invocation, a respawn of an enabled function) is\n" +
    "deprecated too, and said so. While waiting it runs stalled-task recovery, so a task\n" +
    "of a crashed worker is requeued after its timeout plus 30 s and stops holding the drain.\n" +
    "On timeout it lists what still runs and exits 1.",
  async run(sql, args, io) {
    const names = await fencedNames(args);
    const limitMs = timeoutMs(args, DEFAULT_TIMEOUT);
    const known = await readDrain(sql, names);
    const missing = names.filter((name) => !known.some((row) => row.function_name === name));
    if (missing.length > 0) {
      io.err(
        `Cannot drain: no worker function ${
          missing.map((name) => JSON.stringify(name)).join(", ")
        }` +
          " (see deno task sluice functions)",
      );
      return 1;
    }
    io.out(
      `Deprecated ${await deprecateFunctionWorkers(sql, names)} workers of ${names.join(", ")}.`,
    );
    const drained = await waitWithProgress(io, limitMs, async () => {
      const late = await deprecateFunctionWorkers(sql, names);
      if (late > 0) {
        io.out(
          `Deprecated ${late} more workers that started during the drain (a direct invocation, ` +
            "or a respawn of a function still enabled).",
        );
      }
      // Stalled-task recovery, as every heartbeat runs it: a task started longer ago than its
      // timeout plus sluice.stall_margin_seconds() belongs to a worker that vanished.
      const recovered = await requeueStalledTasks(sql);
      if (recovered > 0) {
        io.out(
          `Recovered ${recovered} stalled tasks (their worker vanished): requeued, or failed ` +
            "when it was their last attempt.",
        );
      }
      const rows = await readDrain(sql, names);
      const busy = rows.filter((row) => !row.drained);
      const total = (key: "live_workers" | "started_tasks" | "queued_tasks") =>
        rows.reduce((sum, row) => sum + row[key], 0);
      return {
        done: busy.length === 0,
        progress: `draining: ${total("live_workers")} live workers, ${
          total("started_tasks")
        } started tasks, ${total("queued_tasks")} queued tasks (${
          busy.map((row) =>
            `${row.function_name}: ${row.live_workers} workers, ${row.started_tasks} started`
          ).join("; ")
        })`,
      };
    });
    if (drained) {
      io.out(`Drained: no live worker and no started task in ${names.length} worker functions.`);
      return 0;
    }
    io.err(
      `Cannot finish the drain within ${args.options.timeout ?? DEFAULT_TIMEOUT}; still running:`,
    );
    await printStillRunning(sql, names, io);
    return 1;
  },
};

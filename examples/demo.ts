/**
 * `deno task demo`: sluice end to end in a few seconds.
 *
 * Starts a throwaway PostgreSQL (or uses the server at `DATABASE_URL`; without server binaries, or
 * with `SLUICE_EMBEDDED=1`, an embedded PGlite in this process), installs sluice into it,
 * starts two workers in this process and runs one order through a flow that shows the main
 * features at work:
 *
 * - a **map step**: `price` runs one task per order line, in parallel;
 * - a **condition**: `express_shipping` runs only for express orders (`if`), so it is skipped here
 *   and `invoice` receives no `express_shipping` key;
 * - a **retried failure**: `reserve_stock` fails on its first attempt, and SQL retries it after the
 *   flow's 1 s backoff.
 *
 * It prints a live progress line, the run output and a summary, and exits with 0 once the run has
 * completed (1 on failure, 130 on Ctrl-C). Whatever it started is stopped at the end, also on
 * Ctrl-C.
 *
 * @module
 */

import {
  connect,
  Flow,
  getRun,
  type LogRecord,
  type RunState,
  startFlow,
  startWorker,
  waitForRun,
} from "@sluice/sluice";
import { migrate } from "../src/migrations/migrate.ts";
import { startDevPostgres } from "../dev/embedded_postgres.ts";

/** The run input: an order. Amounts are in cents. */
interface Order {
  customer: string;
  express: boolean;
  lines: { sku: string; quantity: number; unitPrice: number }[];
}

/** The demo flow: reserve stock, price every line, maybe add express shipping, write the invoice. */
const orderFlow = new Flow<Order>({ slug: "sluice_demo", maxAttempts: 3, baseDelay: 1 })
  // A flaky dependency: the first attempt throws, SQL schedules attempt 2 after `baseDelay` (1 s).
  .step({ slug: "reserve_stock" }, (order, ctx) => {
    if (ctx.attempt === 1) throw new Error("inventory service timed out");
    return { reserved: order.lines.reduce((sum, line) => sum + line.quantity, 0) };
  })
  .array({ slug: "lines" }, (order) => order.lines)
  // One task per element of `lines`; the step's output is the array of results, in order.
  .map({ slug: "price", array: "lines" }, async (line, ctx) => {
    await delay(150 * (ctx.taskIndex + 1), ctx.signal); // stands in for a price lookup
    return { sku: line.sku, amount: line.quantity * line.unitPrice };
  })
  // Runs only when the order asks for it (JSON containment on the flow input).
  .step({ slug: "express_shipping", if: { express: true } }, () => ({ fee: 1500 }))
  .step(
    { slug: "invoice", dependsOn: ["reserve_stock", "price", "express_shipping"] },
    (deps, ctx) => {
      // `express_shipping` may be skipped, so its key is optional.
      const shipping = deps.express_shipping?.fee ?? 0;
      const subtotal = deps.price.reduce((sum, line) => sum + line.amount, 0);
      return {
        customer: ctx.flowInput.customer,
        items: deps.reserve_stock.reserved,
        lines: deps.price,
        subtotal,
        shipping,
        total: subtotal + shipping,
      };
    },
  );

const ORDER: Order = {
  customer: "Ada Lovelace",
  express: false,
  lines: [
    { sku: "notebook", quantity: 3, unitPrice: 450 },
    { sku: "pencil", quantity: 12, unitPrice: 80 },
    { sku: "eraser", quantity: 2, unitPrice: 120 },
    { sku: "ruler", quantity: 1, unitPrice: 300 },
  ],
};

/** How long the run may take before the demo gives up. */
const RUN_TIMEOUT_MS = 20_000;

/** A failed attempt, as the workers' logs report it. */
interface FailedAttempt {
  stepSlug: string;
  attempt: number;
  error: string;
}

async function main(interrupt: AbortSignal): Promise<void> {
  await using cleanup = new AsyncDisposableStack();
  const demoStart = performance.now();

  let url = Deno.env.get("DATABASE_URL") ?? "";
  if (url === "") {
    const postgres = await startDevPostgres();
    cleanup.defer(() => postgres.stop());
    url = postgres.url;
    say(
      postgres.embedded
        ? `Started an embedded PostgreSQL (PGlite, in this process) on port ${postgres.port}`
        : `Started a throwaway PostgreSQL on port ${postgres.port} (removed when the demo ends)`,
    );
  } else {
    say("Using the database at DATABASE_URL");
  }
  interrupt.throwIfAborted();

  const sql = connect(url, { max: 2, applicationName: "sluice-demo" });
  cleanup.defer(() => sql.end());
  const { pgmq, applied } = await migrate(sql);
  say(`Installed sluice: ${applied.length} migrations applied, PGMQ ${pgmq}`);
  interrupt.throwIfAborted();

  // The workers' structured logs tell which attempts failed; warnings and errors are shown.
  const progress = new ProgressLine();
  const failures: FailedAttempt[] = [];
  const logger = (record: LogRecord) => {
    if (record.message === "task attempt failed") {
      const fields = record.fields as { step_slug: string; attempt: number; error: string };
      failures.push({ stepSlug: fields.step_slug, attempt: fields.attempt, error: fields.error });
      progress.note(`${fields.step_slug}: attempt ${fields.attempt} failed: ${fields.error}`);
    } else if (record.level !== "info" && record.level !== "debug") {
      progress.note(`worker ${record.level}: ${record.message} ${JSON.stringify(record.fields)}`);
    }
  };
  // Two workers on the flow's queue, as two processes would be; each compiles the flow at startup.
  for (let i = 0; i < 2; i++) {
    const worker = await startWorker(orderFlow, {
      connectionString: url,
      poolSize: 2,
      maxConcurrent: 4,
      // A delayed retry becomes visible without a notification (on any database); look for it
      // every 200 ms so the demo does not wait a full default poll interval (1 s) on top of it.
      pollIntervalMs: 200,
      logger,
    });
    cleanup.defer(() => worker.stop());
  }
  say(`Started 2 workers on queue "${orderFlow.slug}"`);
  interrupt.throwIfAborted();

  const runId = await startFlow(sql, orderFlow, ORDER);
  say(`Started run ${runId}\n`);
  const watching = watchRun(sql, runId, progress, () => failures.length, interrupt);
  let output;
  try {
    output = await waitForRun(sql, runId, {
      timeoutMs: RUN_TIMEOUT_MS,
      pollIntervalMs: 50,
      maxPollIntervalMs: 100,
      flow: orderFlow,
      signal: interrupt,
    });
  } finally {
    await watching.stop();
  }

  say("\nRun output:");
  console.log(JSON.stringify(output, null, 2));
  const run = await getRun(sql, runId);
  say("\nWhat happened:");
  for (const line of summarize(run!, failures)) say(`  - ${line}`);
  say(`\nDone in ${((performance.now() - demoStart) / 1000).toFixed(1)} s.`);
}

/** One line per notable event of the run: skipped steps, retried steps, the map's fan-out. */
function summarize(run: RunState, failures: FailedAttempt[]): string[] {
  const lines: string[] = [];
  for (const step of run.steps) {
    if (step.status === "skipped" && step.skipReason === "condition_unmet") {
      lines.push(`${step.stepSlug} was skipped: the input did not match its \`if\` condition`);
    } else if (step.status === "skipped") {
      lines.push(`${step.stepSlug} was skipped (${step.skipReason})`);
    }
    if (step.stepSlug === "price") {
      lines.push(`price ran ${step.initialTasks} map tasks in parallel, one per order line`);
    }
  }
  for (const failure of failures) {
    const step = run.steps.find((s) => s.stepSlug === failure.stepSlug);
    lines.push(
      `${failure.stepSlug} failed on attempt ${failure.attempt} (${failure.error}) and was ` +
        `${step?.status === "completed" ? "completed by a retry" : `left ${step?.status}`}`,
    );
  }
  lines.push(`run ${run.status} in ${run.completedAt!.getTime() - run.startedAt.getTime()} ms`);
  return lines;
}

/** Polls the run every 100 ms and renders it on the progress line until stopped. */
function watchRun(
  sql: ReturnType<typeof connect>,
  runId: string,
  progress: ProgressLine,
  failedAttempts: () => number,
  interrupt: AbortSignal,
): { stop(): Promise<void> } {
  let stopped = false;
  let last: RunState | null = null;
  const loop = (async () => {
    while (!stopped && !interrupt.aborted) {
      last = await getRun(sql, runId) ?? last;
      if (last !== null) progress.show(describe(last, failedAttempts()));
      await delay(100, interrupt).catch(() => {});
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      // One last look, so the line ends on the final state.
      if (!interrupt.aborted) last = await getRun(sql, runId) ?? last;
      if (last !== null) progress.show(describe(last, failedAttempts()));
      progress.end();
    },
  };
}

/** `run started   | steps 2/5 resolved | tasks 3/7 done | failed attempts 1`. */
function describe(run: RunState, failedAttempts: number): string {
  const resolved = run.steps.filter((s) => s.status !== "created" && s.status !== "started");
  let tasks = 0;
  let done = 0;
  for (const step of run.steps) {
    if (step.initialTasks === null || step.status === "skipped") continue;
    tasks += step.initialTasks;
    done += step.initialTasks - (step.remainingTasks ?? step.initialTasks);
  }
  return `run ${run.status.padEnd(9)} | steps ${resolved.length}/${run.steps.length} resolved | ` +
    `tasks ${done}/${tasks} done | failed attempts ${failedAttempts}`;
}

/**
 * A status line rewritten in place on a terminal (`\r`); elsewhere (a pipe, CI logs) each new
 * state is printed once on a line of its own. Notes are printed above it.
 */
class ProgressLine {
  #terminal = Deno.stdout.isTerminal();
  #line = "";
  #done = false;

  show(line: string): void {
    if (this.#done || line === this.#line) return;
    this.#line = line;
    if (this.#terminal) write(`\r\x1b[2K${line}`);
    else console.log(line);
  }

  note(message: string): void {
    if (this.#terminal) write(`\r\x1b[2K  ${message}\n${this.#line}`);
    else console.log(`  ${message}`);
  }

  end(): void {
    this.#done = true;
    if (this.#terminal && this.#line !== "") write("\n");
  }
}

function say(message: string): void {
  console.log(message);
}

function write(text: string): void {
  Deno.stdout.writeSync(new TextEncoder().encode(text));
}

function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    signal?.throwIfAborted();
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

if (import.meta.main) {
  // Ctrl-C (or a SIGTERM) ends the demo cleanly: the run's wait is aborted and everything started
  // is stopped on the way out. A second Ctrl-C exits at once; the throwaway cluster's guardian
  // process still removes it.
  const interrupt = new AbortController();
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    Deno.addSignalListener(signal, () => {
      if (interrupt.signal.aborted) Deno.exit(130);
      console.error(`\n${signal} received: stopping the workers and the database`);
      interrupt.abort(new Error(`interrupted by ${signal}`));
    });
  }
  try {
    await main(interrupt.signal);
  } catch (error) {
    if (interrupt.signal.aborted) Deno.exit(130);
    console.error(`\nThe demo failed: ${error instanceof Error ? error.message : String(error)}`);
    Deno.exit(1);
  }
  Deno.exit(0);
}

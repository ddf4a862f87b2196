/**
 * Runs one version of the application for the scenario tests and the benchmark: worker
 * processes (real subprocesses, so a crash is a real SIGKILL), intake, waiting for outcomes and
 * reading them back from the domain tables.
 *
 * @module
 */

import type { Sql } from "postgres";
import type { NewThread } from "../supabase/functions/_shared/threads.ts";
import { submitThread as submitBaseline } from "../supabase/functions/_shared/baseline/submit_thread.ts";
import { submitThread as submitSluice } from "../supabase/functions/_shared/submit_thread.ts";

/** The two versions of the application. */
export type Version = "baseline" | "sluice";
/** The two steps, named as the flow names them. */
export type Step = "classify" | "deliver_slack";
/** The statuses a thread ends in. */
export const TERMINAL_STATUSES = ["alerted", "ignored", "failed"] as const;

const PROJECT = new URL("../", import.meta.url);
/** How long a worker process may take to start polling. */
const READY_TIMEOUT_MS = 60_000;

/** A worker running as its own process. */
export interface WorkerProcess {
  /** The version and step it serves. */
  readonly version: Version;
  readonly step: Step;
  /** Its process id. */
  readonly pid: number;
  /** Sends `signal`; resolves once the process has exited. */
  kill(signal: "SIGTERM" | "SIGKILL"): Promise<Deno.CommandStatus>;
  /** Everything it wrote to stderr so far. */
  stderr(): string;
}

/** Options of {@linkcode App}. */
export interface AppOptions {
  /** Which version runs. */
  readonly version: Version;
  /** The database, set up with `setupDatabase`. */
  readonly databaseUrl: string;
  /** A client of that database. */
  readonly sql: Sql;
  /** The Slack stand-in's URL. */
  readonly slackUrl: string;
  /** More environment for every worker (`CLASSIFY_DELAY_MS`, `WORKER_CONCURRENCY`, ...). */
  readonly env?: Readonly<Record<string, string>>;
}

/** One version of the application, its workers and its domain tables. */
export class App implements AsyncDisposable {
  /** The options it was created with. */
  readonly options: AppOptions;
  readonly #workers = new Set<WorkerProcess>();
  readonly #died: string[] = [];

  /** @param options Which version, database and Slack. */
  constructor(options: AppOptions) {
    this.options = options;
  }

  /** Starts a worker process for `step` and resolves once it polls. */
  async startWorker(step: Step): Promise<WorkerProcess> {
    const { version, databaseUrl, slackUrl, env } = this.options;
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "dev/worker_process.ts", version, step],
      cwd: PROJECT,
      env: {
        DATABASE_URL: databaseUrl,
        SLACK_URL: slackUrl,
        NO_COLOR: "1",
        ...env,
      },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    let errors = "";
    const decoder = new TextDecoder();
    void child.stderr.pipeTo(
      new WritableStream({
        write(chunk) {
          errors = (errors + decoder.decode(chunk, { stream: true })).slice(
            -20_000,
          );
        },
      }),
    ).catch(() => {});
    let killed = false;
    const worker: WorkerProcess = {
      version,
      step,
      pid: child.pid,
      async kill(signal) {
        killed = true;
        try {
          child.kill(signal);
        } catch {
          // Already exited.
        }
        return await child.status;
      },
      stderr: () => errors,
    };
    this.#workers.add(worker);
    void child.status.then((status) => {
      this.#workers.delete(worker);
      // A worker that ends on its own is a failure of the scenario, not a step of it.
      if (!killed) {
        this.#died.push(
          `${step} worker ${child.pid} exited (${JSON.stringify(status)}):\n${errors}`,
        );
      }
    });
    // Wait for "ready"; keep draining stdout afterwards so the child never blocks on it.
    const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let out = "";
    const timer = setTimeout(() => {
      errors += `\nno "ready" within ${READY_TIMEOUT_MS} ms: killed`;
      child.kill("SIGKILL");
    }, READY_TIMEOUT_MS);
    while (!out.includes("ready\n")) {
      const { value, done } = await lines.read();
      if (done) {
        clearTimeout(timer);
        const status = await child.status;
        throw new Error(
          `Cannot start the ${version} ${step} worker: exit ${status.code}\n${errors}`,
        );
      }
      out += value;
    }
    clearTimeout(timer);
    void (async () => {
      while (!(await lines.read()).done);
    })().catch(() => {});
    return worker;
  }

  /** Starts `count` workers for `step`. */
  async startWorkers(step: Step, count: number): Promise<WorkerProcess[]> {
    return await Promise.all(
      Array.from({ length: count }, () => this.startWorker(step)),
    );
  }

  /** Stores threads and hands them to the version's intake; returns their ids in order. */
  async submit(
    threads: readonly NewThread[],
    connections = 1,
  ): Promise<number[]> {
    const submit = this.options.version === "baseline" ? submitBaseline : submitSluice;
    const ids: number[] = new Array(threads.length);
    let next = 0;
    await Promise.all(Array.from({ length: connections }, async () => {
      while (next < threads.length) {
        const index = next++;
        ids[index] = await submit(this.options.sql, threads[index]);
      }
    }));
    return ids;
  }

  /** Resolves once every thread of `ids` is in a terminal status; rejects after `timeoutMs`. */
  async waitForTerminal(
    ids: readonly number[],
    timeoutMs = 45_000,
  ): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const [{ open }] = await this.options.sql<{ open: number }[]>`
        select count(*)::int as open from public.threads
        where id = any(${ids as number[]}::int[]) and status not in ('alerted', 'ignored', 'failed')
      `;
      if (open === 0) return;
      if (this.#died.length > 0) {
        throw new Error(`${this.options.version}: a worker died:\n${this.#died.join("\n")}`);
      }
      if (Date.now() > deadline) {
        const rows = await this.options.sql`
          select id, status from public.threads
          where id = any(${ids as number[]}::int[]) and status not in ('alerted', 'ignored', 'failed')
        `;
        throw new Error(
          `${this.options.version}: ${open} threads not terminal after ${timeoutMs} ms: ` +
            JSON.stringify(rows) + this.#workerErrors(),
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** Each thread's status, transitions and delivery, read from the domain tables. */
  async outcomes(): Promise<Map<number, ThreadOutcome>> {
    const rows = await this.options.sql<ThreadOutcome[]>`
      select t.id, t.status, d.status as delivery, d.posts_tried as "postsTried", d.slack_ts as "slackTs",
        coalesce((select array_agg(tr.to_status order by tr.at) from public.thread_transitions tr
          where tr.thread_id = t.id), '{}') as transitions
      from public.threads t left join public.deliveries d on d.thread_id = t.id
      order by t.id
    `;
    return new Map(rows.map((row) => [row.id, { ...row }]));
  }

  #workerErrors(): string {
    return [...this.#workers].map((w) => `\n--- ${w.step} worker ${w.pid} stderr:\n${w.stderr()}`)
      .join("");
  }

  /** Stops every worker still running (SIGTERM: each drains and exits). */
  async [Symbol.asyncDispose](): Promise<void> {
    await Promise.all(
      [...this.#workers].map((worker) => worker.kill("SIGTERM")),
    );
  }
}

/** A thread as the domain tables tell it. */
export interface ThreadOutcome {
  readonly id: number;
  readonly status: string;
  /** The delivery's status, `null` when the thread needed none. */
  readonly delivery: string | null;
  readonly postsTried: number | null;
  readonly slackTs: string | null;
  /** The statuses it moved to, in order. */
  readonly transitions: string[];
}

/** `count` threads, every `urgentEvery`-th one urgent (an outage report), the others chatter. */
export function makeThreads(count: number, urgentEvery = 2): NewThread[] {
  return Array.from(
    { length: count },
    (_, i) =>
      i % urgentEvery === 0
        ? {
          title: `Checkout outage #${i}`,
          body: "The checkout page is down for everyone.",
        }
        : {
          title: `Show and tell #${i}`,
          body: "Here is my new dashboard theme.",
        },
  );
}

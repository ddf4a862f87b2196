/**
 * The chaos benchmark's worker processes: real `deno run` subprocesses of `_chaos_worker.ts`,
 * kept at a fixed count. Any process that exits, killed or not, is replaced. The fleet remembers
 * when each one lived, so that executions cut short by a kill get an end, and keeps their logs and
 * execution-end files in one directory.
 *
 * @module
 */
import type { Sql } from "postgres";
import type { ExecutionEnd } from "./_chaos_flow.ts";

/** Execution ends written per statement. */
const END_BATCH = 5000;

/** Pause before replacing a worker that exited on its own. */
const RESPAWN_DELAY_MS = 500;

/** One worker process, alive or gone. */
export interface WorkerProcess {
  /** Its name in `chaos.executions.worker`: `w1`, `w2`, ... */
  name: string;
  /** The OS process. */
  child: Deno.ChildProcess;
  /** When it was spawned. */
  spawnedAt: Date;
  /** When it was killed or seen to exit; `undefined` while alive. */
  stoppedAt?: Date;
  /** Stopped by SIGSTOP right now. */
  frozen: boolean;
}

/** A fixed number of worker processes that replaces every one that exits. */
export class WorkerFleet implements AsyncDisposable {
  /** Every process spawned so far. */
  readonly processes: WorkerProcess[] = [];
  /** Processes that exited without being killed by the fleet (e.g. on a lost database). */
  unexpectedExits = 0;
  #url: string;
  #dir: string;
  #log: Deno.FsFile[] = [];
  #stopping = false;

  /**
   * @param url The database the workers connect to.
   * @param dir Directory for `workers.log` (every worker's stdout and stderr) and each worker's
   *   `<name>.ends` file (see `ExecutionLog.endsPath`).
   */
  constructor(url: string, dir: string) {
    this.#url = url;
    this.#dir = dir;
  }

  /** Starts `count` workers. */
  start(count: number): void {
    for (let i = 0; i < count; i++) this.#spawn();
  }

  /** Workers alive and not frozen: the ones that may be killed or frozen. */
  running(): WorkerProcess[] {
    return this.processes.filter((worker) => worker.stoppedAt === undefined && !worker.frozen);
  }

  /** SIGKILLs `worker`; its replacement starts as soon as its exit is seen. */
  kill(worker: WorkerProcess): void {
    worker.stoppedAt ??= new Date();
    worker.child.kill("SIGKILL");
  }

  /** SIGSTOPs `worker`. */
  freeze(worker: WorkerProcess): void {
    worker.frozen = true;
    worker.child.kill("SIGSTOP");
  }

  /** SIGCONTs `worker`. */
  thaw(worker: WorkerProcess): void {
    worker.child.kill("SIGCONT");
    worker.frozen = false;
  }

  /** Kills every worker (thawing a frozen one first) and waits for them to exit. Idempotent. */
  async stop(): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    for (const worker of this.processes) {
      if (worker.stoppedAt !== undefined) continue;
      if (worker.frozen) this.thaw(worker);
      this.kill(worker);
    }
    await Promise.all(this.processes.map((worker) => worker.child.status));
    for (const file of this.#log) file.close();
  }

  /** Same as `stop()`: no worker outlives the benchmark, also when it fails. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }

  /**
   * Writes the lifetimes into `chaos.workers` and, from the ends files, the ends of executions
   * whose handlers could not record them (call after `stop()`). Only a success the handler itself
   * committed counts as one.
   */
  async record(sql: Sql): Promise<void> {
    const workers = this.processes.map((worker) => ({
      name: worker.name,
      pid: worker.child.pid,
      spawned_at: worker.spawnedAt,
      stopped_at: worker.stoppedAt!,
    }));
    await sql`insert into chaos.workers ${sql(workers)}`;
    const ends = new Map<string, string>();
    for (const worker of this.processes) {
      const text = await Deno.readTextFile(this.#endsPath(worker.name)).catch(() => "");
      // A line cut short by a kill is the last one and is skipped.
      for (const line of text.split("\n").filter((line) => line.endsWith("}"))) {
        const end: ExecutionEnd = JSON.parse(line);
        ends.set(end.id, end.ended_at);
      }
    }
    const rows = [...ends].map(([id, endedAt]) => ({ id, ended_at: endedAt }));
    for (let i = 0; i < rows.length; i += END_BATCH) {
      await sql`
        update chaos.executions e set ended_at = f.ended_at::timestamptz, outcome = 'failed'
        from jsonb_to_recordset(${sql.json(rows.slice(i, i + END_BATCH))})
          as f(id uuid, ended_at text)
        where e.id = f.id and e.ended_at is null`;
    }
  }

  #endsPath(name: string): string {
    return `${this.#dir}/${name}.ends`;
  }

  #spawn(): void {
    const name = `w${this.processes.length + 1}`;
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        new URL("./_chaos_worker.ts", import.meta.url).pathname,
        this.#url,
        name,
        this.#endsPath(name),
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    for (const stream of [child.stdout, child.stderr]) {
      const file = Deno.openSync(`${this.#dir}/workers.log`, { append: true, create: true });
      this.#log.push(file);
      stream.pipeTo(file.writable, { preventClose: true }).catch(() => {});
    }
    const worker: WorkerProcess = { name, child, spawnedAt: new Date(), frozen: false };
    this.processes.push(worker);
    child.status.then(() => {
      const unexpected = worker.stoppedAt === undefined;
      worker.stoppedAt ??= new Date();
      if (unexpected) this.unexpectedExits++;
      // A worker that could not start (database down) is retried at a calm pace.
      setTimeout(() => {
        if (!this.#stopping) this.#spawn();
      }, unexpected ? RESPAWN_DELAY_MS : 0);
    });
  }
}

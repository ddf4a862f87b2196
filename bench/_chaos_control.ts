/**
 * Run control under chaos: cancels, retries and signals racing completions, claims and the
 * benchmark's other faults. Cancels hit random live runs of `chaos` and of `chaos_signal` (a flow
 * that waits for a signal between two steps); retries bring random failed or cancelled runs back;
 * signals are sent at random moments, before or after their wait began, some twice.
 *
 * Claims and run transitions are recorded by triggers on the engine's tables in the transactions
 * that make them, and compared by commit timestamp (`track_commit_timestamp`): a claim that
 * committed after its run's cancel committed (and before a retry of that run) is a handler started
 * on a cancelled run, whatever the clocks of the processes say.
 *
 * @module
 */
import type { Sql } from "postgres";
import { cancelRun } from "../src/client/cancel_run.ts";
import { retryRun } from "../src/client/retry_run.ts";
import { sendSignal } from "../src/client/send_signal.ts";
import { startFlow } from "../src/client/start_flow.ts";
import { Flow } from "../src/dsl/flow.ts";
import { signalPayload } from "../src/dsl/flow.ts";
import { startWorker, type WorkerHandle } from "../src/worker/mod.ts";

/** The flow whose runs wait for a signal: `ask`, then the wait `approve`, then `act`. */
export const SIGNAL_FLOW = "chaos_signal";

/**
 * Server settings run control needs: commit timestamps order a claim against a cancel exactly.
 */
export const CONTROL_SETTINGS = { track_commit_timestamp: "on" } as const;

/**
 * The side tables and triggers: `chaos.claims` (one row per claim: a task going to `started`) and
 * `chaos.transitions` (a run going to `cancelled`, or back to `started` by a retry). Each row is
 * written by the transaction that made the change, so its `xmin` commit timestamp is that change's.
 */
export const CONTROL_SCHEMA = `
create table chaos.claims (
  run_id uuid not null,
  step_slug text not null,
  task_index integer not null,
  attempt integer not null
);
create table chaos.transitions (
  run_id uuid not null,
  status text not null
);
create function chaos.record_claim() returns trigger language plpgsql as $$
begin
  insert into chaos.claims values (new.run_id, new.step_slug, new.task_index, new.attempts_count);
  return null;
end $$;
create trigger chaos_claims after update of status on sluice.step_tasks
  for each row when (new.status = 'started' and old.status is distinct from 'started')
  execute function chaos.record_claim();
create function chaos.record_transition() returns trigger language plpgsql as $$
begin
  insert into chaos.transitions values (new.run_id, new.status);
  return null;
end $$;
create trigger chaos_transitions after update of status on sluice.runs
  for each row when (new.status in ('cancelled', 'started') and old.status is distinct from new.status)
  execute function chaos.record_transition();
`;

/** The signal-waiting flow: its handlers are instant, so its runs race their signals. */
export function signalFlow() {
  return new Flow<number>({ slug: SIGNAL_FLOW, maxAttempts: 3, baseDelay: 1, timeout: 5 })
    .step({ slug: "ask" }, (_input, ctx) => ctx.runId)
    .waitForSignal({
      slug: "approve",
      dependsOn: ["ask"],
      key: (deps) => `chaos:${deps.ask}`,
      payload: signalPayload<{ by: string }>(),
      timeoutSeconds: 3600,
    })
    .step({ slug: "act", dependsOn: ["approve"] }, (deps) => deps.approve.by);
}

/** What run control did, and what the audit found. */
export interface ControlReport {
  cancels: number;
  retries: number;
  signalRuns: number;
  signalsSent: number;
  /** Cancelled runs that still have a `queued` or `started` task or a `waiting` step. */
  cancelledWithLiveWork: string[];
  /** Claims committed after their run's cancel committed, before any retry of it. */
  claimsAfterCancel: string[];
  /** Signal runs that were never cancelled and did not complete. */
  signalRunsNotCompleted: string[];
}

/**
 * Cancels, retries and signals, one decision per tick of the benchmark. Each tick cancels a run
 * with probability `cancelRate`, retries one with `retryRate` and starts a signal run.
 */
export class RunControl {
  #producer: Sql;
  #worker: WorkerHandle | undefined;
  #pendingSignals: { runId: string; at: number; twice: boolean }[] = [];
  cancels = 0;
  retries = 0;
  signalRuns = 0;
  signalsSent = 0;

  constructor(producer: Sql) {
    this.#producer = producer;
  }

  /** Installs the recording triggers and starts the signal flow's worker (in this process). */
  async begin(sql: Sql): Promise<void> {
    await sql.unsafe(CONTROL_SCHEMA);
    this.#worker = await startWorker(signalFlow(), {
      sql: this.#producer,
      logLevel: "error",
      heartbeatIntervalMs: 1000,
      stalledCheckIntervalMs: 1000,
    });
  }

  /**
   * One tick: a signal run started; due signals sent; maybe a cancel and a retry. Errors from a
   * cut connection or the restart are expected under chaos: the action is simply not counted.
   */
  async tick(): Promise<void> {
    await this.#attempt(async () => {
      const runId = await startFlow(this.#producer, SIGNAL_FLOW, this.signalRuns);
      this.signalRuns++;
      // Half the signals go out at once (usually before the wait begins), half up to 2 s later.
      const delay = Math.random() < 0.5 ? 0 : Math.random() * 2000;
      this.#pendingSignals.push({ runId, at: Date.now() + delay, twice: Math.random() < 0.2 });
    });
    const due = this.#pendingSignals.filter((signal) => signal.at <= Date.now());
    for (const signal of due) {
      await this.#attempt(async () => {
        const send = () =>
          sendSignal(this.#producer, {
            key: `chaos:${signal.runId}`,
            payload: { by: "chaos" },
            signalId: `approve-${signal.runId}`,
          });
        await send();
        if (signal.twice) await send();
        this.signalsSent++;
        this.#pendingSignals.splice(this.#pendingSignals.indexOf(signal), 1);
      });
    }
    if (Math.random() < 0.3) {
      await this.#attempt(async () => {
        const [row] = await this.#producer<{ run_id: string }[]>`
          select run_id::text from sluice.runs
          where flow_slug in ('chaos', 'chaos_sub', 'chaos_child', ${SIGNAL_FLOW})
            and status = 'started'
          order by random() limit 1`;
        if (row === undefined) return;
        const result = await cancelRun(this.#producer, row.run_id, { reason: "chaos" });
        if (result.outcome === "cancelled") this.cancels++;
      });
    }
    if (Math.random() < 0.2) {
      await this.#attempt(async () => {
        const [row] = await this.#producer<{ run_id: string }[]>`
          select run_id::text from sluice.runs
          where flow_slug in ('chaos', 'chaos_sub', ${SIGNAL_FLOW})
            and status in ('failed', 'cancelled')
          order by random() limit 1`;
        if (row === undefined) return;
        const result = await retryRun(this.#producer, row.run_id);
        if (result.outcome === "retried") this.retries++;
      });
    }
  }

  /** Sends the signals still due (a run waits for its own), so that no run waits forever. */
  async drain(): Promise<void> {
    for (const signal of this.#pendingSignals.splice(0)) {
      await this.#attempt(() =>
        sendSignal(this.#producer, {
          key: `chaos:${signal.runId}`,
          payload: { by: "chaos" },
          signalId: `approve-${signal.runId}`,
        }).then(() => this.signalsSent++)
      );
    }
  }

  /** Signal runs not yet terminal. */
  async pending(sql: Sql): Promise<number> {
    const [row] = await sql<{ n: number }[]>`
      select count(*)::int as n from sluice.runs
      where flow_slug = ${SIGNAL_FLOW} and status = 'started'`;
    return row.n;
  }

  async end(): Promise<void> {
    await this.#worker?.stop({ graceMs: 1000 });
  }

  /** The audit of run control, from the engine's tables and the recorded transitions. */
  async audit(sql: Sql): Promise<ControlReport> {
    const live = await sql<{ key: string }[]>`
      select r.run_id::text as key from sluice.runs r
      where r.flow_slug in ('chaos', 'chaos_sub', 'chaos_child', ${SIGNAL_FLOW})
        and r.status = 'cancelled'
        and (exists (select 1 from sluice.step_tasks t
               where t.run_id = r.run_id and t.status in ('queued', 'started'))
          or exists (select 1 from sluice.step_states s
               where s.run_id = r.run_id and s.status = 'waiting'))`;
    // A claim is after a cancel when it committed later than the cancel and no retry of the run
    // committed in between (a retry makes the run's tasks claimable again).
    const late = await sql<{ key: string }[]>`
      with claims as (
        select c.*, pg_catalog.pg_xact_commit_timestamp(c.xmin) as at from chaos.claims c
      ), transitions as (
        select t.*, pg_catalog.pg_xact_commit_timestamp(t.xmin) as at from chaos.transitions t
      )
      select concat_ws('/', c.run_id, c.step_slug, c.task_index, c.attempt) as key
      from claims c
      join transitions k on k.run_id = c.run_id and k.status = 'cancelled' and k.at < c.at
      where not exists (
        select 1 from transitions r
        where r.run_id = c.run_id and r.status = 'started' and r.at > k.at and r.at < c.at)`;
    const incomplete = await sql<{ key: string }[]>`
      select r.run_id::text as key from sluice.runs r
      where r.flow_slug = ${SIGNAL_FLOW} and r.status <> 'completed'
        and not exists (select 1 from chaos.transitions k
          where k.run_id = r.run_id and k.status = 'cancelled')`;
    return {
      cancels: this.cancels,
      retries: this.retries,
      signalRuns: this.signalRuns,
      signalsSent: this.signalsSent,
      cancelledWithLiveWork: live.map((row) => row.key),
      claimsAfterCancel: late.map((row) => row.key),
      signalRunsNotCompleted: incomplete.map((row) => row.key),
    };
  }

  async #attempt(action: () => Promise<unknown>): Promise<void> {
    try {
      await action();
    } catch {
      // A cut connection, the restart, or a run that changed state meanwhile: not counted.
    }
  }
}

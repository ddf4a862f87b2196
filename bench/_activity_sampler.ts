/**
 * Samples `pg_stat_activity` while a benchmark runs: of the active client backends of one
 * database, how many wait on a lock and on which. `Lock:object` is the wait of a committing
 * transaction that called `pg_notify` for PostgreSQL's one notification-queue lock.
 *
 * @module
 */
import postgres from "postgres";

/** What a sampler saw, summed over its samples. */
export interface ActivitySamples {
  /** Samples taken. */
  samples: number;
  /** Active client backends seen, summed over the samples. */
  active: number;
  /** Of them, waiting on `Lock:object`. */
  lockObject: number;
  /** Of them, waiting on any other lock (`Lock:*`, `LWLock:*`). */
  otherLocks: number;
}

/** A running sampler; `stop()` ends it and answers what it saw. */
export interface ActivitySampler {
  /** Stops sampling and closes its connection. */
  stop(): Promise<ActivitySamples>;
}

/** Time between two samples. */
const SAMPLE_INTERVAL_MS = 10;

/**
 * Starts sampling the active client backends of `database` through its own connection to `url`
 * (which it leaves out).
 */
export async function startActivitySampler(
  url: string,
  database: string,
): Promise<ActivitySampler> {
  const sql = postgres(url, { max: 1, prepare: false, onnotice: () => {} });
  await sql`select 1`;
  const seen: ActivitySamples = { samples: 0, active: 0, lockObject: 0, otherLocks: 0 };
  const state = { stopping: false };
  const loop = (async () => {
    while (!state.stopping) {
      const [row] = await sql<{ active: number; object: number; other: number }[]>`
        select count(*)::int as active,
          count(*) filter (where wait_event_type = 'Lock' and wait_event = 'object')::int as object,
          count(*) filter (
            where wait_event_type in ('Lock', 'LWLock')
              and not (wait_event_type = 'Lock' and wait_event = 'object')
          )::int as other
        from pg_stat_activity
        where datname = ${database} and backend_type = 'client backend' and state = 'active'
          and pid <> pg_backend_pid()
      `;
      seen.samples++;
      seen.active += row.active;
      seen.lockObject += row.object;
      seen.otherLocks += row.other;
      await new Promise((resolve) => setTimeout(resolve, SAMPLE_INTERVAL_MS));
    }
  })();
  return {
    async stop() {
      state.stopping = true;
      await loop;
      await sql.end();
      return seen;
    },
  };
}

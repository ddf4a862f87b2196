/**
 * The statements of live run events (`src/client/watch_run.ts`): a run's state as events.
 *
 * @module
 */

import type { Sql } from "./driver/postgres.ts";
import { inline, simpleQuery, uuid } from "./inline_sql.ts";

/**
 * A run's state as events (`Event`: their type, src/events/run_event.ts, which this seam does not
 * import), and whether its flow sends live events.
 */
export interface RunEventsRow<Event> {
  readonly events: readonly Event[];
  readonly events_enabled: boolean;
}

/** `sluice.run_events`: the run's replay; `null` when there is no such run. */
export async function readRunEvents<Event>(
  sql: Sql,
  runId: string,
): Promise<RunEventsRow<Event> | null> {
  const rows = await simpleQuery<RunEventsRow<Event>[]>(
    sql,
    inline`
      select sluice.run_events(r.run_id) as events, f.opt_events as events_enabled
      from sluice.runs r join sluice.flows f on f.flow_slug = r.flow_slug
      where r.run_id = ${uuid(runId)}`,
  );
  return rows[0] ?? null;
}

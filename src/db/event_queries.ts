/**
 * The statements of live run events (`src/client/watch_run.ts`): a run's state as events.
 *
 * @module
 */

import type { Sql } from "./postgres.ts";
import type { RunEventPayload } from "../events/run_event.ts";
import { inline, simpleQuery, uuid } from "./inline_sql.ts";

/** A run's state as events, and whether its flow sends live events. */
export interface RunEventsRow {
  readonly events: readonly RunEventPayload[];
  readonly events_enabled: boolean;
}

/** `sluice.run_events`: the run's replay; `null` when there is no such run. */
export async function readRunEvents(sql: Sql, runId: string): Promise<RunEventsRow | null> {
  const rows = await simpleQuery<RunEventsRow[]>(
    sql,
    inline`
      select sluice.run_events(r.run_id) as events, f.opt_events as events_enabled
      from sluice.runs r join sluice.flows f on f.flow_slug = r.flow_slug
      where r.run_id = ${uuid(runId)}`,
  );
  return rows[0] ?? null;
}

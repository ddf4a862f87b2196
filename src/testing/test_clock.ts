/**
 * The test clock of a test database: moves sluice's time forward without waiting.
 *
 * @module
 */

import type { Sql } from "../db/driver/postgres.ts";
import { advanceClock } from "../db/testing_queries.ts";

/**
 * The test clock: moves sluice's time forward without waiting. PostgreSQL's own clock cannot be
 * moved, so the clock moves the times sluice compares with it back instead: every PGMQ message's
 * visibility time (retry delays, and the claim of a started task), every started task's
 * `started_at` (its timeout), every waiting step's due time or timeout (durable waits) and every
 * pending debounced start's window. Then it releases the waits now due (a sleep completes with
 * its moved due time), starts the debounced runs whose window closed, and runs stall
 * recovery, so a task whose timeout (plus the 30 s stall margin) has passed on the test clock is
 * requeued, or exhausted on its last attempt, exactly as after a vanished worker; and it wakes
 * the workers of every queue.
 */
export class TestClock {
  #sql: Sql;
  #advancedSeconds = 0;

  /** @param sql The test database's client. */
  constructor(sql: Sql) {
    this.#sql = sql;
  }

  /** How far the clock has been moved in total, in seconds. */
  get advancedSeconds(): number {
    return this.#advancedSeconds;
  }

  /**
   * Moves the clock forward by `seconds`, in one transaction.
   *
   * @param seconds How far, at least 0.
   * @returns How many stalled tasks stall recovery handled.
   * @throws {RangeError} When `seconds` is not a finite number >= 0.
   */
  async advance(seconds: number): Promise<number> {
    if (typeof seconds !== "number" || !Number.isFinite(seconds) || seconds < 0) {
      throw new RangeError(
        `Cannot advance the test clock: seconds must be a finite number >= 0, got ${seconds}`,
      );
    }
    const recovered = await advanceClock(this.#sql, seconds);
    this.#advancedSeconds += seconds;
    return recovered;
  }
}

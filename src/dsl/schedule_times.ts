/**
 * Cron expressions and time zones of schedules: validation with errors naming the bad value, and
 * the due times the database stores (SQL never parses cron). Cron is parsed by croner, pinned by
 * its full npm specifier (deno.json maps `croner` to the same): a package loaded from a remote URL
 * gets no import map.
 *
 * @module
 */

// deno-lint-ignore no-import-prefix
import { Cron } from "npm:croner@11.0.1";

/**
 * A cron expression that croner cannot parse (or that never fires).
 *
 * @example Usage
 * ```ts
 * import { InvalidCronError, validateSchedule } from "@sluice/sluice/admin";
 *
 * try {
 *   validateSchedule("61 * * * *", "UTC");
 * } catch (error) {
 *   if (error instanceof InvalidCronError) console.log(error.cron, error.reason);
 * }
 * ```
 */
export class InvalidCronError extends Error {
  /** Always `"InvalidCronError"`. */
  override name = "InvalidCronError";
  /** The expression given. */
  readonly cron: string;
  /** What is wrong with it, in croner's words. */
  readonly reason: string;

  /**
   * @param cron The expression given.
   * @param reason What is wrong with it.
   */
  constructor(cron: string, reason: string) {
    super(`Invalid cron expression ${JSON.stringify(cron)}: ${reason}`);
    this.cron = cron;
    this.reason = reason;
  }
}

/**
 * A time zone that is not an IANA time zone name the runtime knows.
 *
 * @example Usage
 * ```ts
 * import { InvalidTimezoneError, validateSchedule } from "@sluice/sluice/admin";
 *
 * try {
 *   validateSchedule("0 3 * * *", "Mars/Olympus_Mons");
 * } catch (error) {
 *   if (error instanceof InvalidTimezoneError) console.log(error.timezone);
 * }
 * ```
 */
export class InvalidTimezoneError extends Error {
  /** Always `"InvalidTimezoneError"`. */
  override name = "InvalidTimezoneError";
  /** The time zone given. */
  readonly timezone: string;

  /** @param timezone The time zone given. */
  constructor(timezone: string) {
    super(
      `Invalid time zone ${JSON.stringify(timezone)}: not an IANA time zone name ` +
        `(such as "UTC", "Europe/Berlin" or "America/New_York")`,
    );
    this.timezone = timezone;
  }
}

/**
 * The two due times the database stores for a schedule: its next tick and the one after it (the
 * database treats the next tick as missed once the following one is due too).
 *
 * @example Usage
 * ```ts
 * import { type DueTimes, scheduleDueTimes } from "@sluice/sluice/admin";
 *
 * const due: DueTimes | null = scheduleDueTimes("*\/5 * * * *", "UTC", new Date());
 * ```
 */
export interface DueTimes {
  /** The first tick strictly after the time given. */
  readonly nextDueAt: Date;
  /** The tick after `nextDueAt`, or `null` when the expression fires only once more. */
  readonly followingDueAt: Date | null;
}

/** The longest cron expression (`sluice.max_cron_length()`). */
const MAX_CRON_LENGTH = 1000;

/**
 * What is wrong with a cron expression before croner reads it, or `undefined`. The database's
 * `sluice.cron_problem` (a port of croner's parser) checks the same, so an expression stored by
 * SQL alone always parses here.
 */
function cronTextProblem(cron: string): string | undefined {
  if (cron.length > MAX_CRON_LENGTH) {
    return `the expression is ${cron.length} characters, more than the limit of ${MAX_CRON_LENGTH}`;
  }
  // Printable ASCII and spaces only: croner splits on any Unicode white space, SQL's port on
  // spaces; neither has a use for anything else.
  if (/[^ -~]/.test(cron)) return "only printable ASCII characters and spaces are allowed";
  if (cron.trim() === "") return "the expression is empty";
  // croner reads a string with ":" as a one-off date and time, not as a cron expression.
  if (cron.includes(":")) return 'a date and time (it has ":") is not a cron expression';
  return undefined;
}

function cronOf(cron: string, timezone: string): Cron {
  if (typeof timezone !== "string" || !isTimezone(timezone)) {
    throw new InvalidTimezoneError(String(timezone));
  }
  if (typeof cron !== "string") throw new InvalidCronError(String(cron), "not a string");
  const problem = cronTextProblem(cron);
  if (problem !== undefined) throw new InvalidCronError(cron.slice(0, 100), problem);
  try {
    // 5 fields, or 6 with seconds first: the forms docs/schedules.md names (croner's auto mode
    // also takes a seventh, the year).
    return new Cron(cron, { timezone, paused: true, mode: "5-or-6-parts" });
  } catch (error) {
    throw new InvalidCronError(cron, error instanceof Error ? error.message : String(error));
  }
}

function isTimezone(timezone: string): boolean {
  if (timezone === "") return false;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

/**
 * Checks a cron expression (5 fields, or 6 with seconds first, as croner reads them) and an IANA
 * time zone, and that the expression fires at least once after `from`.
 *
 * @param cron The expression, e.g. `"0 3 * * *"` (03:00 every day).
 * @param timezone The zone the expression's fields are read in, e.g. `"Europe/Berlin"`.
 * @param from The time after which it must fire.
 * @returns The first two due times after `from`.
 * @throws {InvalidTimezoneError} When the time zone is unknown.
 * @throws {InvalidCronError} When the expression does not parse or never fires after `from`.
 *
 * @example Usage
 * ```ts
 * import { validateSchedule } from "@sluice/sluice/admin";
 *
 * const { nextDueAt } = validateSchedule("0 3 * * *", "Europe/Berlin");
 * ```
 */
export function validateSchedule(
  cron: string,
  timezone: string,
  from: Date = new Date(),
): DueTimes {
  const due = scheduleDueTimes(cron, timezone, from);
  if (due === null) throw new InvalidCronError(cron, `it never fires after ${from.toISOString()}`);
  return due;
}

/**
 * The first two ticks of a cron expression strictly after `after`, in the given time zone.
 *
 * @param cron The expression (validated as by {@linkcode validateSchedule}).
 * @param timezone An IANA time zone name.
 * @param after The time after which to look.
 * @returns The due times, or `null` when the expression never fires after `after`.
 * @throws {InvalidTimezoneError} When the time zone is unknown.
 * @throws {InvalidCronError} When the expression does not parse.
 *
 * @example Usage
 * ```ts
 * import { scheduleDueTimes } from "@sluice/sluice/admin";
 *
 * const due = scheduleDueTimes("0 * * * *", "UTC", new Date("2026-01-01T10:30:00Z"));
 * // due.nextDueAt is 11:00, due.followingDueAt 12:00
 * ```
 */
export function scheduleDueTimes(cron: string, timezone: string, after: Date): DueTimes | null {
  const pattern = cronOf(cron, timezone);
  const next = pattern.nextRun(after);
  if (next === null) return null;
  return { nextDueAt: next, followingDueAt: pattern.nextRun(next) };
}

/**
 * The soak benchmark's plan and verdicts (issue 31, "a soak that stays flat"): which interval
 * belongs to which phase, and whether the measured intervals meet the targets. Pure: the driver in
 * `soak.ts` measures, this module judges, so the judging is tested without a database.
 *
 * @module
 */
import { bytes, duration, whole } from "./_stats.ts";

/** What the database is going through during an interval. */
export type Phase = "clean" | "held" | "recovery";

/** Thrown for soak options that make no plan; names the option and the value given. */
export class SoakOptionError extends Error {
  /** The option, e.g. `--hold-at`. */
  option: string;
  /** The value given. */
  value: number;

  /**
   * @param option The option, e.g. `--hold-at`.
   * @param value The value given.
   * @param detail What is wrong with it.
   */
  constructor(option: string, value: number, detail: string) {
    super(`Invalid ${option} ${value}: ${detail}`);
    this.name = "SoakOptionError";
    this.option = option;
    this.value = value;
  }
}

/** The soak's timeline, in whole reporting intervals. */
export interface SoakPlan {
  /** Seconds per reporting interval (60 = a line per minute). */
  intervalSeconds: number;
  /** Intervals in the whole soak. */
  intervals: number;
  /** First interval during which the idle-in-transaction session holds its xid. */
  holdFrom: number;
  /** First interval after the hold was released (the first recovery interval). */
  holdTo: number;
}

/** The options a plan is made of, in minutes (fractions allowed) and seconds. */
export interface SoakPlanOptions {
  /** Length of the whole soak. */
  minutes: number;
  /** Minute the held xid begins: the clean phase is everything before it. */
  holdAt: number;
  /** Minutes the xid is held; recovery is what remains after it. */
  holdMinutes: number;
  /** Seconds per reporting interval. */
  intervalSeconds: number;
}

/**
 * Turns the options into whole intervals. Throws {@linkcode SoakOptionError} unless each phase is
 * at least one interval long and every boundary falls on an interval boundary.
 *
 * @example
 * ```ts
 * import { soakPlan } from "./_soak_targets.ts";
 * soakPlan({ minutes: 30, holdAt: 20, holdMinutes: 5, intervalSeconds: 60 });
 * // { intervalSeconds: 60, intervals: 30, holdFrom: 20, holdTo: 25 }
 * ```
 */
export function soakPlan(options: SoakPlanOptions): SoakPlan {
  const { minutes, holdAt, holdMinutes, intervalSeconds } = options;
  if (!(Number.isInteger(intervalSeconds) && intervalSeconds >= 5)) {
    throw new SoakOptionError("--interval", intervalSeconds, "needs whole seconds, at least 5");
  }
  const toIntervals = (option: string, value: number) => {
    const count = value * 60 / intervalSeconds;
    if (!(Number.isFinite(count) && count >= 1 && Math.abs(count - Math.round(count)) < 1e-9)) {
      throw new SoakOptionError(
        option,
        value,
        `needs a positive whole number of ${intervalSeconds} s intervals`,
      );
    }
    return Math.round(count);
  };
  const intervals = toIntervals("--minutes", minutes);
  const holdFrom = toIntervals("--hold-at", holdAt);
  const holdTo = holdFrom + toIntervals("--hold-minutes", holdMinutes);
  if (holdTo >= intervals) {
    throw new SoakOptionError(
      "--hold-minutes",
      holdMinutes,
      `the hold from minute ${holdAt} must end before minute ${minutes}, leaving a recovery phase`,
    );
  }
  return { intervalSeconds, intervals, holdFrom, holdTo };
}

/** The phase of interval `index` (0-based). */
export function phaseOf(plan: SoakPlan, index: number): Phase {
  if (index < plan.holdFrom) return "clean";
  return index < plan.holdTo ? "held" : "recovery";
}

/** One table at the end of an interval. */
export interface TableSample {
  /** `schema.table`. */
  name: string;
  /** `pg_total_relation_size`: heap, indexes and TOAST. */
  size: number;
  /** `pg_stat_user_tables.n_dead_tup`. */
  dead: number;
}

/** What one reporting interval measured. */
export interface IntervalSample {
  /** 0-based interval. */
  index: number;
  phase: Phase;
  /** Runs the producer started per second. */
  startedPerSecond: number;
  /** Runs that completed within the interval, per second. */
  completedPerSecond: number;
  /** Runs that failed within the interval. */
  failed: number;
  /** Runs started and not finished at the end of the interval. */
  backlog: number;
  /** Run latency (`completed_at - started_at`) of the runs completed in the interval. */
  p50Ms: number;
  /** 95th percentile of the same. */
  p95Ms: number;
  /** Age in transactions of the oldest snapshot of any session (`backend_xmin`), 0 if none. */
  xminAge: number;
  /** Every sluice and PGMQ table. */
  tables: TableSample[];
  /** 1, 5 and 15 minute load averages at the end of the interval. */
  load: string;
}

/** One target and how the soak did against it. */
export interface TargetVerdict {
  /** The target, as the issue states it. */
  target: string;
  met: boolean;
  /** The measured figures behind the verdict. */
  figures: string;
}

/** Clean-phase throughput: completed runs at least this share of the offered ones. */
export const THROUGHPUT_SHARE = 0.98;
/** Latency targets: p95 within this factor of the reference. */
export const P95_FACTOR = 1.5;
/** After the hold ends, p95 must be back within this many seconds. */
export const RECOVERY_SECONDS = 120;
/** A table is flat when it grew at most this share over the last half of the clean phase... */
export const FLAT_SHARE = 0.1;
/** ...or at most this many bytes (small tables move in whole pages). */
export const FLAT_SLACK_BYTES = 256 * 1024;

/** How much one table grew over the last half of the clean phase. */
export interface TableGrowth {
  name: string;
  /** Size at the end of the clean phase's first half. */
  midSize: number;
  /** Size at the end of the clean phase. */
  endSize: number;
  /** Within {@linkcode FLAT_SHARE} or {@linkcode FLAT_SLACK_BYTES}. */
  flat: boolean;
}

/**
 * Growth of every table over the last half of the clean phase, biggest growth first; empty when
 * the clean phase is shorter than two intervals.
 */
export function cleanGrowth(plan: SoakPlan, samples: IntervalSample[]): TableGrowth[] {
  const mid = samples[Math.floor(plan.holdFrom / 2) - 1];
  const end = samples[plan.holdFrom - 1];
  if (plan.holdFrom < 2 || mid === undefined || end === undefined) return [];
  const midSizes = new Map(mid.tables.map((table) => [table.name, table.size]));
  return end.tables.map((table) => {
    const midSize = midSizes.get(table.name) ?? 0;
    const growth = table.size - midSize;
    return {
      name: table.name,
      midSize,
      endSize: table.size,
      flat: growth <= Math.max(midSize * FLAT_SHARE, FLAT_SLACK_BYTES),
    };
  }).sort((a, b) => (b.endSize - b.midSize) - (a.endSize - a.midSize));
}

/**
 * The four targets against the measured intervals, at `rate` runs/s offered. A target
 * whose intervals are missing (the soak stopped early) is not met.
 *
 * @example
 * ```ts ignore
 * import { evaluateTargets } from "./_soak_targets.ts";
 * for (const v of evaluateTargets(plan, samples, 100)) console.log(v.met, v.target, v.figures);
 * ```
 */
export function evaluateTargets(
  plan: SoakPlan,
  samples: IntervalSample[],
  rate: number,
): TargetVerdict[] {
  const clean = samples.filter((sample) => sample.phase === "clean");
  const complete = samples.length === plan.intervals;
  const verdicts: TargetVerdict[] = [];

  const offered = rate * plan.intervalSeconds * plan.holdFrom;
  const completed = clean.reduce((sum, s) => sum + s.completedPerSecond * plan.intervalSeconds, 0);
  const lowest = Math.min(...clean.map((s) => s.completedPerSecond));
  const backlog = clean.at(-1)?.backlog ?? NaN;
  verdicts.push({
    target: "clean phase: throughput equals the offered load",
    met: clean.length === plan.holdFrom && completed >= offered * THROUGHPUT_SHARE &&
      backlog <= rate,
    figures: `${whole(completed)} of ${whole(offered)} offered runs completed ` +
      `(${(completed / offered * 100).toFixed(1)} %, needs ${THROUGHPUT_SHARE * 100} %); ` +
      `lowest interval ${whole(lowest)} runs/s of ${whole(rate)}; backlog at its end ` +
      `${whole(backlog)} runs (needs <= ${whole(rate)}, one second of load)`,
  });

  const first = clean[0]?.p95Ms ?? NaN;
  const last = clean.at(-1)?.p95Ms ?? NaN;
  verdicts.push({
    target: `clean phase: p95 at its end within ${P95_FACTOR}x of its first interval`,
    met: clean.length === plan.holdFrom && last <= first * P95_FACTOR,
    figures: `${duration(first)} first, ${duration(last)} last (${(last / first).toFixed(2)}x)`,
  });

  const window = Math.ceil(RECOVERY_SECONDS / plan.intervalSeconds);
  const recovery = samples.slice(plan.holdTo, plan.holdTo + window);
  const held = samples.filter((sample) => sample.phase === "held");
  const back = recovery.findIndex((sample) => sample.p95Ms <= last * P95_FACTOR);
  verdicts.push({
    target: `after the held xid ends: p95 back within ${P95_FACTOR}x of clean within ` +
      `${RECOVERY_SECONDS / 60} minutes`,
    met: back >= 0,
    figures:
      `clean p95 ${duration(last)}; held p95 up to ${
        held.length === 0 ? "–" : duration(Math.max(...held.map((s) => s.p95Ms)))
      }; first ${recovery.length} recovery intervals ` +
      `${recovery.map((s) => duration(s.p95Ms)).join(", ") || "missing"}; ` +
      (back >= 0
        ? `back in interval ${back + 1} (within ${(back + 1) * plan.intervalSeconds} s)`
        : "not back"),
  });

  const growth = cleanGrowth(plan, samples);
  const grown = growth.filter((table) => !table.flat);
  const largest = growth.slice(0, 3).map((table) =>
    `${table.name} ${bytes(table.midSize)} -> ${bytes(table.endSize)}`
  );
  verdicts.push({
    target: `clean phase: no table grows without bound (over its last half every table grows ` +
      `at most ${FLAT_SHARE * 100} % or ${bytes(FLAT_SLACK_BYTES)})`,
    met: growth.length > 0 && grown.length === 0 && clean.length === plan.holdFrom,
    figures: growth.length === 0
      ? "clean phase shorter than two intervals"
      : `${grown.length} of ${growth.length} tables grew more` +
        (grown.length > 0 ? ` (${grown.map((table) => table.name).join(", ")})` : "") +
        `; largest growth: ${largest.join("; ")}`,
  });
  if (!complete) {
    for (const verdict of verdicts) verdict.figures += " (soak incomplete)";
  }
  return verdicts;
}

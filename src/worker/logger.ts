/**
 * Structured worker logs: one record per event, filtered by level, written as JSON lines unless
 * a custom sink is given. Records never carry message bodies, task inputs or outputs.
 *
 * @module
 */

/**
 * The level a worker logs at and above: `debug` < `info` < `warn` < `error`. Fatal records are
 * always written.
 *
 * @example Usage
 * ```ts
 * import type { LogLevel } from "@sluice/sluice/worker";
 *
 * const level: LogLevel = "warn";
 * ```
 */
export type LogLevel = "debug" | "info" | "warn" | "error";

/**
 * The level of one record: a {@linkcode LogLevel} or `fatal` (the worker stops after it).
 *
 * @example Usage
 * ```ts
 * import type { LogRecordLevel } from "@sluice/sluice/worker";
 *
 * const level: LogRecordLevel = "fatal";
 * ```
 */
export type LogRecordLevel = LogLevel | "fatal";

/**
 * One structured log record. `fields` holds identifiers and counts (worker id, queue, run id,
 * step slug, message ids, durations), never message bodies, inputs or outputs.
 *
 * @example Usage
 * ```ts
 * import type { LogRecord } from "@sluice/sluice/worker";
 *
 * const record: LogRecord = {
 *   time: new Date().toISOString(),
 *   level: "info",
 *   message: "worker started",
 *   fields: { queue: "orders" },
 * };
 * ```
 */
export interface LogRecord {
  /** ISO 8601 timestamp. */
  readonly time: string;
  /** The record's level. */
  readonly level: LogRecordLevel;
  /** A short, constant description of the event. */
  readonly message: string;
  /** Identifiers and counts describing the event. */
  readonly fields: Readonly<Record<string, unknown>>;
}

/**
 * Receives every record at or above the worker's level.
 *
 * @example Usage
 * ```ts
 * import type { LogSink } from "@sluice/sluice/worker";
 *
 * const records: unknown[] = [];
 * const sink: LogSink = (record) => records.push(record);
 * ```
 */
export type LogSink = (record: LogRecord) => void;

const RANK: Record<LogRecordLevel, number> = {
  debug: 10,
  info: 20,
  warn: 30,
  error: 40,
  fatal: 50,
};

/**
 * Writes a record as one JSON line: `debug` and `info` to stdout, `warn` and above to stderr.
 * The default sink of a worker.
 *
 * @param record The record to write.
 *
 * @example Usage
 * ```ts
 * import { jsonLineSink } from "@sluice/sluice/worker";
 *
 * jsonLineSink({ time: new Date().toISOString(), level: "info", message: "hello", fields: {} });
 * // {"time":"...","level":"info","message":"hello"}
 * ```
 */
export function jsonLineSink(record: LogRecord): void {
  const line = JSON.stringify({
    time: record.time,
    level: record.level,
    message: record.message,
    ...record.fields,
  });
  if (RANK[record.level] >= RANK.warn) console.error(line);
  else console.log(line);
}

/** The worker's logger: level filtering and fixed context fields over a sink. */
export class Logger {
  #level: LogLevel;
  #sink: LogSink;
  #minimum: number;
  #context: Readonly<Record<string, unknown>>;

  constructor(level: LogLevel, sink: LogSink, context: Record<string, unknown> = {}) {
    if (!(level in RANK) || level === ("fatal" as LogLevel)) {
      throw new RangeError(
        `Cannot create logger: logLevel must be "debug", "info", "warn" or "error", got ${
          JSON.stringify(level)
        }`,
      );
    }
    this.#level = level;
    this.#sink = sink;
    this.#minimum = RANK[level];
    this.#context = context;
  }

  /** A logger writing to the same sink with more context fields. */
  with(context: Record<string, unknown>): Logger {
    // Through the constructor: private fields exist only on instances it initialized.
    return new Logger(this.#level, this.#sink, { ...this.#context, ...context });
  }

  /** Whether records of this level are written. */
  enabled(level: LogRecordLevel): boolean {
    return RANK[level] >= this.#minimum;
  }

  debug(message: string, fields?: Record<string, unknown>): void {
    this.#write("debug", message, fields);
  }

  info(message: string, fields?: Record<string, unknown>): void {
    this.#write("info", message, fields);
  }

  warn(message: string, fields?: Record<string, unknown>): void {
    this.#write("warn", message, fields);
  }

  error(message: string, fields?: Record<string, unknown>): void {
    this.#write("error", message, fields);
  }

  fatal(message: string, fields?: Record<string, unknown>): void {
    this.#write("fatal", message, fields);
  }

  #write(level: LogRecordLevel, message: string, fields?: Record<string, unknown>): void {
    if (RANK[level] < this.#minimum && level !== "fatal") return;
    const record: LogRecord = {
      time: new Date().toISOString(),
      level,
      message,
      fields: { ...this.#context, ...fields },
    };
    try {
      this.#sink(record);
    } catch {
      // A failing sink must not take the worker down with it.
    }
  }
}

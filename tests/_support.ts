// Test support shared by the worker, Edge and other end-to-end tests.
import type { LogRecord } from "../src/worker/mod.ts";

/** Captures the log records of every worker or handler it is given to. */
export class LogCapture {
  readonly records: LogRecord[] = [];
  readonly sink = (record: LogRecord): void => {
    this.records.push(record);
  };

  /** Records with this level (and message substring). */
  find(level: LogRecord["level"], message = ""): LogRecord[] {
    return this.records.filter((r) => r.level === level && r.message.includes(message));
  }

  /** All records as one JSON text, to search for things that must never be logged. */
  text(): string {
    return this.records.map((r) => JSON.stringify(r)).join("\n");
  }
}

/**
 * The one factor every time budget of the suite is multiplied by: `SLUICE_TEST_TIME_SCALE` (a
 * positive number), else 3 when `CI=true` (shared runners under load), else 1. A budget is the
 * time the behaviour under test needs on an idle machine; a loaded machine raises the factor
 * instead of each test guessing its own slack.
 */
export const TIME_SCALE: number = readTimeScale();

/** The variable held something other than a positive number. */
export class TimeScaleError extends Error {
  override name = "TimeScaleError";
  /** The offending value of `SLUICE_TEST_TIME_SCALE`. */
  readonly value: string;
  constructor(value: string) {
    super(
      `SLUICE_TEST_TIME_SCALE must be a positive number (e.g. 1, 2.5, 4), got ${
        JSON.stringify(value)
      }`,
    );
    this.value = value;
  }
}

function readTimeScale(): number {
  const raw = Deno.env.get("SLUICE_TEST_TIME_SCALE");
  if (raw === undefined || raw.trim() === "") return Deno.env.get("CI") === "true" ? 3 : 1;
  const factor = Number(raw);
  if (!Number.isFinite(factor) || factor <= 0) throw new TimeScaleError(raw);
  return factor;
}

/** `ms` multiplied by {@linkcode TIME_SCALE}: a budget or timeout a test hands to sluice. */
export function scaled(ms: number): number {
  return Math.round(ms * TIME_SCALE);
}

/** What to print about the state under test when a wait expires (task rows, a worker's log). */
export type Describe = () => unknown | Promise<unknown>;

/** The default budget of {@linkcode waitUntil}: a few polls and round trips of an idle machine. */
export const DEFAULT_BUDGET_MS = 15_000;

/**
 * Polls `check` until it returns a truthy value; throws after `budgetMs` (times
 * {@linkcode TIME_SCALE}), with `describe()`'s output in the error.
 */
export async function waitUntil<T>(
  check: () => T | Promise<T>,
  what: string,
  budgetMs = DEFAULT_BUDGET_MS,
  describe?: Describe,
): Promise<NonNullable<T>> {
  const limit = scaled(budgetMs);
  const deadline = Date.now() + limit;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw await timeoutError(what, limit, describe);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Rejects when `promise` has not settled within `budgetMs` (times {@linkcode TIME_SCALE}),
 * instead of hanging the suite; the error carries `describe()`'s output.
 */
export async function within<T>(
  promise: Promise<T>,
  what: string,
  budgetMs: number,
  describe?: Describe,
): Promise<T> {
  const limit = scaled(budgetMs);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => timeoutError(what, limit, describe).then(reject, reject), limit);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

async function timeoutError(what: string, limit: number, describe?: Describe): Promise<Error> {
  let state = "";
  if (describe) {
    try {
      const described = await describe();
      state = `\nState at expiry:\n${
        typeof described === "string" ? described : JSON.stringify(described, bigints, 2)
      }`;
    } catch (error) {
      state = `\n(describe() failed: ${error instanceof Error ? error.message : String(error)})`;
    }
  }
  return new Error(
    `Timed out after ${limit} ms (SLUICE_TEST_TIME_SCALE=${TIME_SCALE}) waiting for ${what}${state}`,
  );
}

function bigints(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? value.toString() : value;
}

/** A promise with its resolve function, for handlers that wait for the test. */
export function latch<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => resolve = r);
  return { promise, resolve };
}

/** A unique flow slug per test, so parallel tests never share queues. */
export function uniqueSlug(prefix: string): string {
  return `${prefix}_${crypto.randomUUID().replaceAll("-", "").slice(0, 8)}`;
}

/** Reads a byte stream (a child process's stdout) line by line; `null` at its end. */
export function lineReader(stream: ReadableStream<Uint8Array>): { next(): Promise<string | null> } {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  return {
    async next() {
      for (;;) {
        const newline = buffer.indexOf("\n");
        if (newline >= 0) {
          const line = buffer.slice(0, newline);
          buffer = buffer.slice(newline + 1);
          return line;
        }
        const { value, done } = await reader.read();
        if (done) {
          const rest = buffer;
          buffer = "";
          return rest === "" ? null : rest;
        }
        buffer += value;
      }
    },
  };
}

/**
 * Blocks the event loop for `ms`, so that I/O completes and timers fall due meanwhile and the next
 * turn of the loop handles them together (tests of the turn's ordering, not of durations).
 */
export function blockEventLoop(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) { /* blocking on purpose */ }
}

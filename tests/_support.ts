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

/** Polls `check` until it returns a truthy value; throws after `timeoutMs`. */
export async function waitUntil<T>(
  check: () => T | Promise<T>,
  what: string,
  timeoutMs = 15_000,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) {
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Rejects when `promise` has not settled within 15 s, instead of hanging the suite. */
export async function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Timed out waiting for ${what}`)), 15_000);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
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

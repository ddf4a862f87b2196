/**
 * Short texts for people, the one place both the dashboard and the command line format times and
 * durations: timestamps, durations, truncated JSON.
 *
 * @module
 */

/**
 * A timestamp as ISO 8601 in UTC to the second (the command line's tables, which scripts read),
 * `-` when absent.
 *
 * @example Usage
 * ```ts
 * import { formatIsoTime } from "./format.ts";
 *
 * formatIsoTime(new Date("2026-11-30T12:00:00.123Z")); // "2026-11-30T12:00:00Z"
 * ```
 */
export function formatIsoTime(value: Date | null): string {
  return value === null ? "-" : value.toISOString().replace(/\.\d{3}Z$/, "Z");
}

/**
 * A timestamp in UTC to the second, `-` when absent.
 *
 * @example Usage
 * ```ts
 * import { formatTime } from "./format.ts";
 *
 * formatTime(new Date("2026-11-30T12:00:00.123Z")); // "2026-11-30 12:00:00Z"
 * ```
 */
export function formatTime(value: Date | null): string {
  return value === null ? "-" : value.toISOString().replace("T", " ").replace(/\.\d{3}Z$/, "Z");
}

/**
 * A number of seconds as `850ms`, `4.2s`, `3m 4s` or `2h 5m`.
 *
 * @example Usage
 * ```ts
 * import { formatSeconds } from "./format.ts";
 *
 * formatSeconds(184); // "3m 4s"
 * ```
 */
export function formatSeconds(seconds: number): string {
  if (seconds < 1) return `${Math.round(seconds * 1000)}ms`;
  if (seconds < 60) return `${seconds.toFixed(1)}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ${Math.floor(seconds % 60)}s`;
  return `${Math.floor(seconds / 3600)}h ${Math.floor((seconds % 3600) / 60)}m`;
}

/**
 * The time from `start` to `end` (or to now, marked `+`), `-` without a start.
 *
 * @example Usage
 * ```ts
 * import { formatDuration } from "./format.ts";
 *
 * formatDuration(new Date(0), new Date(1500)); // "1.5s"
 * ```
 */
export function formatDuration(start: Date | null, end: Date | null): string {
  if (start === null) return "-";
  const text = formatSeconds(((end ?? new Date()).getTime() - start.getTime()) / 1000);
  return end === null ? `${text}+` : text;
}

/** A JSON value as pretty text and whether {@linkcode jsonPreview} cut it. */
export interface JsonPreview {
  /** The first line(s), at most `limit` characters. */
  readonly preview: string;
  /** The whole text, at most `max` characters. */
  readonly full: string;
  /** Whether `preview` is shorter than the whole text. */
  readonly cut: boolean;
  /** Whether `full` was cut at `max` characters. */
  readonly capped: boolean;
}

/**
 * A JSON value for a table cell: a one-line preview and the pretty-printed whole (capped at `max`
 * characters so a huge map output cannot swell the page).
 *
 * @example Usage
 * ```ts
 * import { jsonPreview } from "./format.ts";
 *
 * jsonPreview({ a: 1 }, 80, 65536).preview; // '{"a":1}'
 * ```
 */
export function jsonPreview(value: unknown, limit: number, max: number): JsonPreview {
  const compact = JSON.stringify(value) ?? "null";
  const pretty = JSON.stringify(value, null, 2) ?? "null";
  return {
    preview: compact.length <= limit ? compact : `${compact.slice(0, limit - 1)}…`,
    full: pretty.length <= max ? pretty : pretty.slice(0, max),
    cut: compact.length > limit,
    capped: pretty.length > max,
  };
}

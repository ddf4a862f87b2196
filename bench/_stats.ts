/**
 * Order statistics and number formatting for benchmark reports.
 *
 * @module
 */

/**
 * The `p`-quantile (0..1) of `values` by linear interpolation between the nearest ranks.
 *
 * @example
 * ```ts
 * import { quantile } from "./_stats.ts";
 * console.log(quantile([1, 2, 3, 4], 0.5)); // 2.5
 * ```
 */
export function quantile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (sorted.length - 1) * p;
  const low = Math.floor(rank);
  const high = Math.ceil(rank);
  return sorted[low] + (sorted[high] - sorted[low]) * (rank - low);
}

/**
 * The median of `values`.
 *
 * @example
 * ```ts
 * import { median } from "./_stats.ts";
 * console.log(median([3, 1, 2])); // 2
 * ```
 */
export function median(values: number[]): number {
  return quantile(values, 0.5);
}

/**
 * `value` with thousands separators and no decimals: `1,523`.
 *
 * @example
 * ```ts
 * import { whole } from "./_stats.ts";
 * console.log(whole(1523.4)); // 1,523
 * ```
 */
export function whole(value: number): string {
  return Math.round(value).toLocaleString("en-US");
}

/**
 * Milliseconds for a report: one decimal below 10 ms, whole above, seconds from 10 s on.
 *
 * @example
 * ```ts
 * import { duration } from "./_stats.ts";
 * console.log(duration(3.14), duration(420), duration(12345)); // 3.1 ms 420 ms 12.3 s
 * ```
 */
export function duration(ms: number): string {
  if (ms < 10) return `${ms.toFixed(1)} ms`;
  if (ms < 10_000) return `${Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(1)} s`;
}

/**
 * A markdown table.
 *
 * @example
 * ```ts
 * import { markdownTable } from "./_stats.ts";
 * console.log(markdownTable(["a", "b"], [["1", "2"]]));
 * ```
 */
export function markdownTable(header: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

/**
 * A byte count for a report, in binary units: `8 kB`, `1.4 MB`, `2.10 GB`.
 *
 * @example
 * ```ts
 * import { bytes } from "./_stats.ts";
 * console.log(bytes(8192), bytes(1_500_000)); // 8 kB 1.4 MB
 * ```
 */
export function bytes(value: number): string {
  if (value < 1024 * 1024) return `${Math.round(value / 1024)} kB`;
  if (value < 1024 ** 3) return `${(value / 1024 ** 2).toFixed(1)} MB`;
  return `${(value / 1024 ** 3).toFixed(2)} GB`;
}

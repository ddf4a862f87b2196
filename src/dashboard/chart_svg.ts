/**
 * Small charts of a flow's last hour, one value per minute, as SVG: stacked bars for counts
 * (runs completed and failed) or bars for one count, and a line for a duration. The axis says its
 * maximum; every minute has a tooltip with its time and values.
 *
 * @module
 */

import { type Html, markup } from "./escape.ts";
import { formatSeconds, formatTime } from "./format.ts";

/** One series of a chart: a value per minute (`null`: nothing in that minute). */
export interface ChartSeries {
  /** What it counts, in words: the legend and the tooltips. */
  readonly name: string;
  /** Its class (its colour), e.g. `completed`. */
  readonly cls: string;
  /** One value per minute, oldest first. */
  readonly values: readonly (number | null)[];
}

/** A chart: its title, its minutes, and its series stacked as bars or drawn as one line. */
export interface Chart {
  /** The element id (`chart-<id>`) and `data-chart`. */
  readonly id: string;
  /** The heading above it. */
  readonly title: string;
  /** The start of each minute, oldest first. */
  readonly minutes: readonly Date[];
  /** The series; `bars` stacks them, `line` draws the first. */
  readonly series: readonly ChartSeries[];
  /** How the values are drawn. */
  readonly kind: "bars" | "line";
  /** Values are seconds (formatted as durations), else counts. */
  readonly seconds?: boolean;
}

const WIDTH = 270;
const HEIGHT = 90;
const LEFT = 34;
const TOP = 8;
const BOTTOM = 16;

/**
 * Draws one chart: `<figure class="chart" data-chart>` with its title, the SVG (each minute a
 * `<g class="minute">` with `data-minute` and a tooltip) and its legend.
 *
 * @example Usage
 * ```ts
 * import { chartSvg } from "./chart_svg.ts";
 *
 * const minutes = [new Date("2026-12-01T10:00Z"), new Date("2026-12-01T10:01Z")];
 * chartSvg({
 *   id: "runs",
 *   title: "Runs finished per minute",
 *   minutes,
 *   kind: "bars",
 *   series: [{ name: "completed", cls: "completed", values: [3, 5] }],
 * });
 * ```
 */
export function chartSvg(chart: Chart): Html {
  const { minutes, series } = chart;
  const format = (value: number) => chart.seconds === true ? formatSeconds(value) : `${value}`;
  const totals = minutes.map((_, i) =>
    chart.kind === "bars"
      ? series.reduce((sum, s) => sum + (s.values[i] ?? 0), 0)
      : (series[0]?.values[i] ?? 0)
  );
  const max = Math.max(0, ...totals);
  const plotHeight = HEIGHT - TOP - BOTTOM;
  const step = (WIDTH - LEFT - 4) / Math.max(1, minutes.length);
  const y = (value: number) => TOP + plotHeight - (max === 0 ? 0 : value / max * plotHeight);
  const groups = minutes.map((minute, i) => {
    const x = LEFT + i * step;
    const words = series.map((s) =>
      `${s.name} ${s.values[i] === null ? "-" : format(s.values[i] ?? 0)}`
    ).join(", ");
    const stacked = { top: 0 };
    const bars = chart.kind === "bars" && series.map((s) => {
      const value = s.values[i] ?? 0;
      if (value === 0) return "";
      const [from, to] = [y(stacked.top), y(stacked.top + value)];
      stacked.top += value;
      return markup`<rect class="c-${s.cls}" x="${x + 0.5}" y="${to}" width="${
        Math.max(1, step - 1)
      }" height="${from - to}"/>`;
    });
    const value = series[0]?.values[i];
    const dot = chart.kind === "line" && value !== null && value !== undefined &&
      markup`<circle class="c-${series[0].cls}" cx="${x + step / 2}" cy="${y(value)}" r="1.8"/>`;
    return markup`<g class="minute" data-minute="${minute.toISOString()}"><title>${
      formatTime(minute)
    }: ${words}</title><rect class="hit" x="${x}" y="${TOP}" width="${step}" height="${plotHeight}"/>${bars}${dot}</g>`;
  });
  const points = chart.kind === "line" &&
    (series[0]?.values ?? []).map((value, i) =>
      value === null ? null : `${LEFT + i * step + step / 2},${y(value)}`
    ).filter((point) => point !== null);
  const line = points !== false && points.length > 1 &&
    markup`<polyline class="c-${series[0].cls}" points="${points.join(" ")}"/>`;
  const legend = series.map((s) => markup`<span class="key c-${s.cls}"></span> ${s.name} `);
  return markup`<figure class="chart" id="chart-${chart.id}" data-chart="${chart.id}" data-max="${max}">
<figcaption>${chart.title}</figcaption>
<svg role="img" aria-label="${chart.title}" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}">
<line class="axis" x1="${LEFT}" y1="${TOP + plotHeight}" x2="${WIDTH - 4}" y2="${
    TOP + plotHeight
  }"/>
<text class="axis" x="${LEFT - 4}" y="${TOP + 8}" text-anchor="end">${format(max)}</text>
<text class="axis" x="${LEFT - 4}" y="${TOP + plotHeight}" text-anchor="end">0</text>
<text class="axis" x="${LEFT}" y="${HEIGHT - 3}">-60m</text>
<text class="axis" x="${LEFT + (WIDTH - LEFT) / 2}" y="${
    HEIGHT - 3
  }" text-anchor="middle">-30m</text>
<text class="axis" x="${WIDTH - 4}" y="${HEIGHT - 3}" text-anchor="end">now</text>
${groups}${line}</svg><div class="muted">${legend}</div></figure>`;
}

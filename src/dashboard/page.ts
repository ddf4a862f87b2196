/**
 * The frame every dashboard page shares: head, style sheet, navigation.
 *
 * @module
 */

import { Html, markup } from "./escape.ts";

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:8px 16px;display:flex;gap:16px;align-items:center}
header a{color:#cfe0ff;text-decoration:none}header b{margin-right:12px}
main{padding:12px 16px;max-width:1400px}
h1{font-size:20px;margin:8px 0}h2{font-size:16px;margin:18px 0 6px}
table{border-collapse:collapse;background:#fff;margin-bottom:8px}
th,td{border:1px solid #dde1e7;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#eef1f5;font-weight:600}td.num{text-align:right}
tr.alert td{background:#fff0f0}
.badge{display:inline-block;padding:0 6px;border-radius:8px;font-size:12px;border:1px solid #999}
.s-created,.s-queued{--c:#e4e7ec}.s-started{--c:#cfe2ff}.s-completed{--c:#d3f2d9}
.s-failed{--c:#ffd6d6}.s-skipped{--c:#fdf1c7}.s-cancelled{--c:#d9d9d9}.s-waiting{--c:#e6dcfa}
.badge[class*=" s-"]{background:var(--c)}
.missing{color:#b00020;font-weight:600}
pre{margin:0;white-space:pre-wrap;word-break:break-word;max-height:400px;overflow:auto}
.error{color:#b00020}
svg.dag{background:#fff;border:1px solid #dde1e7;display:block;margin:6px 0;max-width:100%;height:auto}
svg.dag .node rect{fill:var(--c);stroke:#59606e}
svg.dag .node.s-failed rect{stroke:#b00020;stroke-width:2}
svg.dag .node.s-skipped rect{stroke-dasharray:4 3}
svg.dag .node.s-waiting rect{stroke:#6a4bb0;stroke-dasharray:1 3;stroke-width:2}
svg.dag .node.wait:not(.s-waiting) rect{stroke:#6a4bb0}
.wait{font-size:12px;word-break:break-all}
svg.dag text{font:12px system-ui,sans-serif}svg.dag .slug{font-weight:600}
svg.dag .edge{fill:none;stroke:#8a93a3;stroke-width:1.5}
svg.timeline{background:#fff;border:1px solid #dde1e7;display:block;width:100%;max-width:1000px;height:auto}
svg.timeline text{font:11px system-ui,sans-serif;fill:#1d2330}svg.timeline text.tick{fill:#687080}
svg.timeline line.tick{stroke:#eef1f5}svg.timeline .lane:nth-child(even){fill:#fafbfc}
.bar.queued,.key.queued{fill:#e4e7ec;background:#e4e7ec}
.bar.attempt,.key.attempt{fill:var(--c,#cfe2ff);stroke:#59606e;stroke-width:.5;background:#cfe2ff}
.bar.retries,.key.retries{fill:#fde2c4;stroke:#c77a1a;stroke-dasharray:3 2;background:#fde2c4}
.bar.backoff,.key.backoff{fill:#fff;stroke:#c77a1a;stroke-dasharray:2 2;background:#fff}
.bar.wait,.key.wait{fill:#e6dcfa;stroke:#6a4bb0;background:#e6dcfa}
line.cancel{stroke:#b00020;stroke-width:3}.key.cancel{background:#b00020}
line.run-end{stroke:#1d2330;stroke-dasharray:4 3}
.key{display:inline-block;width:18px;height:10px;border:1px solid #999;vertical-align:middle}
.charts{display:flex;flex-wrap:wrap;gap:12px}
figure.chart{margin:0;background:#fff;border:1px solid #dde1e7;padding:4px 6px}
figure.chart figcaption{font-weight:600;font-size:12px}
figure.chart svg{display:block;max-width:100%;height:auto}
figure.chart text{font:10px system-ui,sans-serif;fill:#687080}
figure.chart line.axis{stroke:#b8bec8}figure.chart .hit{fill:transparent}
figure.chart polyline{fill:none;stroke-width:1.5}
.c-completed{fill:#58b26a;stroke:#58b26a;background:#58b26a}
.c-failed{fill:#d9534f;stroke:#d9534f;background:#d9534f}
.c-tasks{fill:#4a7fd4;stroke:#4a7fd4;background:#4a7fd4}
.c-run-p95,.c-task-p95{fill:#6a4bb0;stroke:#6a4bb0;background:#6a4bb0}
form.inline{display:inline}button{cursor:pointer}
.filters input,.filters select{margin-right:8px}
.muted{color:#687080}
.scroll{overflow-x:auto;max-width:100%}
`;

/**
 * A whole page: the title, the navigation and `body`.
 *
 * @param title The page title (escaped).
 * @param body The page content.
 * @returns The HTML document.
 *
 * @example Usage
 * ```ts
 * import { markup } from "./escape.ts";
 * import { page } from "./page.ts";
 *
 * const doc = page("Overview", markup`<h1>Overview</h1>`);
 * ```
 */
export function page(title: string, body: Html): string {
  return String(markup`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${title} · sluice</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>${new Html(STYLE)}</style></head>
<body><header><b>sluice</b><a href="./">Overview</a><a href="runs">Runs</a><a href="schedules">Schedules</a><a href="signals">Signals</a></header>
<main>${body}</main></body></html>`);
}

/**
 * `doc`, a {@linkcode page}, with a `<base>` element: its relative links resolve under `basePath`.
 *
 * @param doc A document made by {@linkcode page}.
 * @param basePath The dashboard's base path with its trailing slash, e.g. `/0f3a/`.
 * @returns The document with `<base href>` first in its head.
 *
 * @example Usage
 * ```ts
 * import { markup } from "./escape.ts";
 * import { page, withBase } from "./page.ts";
 *
 * const doc = withBase(page("Overview", markup`<h1>Overview</h1>`), "/0f3a/");
 * ```
 */
export function withBase(doc: string, basePath: string): string {
  return doc.replace("<head>", String(markup`<head><base href="${basePath}">`));
}

/**
 * A status as a coloured badge that also says it in words.
 *
 * @example Usage
 * ```ts
 * import { statusBadge } from "./page.ts";
 *
 * statusBadge("failed"); // <span class="badge s-failed">failed</span>
 * ```
 */
export function statusBadge(status: string): Html {
  return markup`<span class="badge s-${status}">${status}</span>`;
}

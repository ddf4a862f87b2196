/**
 * A flow's DAG as SVG: steps laid out in columns by dependency depth (a step sits one column right
 * of its deepest dependency), edges drawn from each dependency to its dependent.
 *
 * @module
 */

import { type Html, markup } from "./escape.ts";

/** One step to draw. */
export interface DagNode {
  /** The step slug (its identity in the graph). */
  readonly slug: string;
  /** The slugs of the steps it depends on; each must come earlier in the list. */
  readonly deps: readonly string[];
  /** Its state, e.g. `completed`: the node's colour class and `data-status`. */
  readonly status: string;
  /** The second line of text, e.g. `started · 312/1000`: the state in words, not colour alone. */
  readonly label: string;
  /** More than the node has room for (a wait's key or due time): added to its tooltip. */
  readonly detail?: string;
}

const NODE_WIDTH = 190;
const NODE_HEIGHT = 50;
const GAP_X = 60;
const GAP_Y = 18;
const PAD = 10;
/** Slugs longer than this are cut in the node; the full slug is its tooltip. */
const MAX_SLUG_CHARS = 24;

/** Where each node goes: column by depth, row by definition order within the column. */
function layout(nodes: readonly DagNode[]): Map<string, { x: number; y: number }> {
  const depth = new Map<string, number>();
  const rows: number[] = [];
  const positions = new Map<string, { x: number; y: number }>();
  for (const node of nodes) {
    const column = Math.max(-1, ...node.deps.map((dep) => depth.get(dep) ?? -1)) + 1;
    depth.set(node.slug, column);
    const row = rows[column] ?? 0;
    rows[column] = row + 1;
    positions.set(node.slug, {
      x: PAD + column * (NODE_WIDTH + GAP_X),
      y: PAD + row * (NODE_HEIGHT + GAP_Y),
    });
  }
  return positions;
}

function shorten(slug: string): string {
  return slug.length <= MAX_SLUG_CHARS ? slug : `${slug.slice(0, MAX_SLUG_CHARS - 1)}…`;
}

/**
 * Draws the steps as an SVG graph. Every node is a `<g class="node">` with `data-step` and
 * `data-status`; its text says the slug and the label.
 *
 * @param nodes The steps in definition order (dependencies first).
 * @returns The `<svg>` element.
 *
 * @example Usage
 * ```ts
 * import { dagSvg } from "./dag_svg.ts";
 *
 * const svg = dagSvg([
 *   { slug: "fetch", deps: [], status: "completed", label: "completed" },
 *   { slug: "classify", deps: ["fetch"], status: "started", label: "started · 3/10" },
 * ]);
 * ```
 */
export function dagSvg(nodes: readonly DagNode[]): Html {
  const positions = layout(nodes);
  const width = Math.max(0, ...[...positions.values()].map((p) => p.x + NODE_WIDTH + PAD));
  const height = Math.max(0, ...[...positions.values()].map((p) => p.y + NODE_HEIGHT + PAD));
  const edges = nodes.flatMap((node) =>
    node.deps.map((dep) => {
      const from = positions.get(dep)!;
      const to = positions.get(node.slug)!;
      const [x1, y1] = [from.x + NODE_WIDTH, from.y + NODE_HEIGHT / 2];
      const [x2, y2] = [to.x, to.y + NODE_HEIGHT / 2];
      const bend = (x2 - x1) / 2;
      const d = `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`;
      return markup`<path class="edge" d="${d}" marker-end="url(#arrow)"/>`;
    })
  );
  const boxes = nodes.map((node) => {
    const { x, y } = positions.get(node.slug)!;
    return markup`<g class="node s-${node.status}" data-step="${node.slug}" data-status="${node.status}">
<title>${node.slug}: ${node.label}${node.detail === undefined ? "" : ` · ${node.detail}`}</title>
<rect x="${x}" y="${y}" width="${NODE_WIDTH}" height="${NODE_HEIGHT}" rx="6"/>
<text class="slug" x="${x + 10}" y="${y + 20}">${shorten(node.slug)}</text>
<text class="label" x="${x + 10}" y="${y + 38}">${node.label}</text></g>`;
  });
  return markup`<svg class="dag" role="img" aria-label="step graph" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">
<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z"/></marker></defs>
${edges}${boxes}</svg>`;
}

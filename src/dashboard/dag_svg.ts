/**
 * A flow's DAG as SVG, laid out in layers: a step sits one column right of its deepest
 * dependency; within a column steps are ordered by where their dependencies sit (fewer
 * crossings). Columns beyond {@linkcode MAX_COLUMNS} wrap into a band below, with the edges that
 * cross bands routed through the gap between them; the SVG scales down to the page's width
 * (`viewBox`), so no flow scrolls the page sideways.
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
  /** A wait step (sleep, signal, subflow): drawn with the wait outline, `data-wait`. */
  readonly wait?: boolean;
}

const NODE_WIDTH = 180;
const NODE_HEIGHT = 48;
const GAP_X = 44;
const GAP_Y = 16;
const BAND_GAP = 36;
const PAD = 10;
/** Left and right: room for the edges that cross bands, which run beside the outer columns. */
const PAD_X = GAP_X / 2 + 6;
/**
 * Columns per band: five fit the dashboard's 1,400-pixel content width unscaled; more wrap.
 */
export const MAX_COLUMNS = 5;
/** Slugs longer than this are cut in the node; the full slug is its tooltip. */
const MAX_SLUG_CHARS = 22;

interface Position {
  readonly x: number;
  readonly y: number;
  readonly band: number;
}

interface Layout {
  readonly positions: Map<string, Position>;
  /** The bottom of each band, for routing the edges that leave it. */
  readonly bandBottoms: number[];
  readonly width: number;
  readonly height: number;
}

/** Columns by depth, rows ordered by the mean row of each step's dependencies, bands wrapped. */
function layout(nodes: readonly DagNode[]): Layout {
  const depth = new Map<string, number>();
  const columns: DagNode[][] = [];
  for (const node of nodes) {
    const column = Math.max(-1, ...node.deps.map((dep) => depth.get(dep) ?? -1)) + 1;
    depth.set(node.slug, column);
    (columns[column] ??= []).push(node);
  }
  const rowOf = new Map<string, number>();
  for (const column of columns) {
    const weight = (node: DagNode) =>
      node.deps.length === 0
        ? -1
        : node.deps.reduce((sum, dep) => sum + (rowOf.get(dep) ?? 0), 0) / node.deps.length;
    // Stable: ties keep definition order.
    column.map((node, index) => ({ node, index, weight: weight(node) }))
      .sort((a, b) => a.weight - b.weight || a.index - b.index)
      .forEach(({ node }, row) => rowOf.set(node.slug, row));
  }
  const positions = new Map<string, Position>();
  const bandBottoms: number[] = [];
  let top = PAD;
  for (let band = 0; band * MAX_COLUMNS < columns.length; band++) {
    const inBand = columns.slice(band * MAX_COLUMNS, (band + 1) * MAX_COLUMNS);
    const rows = Math.max(...inBand.map((column) => column.length));
    const bandHeight = rows * NODE_HEIGHT + (rows - 1) * GAP_Y;
    inBand.forEach((column, c) => {
      // Shorter columns are centred on the band.
      const offset = (bandHeight - (column.length * NODE_HEIGHT + (column.length - 1) * GAP_Y)) /
        2;
      for (const node of column) {
        positions.set(node.slug, {
          x: PAD_X + c * (NODE_WIDTH + GAP_X),
          y: top + offset + rowOf.get(node.slug)! * (NODE_HEIGHT + GAP_Y),
          band,
        });
      }
    });
    bandBottoms.push(top + bandHeight);
    top += bandHeight + BAND_GAP;
  }
  const used = Math.min(MAX_COLUMNS, columns.length);
  return {
    positions,
    bandBottoms,
    width: used === 0 ? 0 : PAD_X * 2 + used * NODE_WIDTH + (used - 1) * GAP_X,
    height: bandBottoms.length === 0 ? 0 : bandBottoms.at(-1)! + PAD,
  };
}

function shorten(slug: string): string {
  return slug.length <= MAX_SLUG_CHARS ? slug : `${slug.slice(0, MAX_SLUG_CHARS - 1)}…`;
}

/**
 * An edge: a curve within a band; across bands, right, down through the gap (each crossing edge
 * on its own track, `lane`), left, down.
 */
function edgePath(
  from: Position,
  to: Position,
  bandBottoms: readonly number[],
  lane: number,
): string {
  const [x1, y1] = [from.x + NODE_WIDTH, from.y + NODE_HEIGHT / 2];
  const [x2, y2] = [to.x, to.y + NODE_HEIGHT / 2];
  if (from.band === to.band) {
    const bend = (x2 - x1) / 2;
    return `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`;
  }
  const gapY = bandBottoms[from.band] + 9 + (lane % 4) * 6;
  const [out, into] = [x1 + GAP_X / 2, x2 - GAP_X / 2];
  return `M${x1},${y1} H${out} V${gapY} H${into} V${y2} H${x2}`;
}

/**
 * Draws the steps as an SVG graph. Every node is a `<g class="node">` with `data-step` and
 * `data-status` (and `data-wait` for a wait step); its text says the slug and the label.
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
  const { positions, bandBottoms, width, height } = layout(nodes);
  const crossing = { count: 0 };
  const edges = nodes.flatMap((node) =>
    node.deps.map((dep) => {
      const [from, to] = [positions.get(dep)!, positions.get(node.slug)!];
      const lane = from.band === to.band ? 0 : crossing.count++;
      const d = edgePath(from, to, bandBottoms, lane);
      return markup`<path class="edge" d="${d}" marker-end="url(#arrow)"/>`;
    })
  );
  const boxes = nodes.map((node) => {
    const { x, y } = positions.get(node.slug)!;
    return markup`<g class="node s-${node.status}${
      node.wait === true && " wait"
    }" data-step="${node.slug}" data-status="${node.status}"${
      node.wait === true && markup` data-wait="true"`
    }>
<title>${node.slug}: ${node.label}${node.detail === undefined ? "" : ` · ${node.detail}`}</title>
<rect x="${x}" y="${y}" width="${NODE_WIDTH}" height="${NODE_HEIGHT}" rx="${
      node.wait === true ? 18 : 6
    }"/>
<text class="slug" x="${x + 10}" y="${y + 20}">${shorten(node.slug)}</text>
<text class="label" x="${x + 10}" y="${y + 37}">${node.label}</text></g>`;
  });
  return markup`<svg class="dag" role="img" aria-label="step graph" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">
<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z"/></marker></defs>
${edges}${boxes}</svg>`;
}

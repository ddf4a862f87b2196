// Handler input/output inference through chains, maps, conditions and skippable dependencies.
// Checked by `deno check tests/types/`, never run.

import type { Sql } from "postgres";
import { Flow, type StepInput, type StepOutput, type WhenPolicy } from "../../mod.ts";
import type { Equals } from "./_equals.ts";

type Order = { id: number; status: "new" | "paid"; lines: { sku: string; qty: number }[] };

// A chain: root input, dependency objects with exact output types, async handlers.
export const chain = new Flow<Order>({ slug: "chain" })
  .step({ slug: "load" }, (input) => {
    const _input: Equals<typeof input, Order> = true;
    return { id: input.id, skus: input.lines.map((line) => line.sku) };
  })
  .step({ slug: "price", dependsOn: ["load"] }, async (deps) => {
    const _deps: Equals<typeof deps, { load: { id: number; skus: string[] } }> = true;
    return await Promise.resolve(deps.load.skus.length * 10);
  })
  .step({ slug: "summary", dependsOn: ["price", "load"] }, (deps) => {
    const _deps: Equals<typeof deps, { load: { id: number; skus: string[] }; price: number }> =
      true;
    return deps.price > 100 ? { ok: true as const } : { ok: false as const, reason: "cheap" };
  });

const _load: Equals<StepOutput<typeof chain, "load">, { id: number; skus: string[] }> = true;
const _price: Equals<StepOutput<typeof chain, "price">, number> = true;
const _summary: Equals<
  StepOutput<typeof chain, "summary">,
  { ok: true; reason?: undefined } | { ok: false; reason: string }
> = true;
const _rootInput: Equals<StepInput<typeof chain, "load">, Order> = true;

// Maps: over the flow input, over an array step, over a single step returning an array.
export const maps = new Flow<{ url: string; size: number }[]>({ slug: "maps" })
  .map({ slug: "each" }, (item) => {
    const _item: Equals<typeof item, { url: string; size: number }> = true;
    return item.url;
  })
  .array({ slug: "pages", dependsOn: ["each"] }, (deps) => {
    const _deps: Equals<typeof deps, { each: string[] }> = true;
    return deps.each.map((url, index) => ({ url, page: index }));
  })
  .map({ slug: "fetch", array: "pages" }, async (page) => {
    const _page: Equals<typeof page, { url: string; page: number }> = true;
    return await Promise.resolve({ bytes: page.page * 2 });
  })
  .step({ slug: "tags" }, () => ["a", "b"])
  .map({ slug: "tag_length", array: "tags", dependsOn: ["tags"] }, (tag) => {
    const _tag: Equals<typeof tag, string> = true;
    return tag.length;
  })
  .step({ slug: "total", dependsOn: ["fetch", "tag_length"] }, (deps) => {
    const _deps: Equals<typeof deps, { fetch: { bytes: number }[]; tag_length: number[] }> = true;
    return deps.fetch.length + deps.tag_length.length;
  });

const _eachOut: Equals<StepOutput<typeof maps, "each">, string[]> = true;
const _eachIn: Equals<StepInput<typeof maps, "each">, { url: string; size: number }> = true;
const _fetchIn: Equals<StepInput<typeof maps, "fetch">, { url: string; page: number }> = true;
const _fetchOut: Equals<StepOutput<typeof maps, "fetch">, { bytes: number }[]> = true;
const _pagesIn: Equals<StepInput<typeof maps, "pages">, { each: string[] }> = true;

// Skippable dependencies are optional keys; everything else is required.
declare const policy: WhenPolicy;
export const conditions = new Flow<Order>({ slug: "conditions" })
  .step({ slug: "if_skip", if: { status: "paid" } }, () => 1)
  .step({ slug: "if_not_skip", ifNot: { status: "new" }, whenUnmet: "skip" }, () => 2)
  .step({ slug: "if_fail", if: { status: "paid" }, whenUnmet: "fail" }, () => 3)
  .step({ slug: "if_cascade", if: { status: "paid" }, whenUnmet: "skip-cascade" }, () => 4)
  .step({ slug: "no_condition", whenUnmet: "skip" }, () => 5)
  .step({ slug: "exhausted_skip", whenExhausted: "skip" }, () => 6)
  .step({ slug: "exhausted_cascade", whenExhausted: "skip-cascade" }, () => 7)
  .step(
    { slug: "exhausted_fail", whenExhausted: "fail", if: { id: 1 }, whenUnmet: "fail" },
    () => 8,
  )
  .step({ slug: "dynamic", if: { id: 2 }, whenUnmet: policy }, () => 9)
  .array({ slug: "maybe_list", whenExhausted: "skip" }, () => [1, 2])
  .map({ slug: "per_item", array: "maybe_list", if: { maybe_list: [1] } }, (n) => {
    const _n: Equals<typeof n, number> = true;
    return n;
  })
  .step(
    {
      slug: "join",
      dependsOn: [
        "if_skip",
        "if_not_skip",
        "if_fail",
        "if_cascade",
        "no_condition",
        "exhausted_skip",
        "exhausted_cascade",
        "exhausted_fail",
        "dynamic",
        "per_item",
      ],
      if: { if_fail: 3, exhausted_skip: 6 },
    },
    (deps) => {
      const _deps: Equals<typeof deps, {
        if_fail: number;
        if_cascade: number;
        no_condition: number;
        exhausted_cascade: number;
        exhausted_fail: number;
        if_skip?: number;
        if_not_skip?: number;
        exhausted_skip?: number;
        dynamic?: number;
        per_item?: number[];
      }> = true;
      return deps.if_skip ?? 0;
    },
  );

// The context carries typed run facts and resources.
export const context = new Flow<{ userId: string }>({ slug: "context" })
  .step({ slug: "first" }, (_input, ctx) => {
    const _sql: Equals<typeof ctx.sql, Sql> = true;
    const _env: Equals<typeof ctx.env, Readonly<Record<string, string | undefined>>> = true;
    const _signal: Equals<typeof ctx.signal, AbortSignal> = true;
    const _flowInput: Equals<typeof ctx.flowInput, { userId: string }> = true;
    const _flowSlug: Equals<typeof ctx.flowSlug, string> = true;
    const _runId: Equals<typeof ctx.runId, string> = true;
    const _stepSlug: Equals<typeof ctx.stepSlug, "first"> = true;
    const _taskIndex: Equals<typeof ctx.taskIndex, number> = true;
    const _attempt: Equals<typeof ctx.attempt, number> = true;
    return ctx.attempt;
  })
  .array({ slug: "ids" }, (input) => [input.userId])
  .map({ slug: "second", array: "ids" }, (_item, ctx) => {
    const _stepSlug: Equals<typeof ctx.stepSlug, "second"> = true;
    const _flowInput: Equals<typeof ctx.flowInput, { userId: string }> = true;
    return ctx.taskIndex;
  })
  .step({ slug: "third", dependsOn: ["first"] }, (_deps, ctx) => {
    const _flowInput: Equals<typeof ctx.flowInput, { userId: string }> = true;
    return ctx.stepSlug;
  });

// JSON-compatible outputs: interfaces, optional properties, null, nested arrays, primitives.
interface Invoice {
  id: number;
  note?: string;
  lines: { sku: string; amount: number | null }[];
}
export const outputs = new Flow({ slug: "outputs" })
  .step({ slug: "interface" }, (): Invoice => ({ id: 1, lines: [] }))
  .step({ slug: "nothing" }, () => null)
  .step({ slug: "text" }, () => "done")
  .step({ slug: "flag" }, async () => await Promise.resolve(true))
  .step({ slug: "tuple" }, () => [1, "two"] as const);

const _interface: Equals<StepOutput<typeof outputs, "interface">, Invoice> = true;
const _nothing: Equals<StepOutput<typeof outputs, "nothing">, null> = true;
const _text: Equals<StepOutput<typeof outputs, "text">, string> = true;
const _flag: Equals<StepOutput<typeof outputs, "flag">, boolean> = true;
const _tuple: Equals<StepOutput<typeof outputs, "tuple">, readonly [1, "two"]> = true;

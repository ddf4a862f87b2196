// The flow-control options of a start type-check as documented (docs/flow_control.md): a
// debounce takes a key and a window in seconds, optionally a max wait, and a debounced start
// still resolves to a run id; misspelt or mistyped options are compile errors. Checked by
// `deno check tests/types/`, never run.

import {
  type DebounceOptions,
  Flow,
  type FlowControlStartOptions,
  startFlow,
  type StartFlowOptions,
} from "../../mod.ts";
import { startRun, type StartRunOptions } from "../../src/browser/mod.ts";
import type { SupabaseClient } from "@supabase/supabase-js";
import type { Sql } from "../../src/db/driver/postgres.ts";
import type { Equals } from "./_equals.ts";

const notes = new Flow<{ docId: string; text: string }>({ slug: "notes" })
  .step({ slug: "save" }, (input) => input.text.length);

declare const sql: Sql;
declare const supabase: SupabaseClient;

export async function debounced(): Promise<void> {
  const runId = await startFlow(sql, notes, { docId: "d", text: "t" }, {
    debounce: { key: "d", windowSeconds: 5 },
  });
  const _runId: Equals<typeof runId, string> = true;
  await startFlow(sql, notes, { docId: "d", text: "t" }, {
    debounce: { key: "d", windowSeconds: 5, maxWaitSeconds: 60 },
  });
  const browserRun = await startRun(supabase, notes, { docId: "d", text: "t" }, {
    debounce: { key: "d", windowSeconds: 5 },
  });
  const _browserRun: Equals<typeof browserRun, string> = true;
  // The input is still the flow's.
  // @ts-expect-error: text is a string
  await startFlow(sql, notes, { docId: "d", text: 1 }, {
    debounce: { key: "d", windowSeconds: 5 },
  });
  // @ts-expect-error: a debounce needs its window
  await startFlow(sql, notes, { docId: "d", text: "t" }, { debounce: { key: "d" } });
  // @ts-expect-error: the window is a number of seconds
  await startFlow(sql, notes, { docId: "d", text: "t" }, {
    debounce: { key: "d", windowSeconds: "5s" },
  });
  // @ts-expect-error: Inngest's spelling is not sluice's
  await startFlow(sql, notes, { docId: "d", text: "t" }, { debounce: { key: "d", period: "5s" } });
}

export async function prioritized(): Promise<void> {
  const runId = await startFlow(sql, notes, { docId: "d", text: "t" }, { priority: 10 });
  const _runId: Equals<typeof runId, string> = true;
  await startFlow(sql, "notes", { any: "json" }, { priority: -5, idempotencyKey: "k" });
  await startRun(supabase, notes, { docId: "d", text: "t" }, { priority: 1 });
  // @ts-expect-error: a priority is a number, not a name
  await startFlow(sql, notes, { docId: "d", text: "t" }, { priority: "high" });
}

const _priority: Equals<FlowControlStartOptions["priority"], number | undefined> = true;
const _debounce: Equals<
  DebounceOptions,
  { readonly key: string; readonly windowSeconds: number; readonly maxWaitSeconds?: number }
> = true;
const _shared: Equals<FlowControlStartOptions["debounce"], DebounceOptions | undefined> = true;
const _startFlow: Equals<StartFlowOptions["debounce"], DebounceOptions | undefined> = true;
const _startRun: Equals<StartRunOptions["debounce"], DebounceOptions | undefined> = true;

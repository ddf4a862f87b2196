/**
 * The code measurements of `deno task bench:community_threads`: the orchestration code of each
 * version of examples/community_threads (lines and files, hand-written and generated) and its
 * direct PGMQ references, counted from the files themselves.
 *
 * @module
 */

const PROJECT = new URL("../examples/community_threads/", import.meta.url);

/** A set of files of the example and what they are. */
export interface CodeSet {
  /** Shown in the table. */
  readonly label: string;
  /** Paths relative to examples/community_threads/. */
  readonly files: readonly string[];
}

/** The orchestration code of the baseline: queues, workers, intake, entrypoints. */
export const BASELINE_ORCHESTRATION: CodeSet = {
  label: "baseline: hand-written orchestration",
  files: [
    "supabase/functions/_shared/baseline/queue_worker.ts",
    "supabase/functions/_shared/baseline/classify_worker.ts",
    "supabase/functions/_shared/baseline/deliver_worker.ts",
    "supabase/functions/_shared/baseline/submit_thread.ts",
    "supabase/functions/_shared/baseline/serve.ts",
    "supabase/functions/baseline-classify/index.ts",
    "supabase/functions/baseline-classify/deno.json",
    "supabase/functions/baseline-deliver/index.ts",
    "supabase/functions/baseline-deliver/deno.json",
    "supabase/migrations/20261201000100_community_threads_baseline_queues.sql",
  ],
};

/** The orchestration code of the sluice version a developer writes. */
export const SLUICE_ORCHESTRATION: CodeSet = {
  label: "sluice: hand-written orchestration",
  files: [
    "supabase/functions/_shared/flows.ts",
    "supabase/functions/_shared/submit_thread.ts",
  ],
};

/** What `functions:generate` writes for the sluice version. */
export const SLUICE_GENERATED: CodeSet = {
  label: "sluice: generated",
  files: [
    "supabase/functions/community-threads--classify/index.ts",
    "supabase/functions/community-threads--classify/deno.json",
    "supabase/functions/community-threads--deliver-slack/index.ts",
    "supabase/functions/community-threads--deliver-slack/deno.json",
    "supabase/functions/community-threads--mark-failed/index.ts",
    "supabase/functions/community-threads--mark-failed/deno.json",
    "supabase/functions/sluice.manifest.json",
    "supabase/functions/sluice.config.toml",
  ],
};

/** The domain code both versions share (classifier, Slack client, domain writes, tables). */
export const SHARED_DOMAIN: CodeSet = {
  label: "shared domain (both)",
  files: [
    "supabase/functions/_shared/classifier.ts",
    "supabase/functions/_shared/slack.ts",
    "supabase/functions/_shared/threads.ts",
    "supabase/migrations/20261201000000_community_threads_domain.sql",
  ],
};

/** Counts of one code set. */
export interface CodeCount {
  readonly label: string;
  readonly files: number;
  /** Non-blank lines. */
  readonly lines: number;
  /** Non-blank lines that are not comments (`//`, `/** ... *\/`, `--`, `#`). */
  readonly codeLines: number;
  /** Occurrences of `pgmq.` (a PGMQ function or table) outside comments. */
  readonly pgmqReferences: number;
  /** Occurrences of `sluice.` (sluice's SQL API) outside comments. */
  readonly sluiceSqlReferences: number;
}

/** Counts the files of `set`. */
export async function countCode(set: CodeSet): Promise<CodeCount> {
  let lines = 0;
  let codeLines = 0;
  let pgmqReferences = 0;
  let sluiceSqlReferences = 0;
  for (const file of set.files) {
    const text = await Deno.readTextFile(new URL(file, PROJECT));
    let inBlock = false;
    for (const raw of text.split("\n")) {
      const line = raw.trim();
      if (line === "") continue;
      lines++;
      if (inBlock) {
        if (line.includes("*/")) inBlock = false;
        continue;
      }
      if (line.startsWith("/*")) {
        inBlock = !line.includes("*/");
        continue;
      }
      if (/^(\/\/|--|#)/.test(line) || line.startsWith('"$comment"')) continue;
      codeLines++;
      pgmqReferences += line.match(/\bpgmq\./g)?.length ?? 0;
      sluiceSqlReferences += line.match(/\bsluice\.[a-z_]+\(/g)?.length ?? 0;
    }
  }
  return {
    label: set.label,
    files: set.files.length,
    lines,
    codeLines,
    pgmqReferences,
    sluiceSqlReferences,
  };
}

/**
 * Thread classification: category and urgency of a community thread. The default classifier is
 * deterministic keyword rules; anything implementing {@linkcode Classifier} (an LLM call) fits.
 *
 * @module
 */

/** What a classifier needs of a thread. */
export interface ThreadText {
  /** The thread title. */
  readonly title: string;
  /** The first post's text. */
  readonly body: string;
}

/** A thread's category and urgency. */
export interface Classification {
  /** `incident`, `bug`, `question` or `chatter`. */
  readonly category: "incident" | "bug" | "question" | "chatter";
  /** 0 (chatter) to 3 (incident). */
  readonly urgency: 0 | 1 | 2 | 3;
  /** Whether the thread needs a Slack alert (urgency 2 or more). */
  readonly urgent: boolean;
}

/** Classifies one thread; an LLM-backed implementation may be slow and may throw. */
export interface Classifier {
  /** Classifies `thread`; `signal` aborts a slow classification. */
  classify(thread: ThreadText, signal?: AbortSignal): Promise<Classification>;
}

const RULES: readonly {
  pattern: RegExp;
  category: Classification["category"];
  urgency: 0 | 1 | 2 | 3;
}[] = [
  {
    pattern: /\b(outage|down|breach|security|data loss)\b/i,
    category: "incident",
    urgency: 3,
  },
  {
    pattern: /\b(bug|error|crash(es|ed)?|broken)\b/i,
    category: "bug",
    urgency: 2,
  },
  { pattern: /\?/, category: "question", urgency: 1 },
];

/**
 * Classifies by keyword: incident words make urgency 3, bug words 2, a question mark 1, anything
 * else is chatter (0).
 *
 * @example Usage
 * ```ts
 * import { classifyByRules } from "./classifier.ts";
 *
 * classifyByRules({ title: "API down", body: "500s everywhere" });
 * // { category: "incident", urgency: 3, urgent: true }
 * ```
 */
export function classifyByRules(thread: ThreadText): Classification {
  const text = `${thread.title}\n${thread.body}`;
  const rule = RULES.find((candidate) => candidate.pattern.test(text));
  const category = rule?.category ?? "chatter";
  const urgency = rule?.urgency ?? 0;
  return { category, urgency, urgent: urgency >= 2 };
}

/**
 * The classifier both versions use: the keyword rules, after `CLASSIFY_DELAY_MS` milliseconds
 * (default 0) standing in for an LLM's latency.
 *
 * @param env The environment to read `CLASSIFY_DELAY_MS` from.
 * @throws {RangeError} When `CLASSIFY_DELAY_MS` is not a whole number >= 0.
 */
export function classifierFromEnv(
  env: Readonly<Record<string, string | undefined>>,
): Classifier {
  const delayMs = Number(env.CLASSIFY_DELAY_MS ?? "0");
  if (!Number.isInteger(delayMs) || delayMs < 0) {
    throw new RangeError(
      `Cannot create the classifier: CLASSIFY_DELAY_MS must be a whole number >= 0, got ` +
        JSON.stringify(env.CLASSIFY_DELAY_MS),
    );
  }
  return {
    async classify(thread, signal) {
      if (delayMs > 0) await delay(delayMs, signal);
      return classifyByRules(thread);
    },
  };
}

function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    signal?.throwIfAborted();
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

// The flows of the concurrency race tests, shared by the test and its worker subprocesses so that
// both compile the same shape.
import { Flow } from "../../src/dsl/flow.ts";
import type { StepContext } from "../../src/dsl/context.ts";

/** The input of every race flow: the key its limited step counts under, and a number. */
export interface RaceInput {
  key: string;
  n: number;
}

type Handler = (input: RaceInput, ctx: StepContext) => Promise<number>;

/** At most 2 tasks per input key at once. */
export function raceFlow(handler: Handler) {
  return new Flow<RaceInput>({ slug: "race", timeout: 5 })
    .step({ slug: "work", concurrency: { limit: 2, key: "key" } }, handler);
}

/** As raceFlow, with one attempt: a stalled task fails, which frees its slot. */
export function stallFlow(handler: Handler) {
  return new Flow<RaceInput>({ slug: "stall", timeout: 5, maxAttempts: 1 })
    .step({ slug: "work", concurrency: { limit: 2, key: "key" } }, handler);
}

/** At most 5 first attempts per second, over every run (one shared key). */
export function rateFlow(handler: Handler) {
  return new Flow<RaceInput>({ slug: "rated", timeout: 5 })
    .step({ slug: "work", rateLimit: { limit: 5, period: 1 } }, handler);
}

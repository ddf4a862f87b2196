// The flows of the upgrade harness, shared by both sides of the upgrade: the test imports this file
// with the current code, and copies it into the old version's worktree at the same path, where its
// relative import resolves to the old version's own DSL. Both sides so compile the same shapes.
import { Flow } from "../../src/dsl/flow.ts";
import { withStepQueues } from "../../src/dsl/step_queues.ts";

/** Which tasks the old version's worker leaves hanging (claimed, never finished) until SIGKILLed. */
export type Hang = (flow: string, step: string, value: unknown) => boolean;

/** Never settles: the task stays started until its worker dies. */
const forever = () => new Promise<never>(() => {});

/**
 * The harness's flows with handlers that hang where `hang` says (the old worker) or never (the
 * current workers), so the outputs are the same on both sides.
 */
export function upgradeFlows(hang: Hang = () => false) {
  /** Fan-out half done: the old worker finishes the elements below 3 and hangs on the rest. */
  const map = new Flow<number[]>({ slug: "upgrade_map", timeout: 5, maxAttempts: 3 })
    .map({ slug: "square" }, (n) => hang("upgrade_map", "square", n) ? forever() : n * n)
    .step(
      { slug: "sum", dependsOn: ["square"] },
      (deps) => deps.square.reduce((a, b) => a + b, 0),
    );
  /** A skipped branch: `premium` runs only for plan "pro", `total` still runs without it. */
  const branch = new Flow<{ plan: string; n: number }>({
    slug: "upgrade_branch",
    timeout: 5,
    maxAttempts: 3,
  })
    .step({ slug: "premium", if: { plan: "pro" } }, (input) => input.n * 100)
    .step({ slug: "base" }, (input) => input.n)
    .step(
      { slug: "total", dependsOn: ["premium", "base"] },
      (deps) => hang("upgrade_branch", "total", deps) ? forever() : (deps.premium ?? 0) + deps.base,
    );
  /**
   * A run that fails before the upgrade (one attempt, and the first always fails) and completes
   * when retried after it (its second attempt succeeds).
   */
  const failed = new Flow<{ n: number }>({ slug: "upgrade_failed", maxAttempts: 1 })
    .step({ slug: "boom" }, (input, ctx): number => {
      if (ctx.attempt === 1) throw new Error(`boom ${input.n}`);
      return input.n;
    });
  /** Two versions behind the alias `upgrade_alias`, told apart by their output. */
  const aliasV1 = new Flow<{ n: number }>({ slug: "upgrade_alias_v1" })
    .step({ slug: "tag" }, (input) => `v1:${input.n}`);
  const aliasV2 = new Flow<{ n: number }>({ slug: "upgrade_alias_v2" })
    .step({ slug: "tag" }, (input) => `v2:${input.n}`);
  /** The flow whose worker function the old worker's fatal stop pauses. */
  const guarded = new Flow<{ n: number }>({ slug: "upgrade_guarded" })
    .step({ slug: "noop" }, (input) => input.n);
  /** The step-queued flow of the old/new matrix: one private queue per step. */
  const stepped = withStepQueues(
    new Flow<{ n: number }>({ slug: "upgrade_stepped", timeout: 5 })
      .step({ slug: "add" }, (input) => input.n + 1)
      .step({ slug: "mul", dependsOn: ["add"] }, (deps) => deps.add * 10),
  );
  return { map, branch, failed, aliasV1, aliasV2, guarded, stepped };
}

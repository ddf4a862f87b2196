// What the compiler catches in the community-threads example (docs/integration/
// community_threads.md, "Type and autocomplete quality"). Checked by `deno check tests/types/`,
// never run.

import { Flow, type FlowInput, type StepSlug } from "../../mod.ts";
import { startWorker } from "../../src/worker/mod.ts";
import { communityThreads } from "../../examples/community_threads/supabase/functions/_shared/flows.ts";
import type { Classification } from "../../examples/community_threads/supabase/functions/_shared/classifier.ts";
import type { Equals } from "./_equals.ts";

const _slugs: Equals<
  StepSlug<typeof communityThreads>,
  "classify" | "deliver_slack" | "mark_failed"
> = true;
const _input: Equals<FlowInput<typeof communityThreads>, { threadId: number }> = true;

const connectionString = "postgres://localhost/db";
startWorker(communityThreads, { stepSlug: "deliver_slack", connectionString });
// @ts-expect-error a step worker of a step-queued flow needs its stepSlug
startWorker(communityThreads, { connectionString });
// @ts-expect-error "deliver" is not a step of community_threads
startWorker(communityThreads, { stepSlug: "deliver", connectionString });

// The intake's input is checked against the flow input.
// @ts-expect-error a thread id is a number
export const badInput: FlowInput<typeof communityThreads> = { threadId: "1" };

const classify = (): Classification => ({ category: "bug", urgency: 2, urgent: true });
const base = new Flow<{ threadId: number }>({ slug: "community_threads" })
  .step({ slug: "classify" }, classify);

// The condition is typed against classify's output: a misspelled key or an impossible value.
base.step(
  // @ts-expect-error "urgnet" is not a key of the classification
  { slug: "deliver_slack", dependsOn: ["classify"], if: { classify: { urgnet: true } } },
  () => null,
);
base.step(
  // @ts-expect-error urgency is 0 to 3
  { slug: "deliver_slack", dependsOn: ["classify"], if: { classify: { urgency: 7 } } },
  () => null,
);
// A dependent step receives the classification with its exact type.
base.step({ slug: "deliver_slack", dependsOn: ["classify"] }, (deps) => {
  const _deps: Equals<typeof deps, { classify: Classification }> = true;
  return null;
});

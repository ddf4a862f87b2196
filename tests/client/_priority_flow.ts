// The flow of the priority test's worker processes: two steps, each a short wait.
import { Flow } from "../../src/dsl/flow.ts";

const pause = () => new Promise<void>((resolve) => setTimeout(resolve, 2));

/** Two dependent steps, so a priority must carry from a run's first tasks to its later ones. */
export const racingFlow = new Flow<{ n: number }>({ slug: "racing_priorities" })
  .step({ slug: "first" }, async (input) => {
    await pause();
    return input.n;
  })
  .step({ slug: "second", dependsOn: ["first"] }, async (deps) => {
    await pause();
    return deps.first;
  });

// The flow of the buffered-write test, shared by the test and its worker subprocess so that both
// compile the same shape.
import { Flow } from "../../src/dsl/flow.ts";

export function bufferedWriteFlow(handler: (input: { rounds: number }) => Promise<number>) {
  return new Flow<{ rounds: number }>({ slug: "buffered_writes", timeout: 60 })
    .step({ slug: "interleave" }, handler);
}

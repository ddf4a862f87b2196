import assert from "node:assert/strict";
import { Flow, FlowDefinitionError, type FlowDefinitionErrorDetails } from "../../mod.ts";
import { MAX_SLUG_LENGTH } from "../../src/admin/mod.ts";

/** Expects `fn` to throw a FlowDefinitionError with exactly these fields. */
function assertRejects(
  fn: () => unknown,
  expected: FlowDefinitionErrorDetails & { message: string },
): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof FlowDefinitionError, `expected FlowDefinitionError, got ${error}`);
    assert.equal(error.name, "FlowDefinitionError");
    assert.deepEqual(
      {
        message: error.message,
        flowSlug: error.flowSlug,
        stepSlug: error.stepSlug,
        reason: error.reason,
        option: error.option,
        value: error.value,
      },
      expected,
    );
    return true;
  });
}

/** Untyped access to the builders, for the values TypeScript would already reject. */
// deno-lint-ignore no-explicit-any
const loose = (flow: Flow<any, any>): any => flow;
const base = new Flow<{ items: string[] }>({ slug: "orders" })
  .step({ slug: "fetch" }, (input) => input.items)
  .step({ slug: "count" }, () => 1);

Deno.test("new Flow() rejects options that are not an object and a slug that is not a string", () => {
  assert.throws(() => new Flow(null as never), {
    name: "TypeError",
    message: "Cannot create flow: options must be an object, got null",
  });
  assert.throws(() => new Flow({} as never), {
    name: "TypeError",
    message: "Cannot create flow: slug must be a string, got undefined",
  });
  assert.throws(() => new Flow({ slug: 7 } as never), {
    name: "TypeError",
    message: "Cannot create flow: slug must be a string, got 7",
  });
});

const invalidSlugs: [string, string][] = [
  ["", "a slug must start with a letter"],
  ["9lives", "a slug must start with a letter"],
  ["_private", "a slug must start with a letter"],
  ["with-dash", "a slug may only contain letters, digits and underscores"],
  ["émile", "a slug must start with a letter"],
  ["caf\u00e9", "a slug may only contain letters, digits and underscores"],
  ["double__underscore", 'a slug must not contain "__"'],
  ["trailing_", 'a slug must not end with "_"'],
  [
    "a".repeat(MAX_SLUG_LENGTH + 1),
    `a slug must be at most 128 characters, got ${MAX_SLUG_LENGTH + 1}`,
  ],
];

for (const [slug, detail] of invalidSlugs) {
  Deno.test(`new Flow() rejects the flow slug ${JSON.stringify(slug.slice(0, 20))}`, () => {
    assertRejects(() => new Flow({ slug }), {
      message: `Cannot create flow ${JSON.stringify(slug)}: ${detail}`,
      flowSlug: slug,
      stepSlug: undefined,
      reason: "invalid_slug",
      option: "slug",
      value: slug,
    });
  });

  Deno.test(`.step() rejects the step slug ${JSON.stringify(slug.slice(0, 20))}`, () => {
    assertRejects(() => base.step({ slug }, () => 1), {
      message: `Cannot add step ${JSON.stringify(slug)} to flow "orders": ${detail}`,
      flowSlug: "orders",
      stepSlug: slug,
      reason: "invalid_slug",
      option: "slug",
      value: slug,
    });
  });
}

Deno.test("slugs of exactly MAX_SLUG_LENGTH (128) characters with letters, digits and _ are valid", () => {
  const slug = "A1_b".padEnd(MAX_SLUG_LENGTH, "x");
  assert.equal(MAX_SLUG_LENGTH, 128);
  assert.equal(new Flow({ slug }).step({ slug }, () => 1).steps[0].slug, slug);
});

Deno.test("new Flow() rejects an unknown option", () => {
  assertRejects(() => new Flow({ slug: "f", queue: "q" } as never), {
    message:
      'Cannot create flow "f": unknown option "queue" (valid options: slug, input, maxAttempts, baseDelay, timeout, events, progressInterval, maxInputBytes, maxOutputBytes, maxMapTasks)',
    flowSlug: "f",
    stepSlug: undefined,
    reason: "unknown_option",
    option: "queue",
    value: "q",
  });
});

const invalidFlowNumbers: [string, unknown, string][] = [
  ["maxAttempts", 0, "maxAttempts must be an integer from 1 to 2147483647, got 0"],
  ["maxAttempts", 1.5, "maxAttempts must be an integer from 1 to 2147483647, got 1.5"],
  ["maxAttempts", "3", 'maxAttempts must be an integer from 1 to 2147483647, got "3"'],
  ["baseDelay", 0, "baseDelay must be an integer from 1 to 2147483647, got 0"],
  ["baseDelay", Number.NaN, "baseDelay must be an integer from 1 to 2147483647, got NaN"],
  [
    "timeout",
    -1,
    "timeout must be an integer from 1 to 2147483 (seconds, about 24.8 days: the longest worker timer), got -1",
  ],
  [
    "timeout",
    2147484,
    "timeout must be an integer from 1 to 2147483 (seconds, about 24.8 days: the longest worker timer), got 2147484",
  ],
  [
    "timeout",
    null,
    "timeout must be an integer from 1 to 2147483 (seconds, about 24.8 days: the longest worker timer), got null",
  ],
  [
    "progressInterval",
    -1,
    "progressInterval must be an integer from 0 to 2147483647, got -1",
  ],
  ["events", "yes", 'events must be true or false, got "yes"'],
  ["events", null, "events must be true or false, got null"],
];

for (const [option, value, detail] of invalidFlowNumbers) {
  Deno.test(`new Flow() rejects ${option}: ${String(value)}`, () => {
    assertRejects(() => new Flow({ slug: "f", [option]: value }), {
      message: `Cannot create flow "f": ${detail}`,
      flowSlug: "f",
      stepSlug: undefined,
      reason: "invalid_option",
      option,
      value,
    });
  });
}

Deno.test(".step() rejects options that are not an object, a missing slug and a non-function handler", () => {
  assert.throws(() => loose(base).step("fetch", () => 1), {
    name: "TypeError",
    message: 'Cannot add step to flow "orders": options must be an object, got "fetch"',
  });
  assert.throws(() => loose(base).step({}, () => 1), {
    name: "TypeError",
    message: 'Cannot add step to flow "orders": slug must be a string, got undefined',
  });
  assert.throws(() => loose(base).step({ slug: "x" }), {
    name: "TypeError",
    message: 'Cannot add step "x" to flow "orders": handler must be a function, got undefined',
  });
});

Deno.test('.step() rejects the reserved slug "run" in any case', () => {
  for (const slug of ["run", "Run", "RUN"]) {
    assertRejects(() => base.step({ slug }, () => 1), {
      message: `Cannot add step ${JSON.stringify(slug)} to flow "orders": "run" is reserved`,
      flowSlug: "orders",
      stepSlug: slug,
      reason: "reserved_slug",
      option: "slug",
      value: slug,
    });
  }
});

Deno.test(".step() rejects a slug that is taken, compared case-insensitively", () => {
  for (const slug of ["fetch", "Fetch", "FETCH"]) {
    assertRejects(() => base.step({ slug }, () => 1), {
      message: `Cannot add step ${
        JSON.stringify(slug)
      } to flow "orders": step "fetch" already exists (slugs are compared case-insensitively)`,
      flowSlug: "orders",
      stepSlug: slug,
      reason: "duplicate_step",
      option: "slug",
      value: slug,
    });
  }
});

Deno.test(".step() rejects an unknown dependency, including one added later or differently cased", () => {
  for (const dep of ["missing", "Fetch"]) {
    assertRejects(() => loose(base).step({ slug: "x", dependsOn: ["count", dep] }, () => 1), {
      message: `Cannot add step "x" to flow "orders": unknown dependency ${
        JSON.stringify(dep)
      } (a dependency must be added before the steps that depend on it)`,
      flowSlug: "orders",
      stepSlug: "x",
      reason: "unknown_dependency",
      option: "dependsOn",
      value: dep,
    });
  }
  assertRejects(() => loose(base).step({ slug: "x", dependsOn: ["x"] }, () => 1), {
    message:
      'Cannot add step "x" to flow "orders": unknown dependency "x" (a dependency must be added before the steps that depend on it)',
    flowSlug: "orders",
    stepSlug: "x",
    reason: "unknown_dependency",
    option: "dependsOn",
    value: "x",
  });
});

Deno.test(".step() rejects a dependency listed twice and a dependsOn that is not a slug array", () => {
  assertRejects(() => base.step({ slug: "x", dependsOn: ["fetch", "fetch"] }, () => 1), {
    message: 'Cannot add step "x" to flow "orders": dependency "fetch" is listed twice',
    flowSlug: "orders",
    stepSlug: "x",
    reason: "duplicate_dependency",
    option: "dependsOn",
    value: "fetch",
  });
  assertRejects(() => loose(base).step({ slug: "x", dependsOn: "fetch" }, () => 1), {
    message:
      'Cannot add step "x" to flow "orders": dependsOn must be an array of step slugs, got "fetch"',
    flowSlug: "orders",
    stepSlug: "x",
    reason: "invalid_option",
    option: "dependsOn",
    value: "fetch",
  });
  assertRejects(() => loose(base).step({ slug: "x", dependsOn: [1] }, () => 1), {
    message:
      'Cannot add step "x" to flow "orders": dependsOn must be an array of step slugs, got the element 1',
    flowSlug: "orders",
    stepSlug: "x",
    reason: "invalid_option",
    option: "dependsOn",
    value: 1,
  });
});

Deno.test(".step() and .array() reject unknown options, including queue and array", () => {
  for (const method of ["step", "array"] as const) {
    for (const [option, value] of [["queue", "orders_q"], ["array", "fetch"]] as const) {
      assertRejects(() => loose(base)[method]({ slug: "x", [option]: value }, () => []), {
        message: `Cannot add step "x" to flow "orders": unknown option ${
          JSON.stringify(option)
        } (valid options: slug, dependsOn, maxAttempts, baseDelay, timeout, startDelay, concurrency, rateLimit, if, ifNot, whenUnmet, whenExhausted)`,
        flowSlug: "orders",
        stepSlug: "x",
        reason: "unknown_option",
        option,
        value,
      });
    }
  }
});

Deno.test(".map() rejects a queue option", () => {
  assertRejects(() => loose(base).map({ slug: "x", array: "fetch", queue: "q" }, () => 1), {
    message:
      'Cannot add step "x" to flow "orders": unknown option "queue" (valid options: slug, dependsOn, maxAttempts, baseDelay, timeout, startDelay, concurrency, rateLimit, if, ifNot, whenUnmet, whenExhausted, array)',
    flowSlug: "orders",
    stepSlug: "x",
    reason: "unknown_option",
    option: "queue",
    value: "q",
  });
});

Deno.test(".map() rejects an array source that is not a step of the flow", () => {
  assertRejects(() => loose(base).map({ slug: "x", array: "missing" }, () => 1), {
    message:
      'Cannot add step "x" to flow "orders": array "missing" is not a step of this flow (add it before the map)',
    flowSlug: "orders",
    stepSlug: "x",
    reason: "unknown_dependency",
    option: "array",
    value: "missing",
  });
  assertRejects(() => loose(base).map({ slug: "x", array: 3 }, () => 1), {
    message: 'Cannot add step "x" to flow "orders": array must be a step slug, got 3',
    flowSlug: "orders",
    stepSlug: "x",
    reason: "invalid_option",
    option: "array",
    value: 3,
  });
});

Deno.test(".map() over a dependency accepts dependsOn only as exactly [array]", () => {
  const ok = base.map({ slug: "x", array: "fetch", dependsOn: ["fetch"] }, (item) => item);
  assert.deepEqual(ok.getStep("x").dependsOn, ["fetch"]);
  for (const dependsOn of [["count"], ["fetch", "count"], []]) {
    assertRejects(() => loose(base).map({ slug: "x", array: "fetch", dependsOn }, () => 1), {
      message:
        `Cannot add step "x" to flow "orders": a map over "fetch" must depend on exactly ["fetch"], got dependsOn ${
          JSON.stringify(dependsOn)
        }`,
      flowSlug: "orders",
      stepSlug: "x",
      reason: "invalid_map_source",
      option: "dependsOn",
      value: dependsOn,
    });
  }
});

Deno.test(".map() over the flow input rejects dependencies", () => {
  assertRejects(() => loose(base).map({ slug: "x", dependsOn: ["fetch"] }, () => 1), {
    message:
      'Cannot add step "x" to flow "orders": a map over the flow input cannot have dependencies, got dependsOn ["fetch"] (set array to map over a dependency)',
    flowSlug: "orders",
    stepSlug: "x",
    reason: "invalid_map_source",
    option: "dependsOn",
    value: ["fetch"],
  });
});

const invalidStepNumbers: [string, unknown, string][] = [
  ["maxAttempts", 0, "maxAttempts must be an integer from 1 to 2147483647, got 0"],
  ["baseDelay", 0, "baseDelay must be an integer from 1 to 2147483647, got 0"],
  [
    "timeout",
    0.5,
    "timeout must be an integer from 1 to 2147483 (seconds, about 24.8 days: the longest worker timer), got 0.5",
  ],
  [
    "timeout",
    2592000,
    "timeout must be an integer from 1 to 2147483 (seconds, about 24.8 days: the longest worker timer), got 2592000",
  ],
  ["startDelay", -1, "startDelay must be an integer from 0 to 2147483647, got -1"],
  ["startDelay", 1.5, "startDelay must be an integer from 0 to 2147483647, got 1.5"],
  [
    "startDelay",
    Number.POSITIVE_INFINITY,
    "startDelay must be an integer from 0 to 2147483647, got Infinity",
  ],
];

for (const [option, value, detail] of invalidStepNumbers) {
  Deno.test(`.step() rejects ${option}: ${String(value)}`, () => {
    assertRejects(() => base.step({ slug: "x", [option]: value }, () => 1), {
      message: `Cannot add step "x" to flow "orders": ${detail}`,
      flowSlug: "orders",
      stepSlug: "x",
      reason: "invalid_option",
      option,
      value,
    });
  });
}

Deno.test("numeric step options accept their lower bounds and are kept as given", () => {
  const flow = base.step(
    { slug: "x", maxAttempts: 1, baseDelay: 1, timeout: 1, startDelay: 0 },
    () => 1,
  );
  assert.deepEqual(flow.getStep("x").options, {
    maxAttempts: 1,
    baseDelay: 1,
    timeout: 1,
    startDelay: 0,
  });
});

Deno.test(".step() rejects an invalid whenUnmet or whenExhausted", () => {
  for (const option of ["whenUnmet", "whenExhausted"]) {
    assertRejects(() => loose(base).step({ slug: "x", [option]: "retry" }, () => 1), {
      message:
        `Cannot add step "x" to flow "orders": ${option} must be "fail", "skip" or "skip-cascade", got "retry"`,
      flowSlug: "orders",
      stepSlug: "x",
      reason: "invalid_option",
      option,
      value: "retry",
    });
  }
});

class Point {
  x = 1;
}
const cyclic: Record<string, unknown> = { a: 1 };
cyclic.self = cyclic;

const invalidPatterns: [string, unknown, string][] = [
  ["an array", [1], " must be a plain JSON object, got [1]"],
  ["null", null, " must be a plain JSON object, got null"],
  ["a string", "paid", ' must be a plain JSON object, got "paid"'],
  ["a Date", new Date(0), " must be a plain JSON object, got an instance of Date"],
  ["a class instance", new Point(), " must be a plain JSON object, got an instance of Point"],
  ["a nested function", { a: { f: () => 1 } }, ".a.f: a function is not JSON"],
  ["a nested undefined", { a: [1, undefined] }, ".a[1]: undefined is not JSON"],
  ["a nested NaN", { a: Number.NaN }, ".a: NaN is not JSON"],
  ["a nested bigint", { a: 1n }, ".a: a bigint (1n) is not JSON"],
  ["a nested symbol", { a: Symbol("s") }, ".a: a symbol is not JSON"],
  [
    "a nested Map",
    { a: new Map() },
    ".a: an instance of Map is not JSON (only plain objects and arrays are)",
  ],
  ["a cycle", cyclic, ".self: a cycle is not JSON"],
  [
    "a \\u0000 in a key",
    { "a\u0000": 1 },
    '["a\\u0000"]: the key holds \\u0000, which Postgres cannot store in jsonb',
  ],
];

for (const [what, value, detail] of invalidPatterns) {
  for (const option of ["if", "ifNot"]) {
    Deno.test(`.step() rejects ${option} holding ${what}`, () => {
      assertRejects(() => loose(base).step({ slug: "x", [option]: value }, () => 1), {
        message: `Cannot add step "x" to flow "orders": ${option}${detail}`,
        flowSlug: "orders",
        stepSlug: "x",
        reason: "invalid_option",
        option,
        value,
      });
    });
  }
}

Deno.test("if and ifNot accept nested JSON objects, including null-prototype objects", () => {
  const pattern = Object.assign(Object.create(null), { fetch: ["a"], count: 1, ok: true, n: null });
  const flow = base.step(
    { slug: "x", dependsOn: ["fetch", "count"], if: pattern, ifNot: { count: 2 } },
    () => 1,
  );
  assert.deepEqual({ ...flow.getStep("x").if }, { fetch: ["a"], count: 1, ok: true, n: null });
  assert.deepEqual(flow.getStep("x").ifNot, { count: 2 });
});

Deno.test("an explicit undefined option counts as absent", () => {
  const flow = base.step(
    { slug: "x", dependsOn: undefined, if: undefined, whenUnmet: undefined, timeout: undefined },
    () => 1,
  );
  const step = flow.getStep("x");
  assert.deepEqual(
    [step.dependsOn, step.if, step.whenUnmet, step.options],
    [[], null, "skip", {}],
  );
});

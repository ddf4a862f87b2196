// The TypeScript queue-name derivation mirrors the SQL one for synchronous feedback; SQL stays the
// authority (docs/architecture.md#queue-modes-and-names). These tests hold both to one table of
// cases, and show that a definition whose routes disagree with SQL's derivation is rejected before
// anything is created.
import assert from "node:assert/strict";
import type postgres from "postgres";
import { Flow, QueueNameError, withStepQueues } from "../../mod.ts";
import {
  extractDefinition,
  flowQueueName,
  isValidQueueName,
  stepQueueName,
} from "../../src/admin/mod.ts";
import { freshDatabase } from "../_db.ts";

type Sql = postgres.Sql;

interface Case {
  name: string;
  flow: string;
  step: string;
  index: number;
  /** The lengths of the readable and the fallback name: the boundary the case probes. */
  lengths: [readable: number, fallback: number];
  /** The derived queue name, or `null` when both sides must reject. */
  expected: string | null;
}

const flow44 = `f${"x".repeat(43)}`;
const flow45 = `f${"x".repeat(44)}`;

const cases: Case[] = [
  {
    name: "short",
    flow: "orders",
    step: "fetch",
    index: 0,
    lengths: [13, 9],
    expected: "orders__fetch",
  },
  {
    name: "mixed case, lowercased",
    flow: "Orders",
    step: "FetchItems",
    index: 2,
    lengths: [18, 9],
    expected: "orders__fetchitems",
  },
  {
    name: "readable name of exactly 47 characters",
    flow: "orders",
    step: `s${"x".repeat(38)}`,
    index: 1,
    lengths: [47, 9],
    expected: `orders__s${"x".repeat(38)}`,
  },
  {
    name: "readable name of 48 characters falls back to the index",
    flow: "orders",
    step: `s${"x".repeat(39)}`,
    index: 1,
    lengths: [48, 9],
    expected: "orders__1",
  },
  {
    name: "fallback of exactly 47 characters",
    flow: flow44,
    step: "step",
    index: 0,
    lengths: [50, 47],
    expected: `${flow44}__0`,
  },
  {
    name: "two-digit fallback of exactly 47 characters",
    flow: flow44.slice(0, 43),
    step: "steps",
    index: 12,
    lengths: [50, 47],
    expected: `${flow44.slice(0, 43)}__12`,
  },
  {
    name: "mixed-case fallback, lowercased",
    flow: `F${"X".repeat(43)}`,
    step: "Step",
    index: 3,
    lengths: [50, 47],
    expected: `f${"x".repeat(43)}__3`,
  },
  {
    name: "readable and fallback both over 47: rejected",
    flow: flow45,
    step: "step",
    index: 0,
    lengths: [51, 48],
    expected: null,
  },
  {
    name: "fallback over 47 by its index alone: rejected",
    flow: flow44,
    step: "step",
    index: 10,
    lengths: [50, 48],
    expected: null,
  },
];

type Derived = { name: string } | { error: string };

function deriveInTypeScript(c: Case): Derived {
  try {
    return { name: stepQueueName(c.flow, c.step, c.index) };
  } catch (error) {
    assert.ok(error instanceof QueueNameError, `expected a QueueNameError, got ${error}`);
    return { error: error.reason };
  }
}

async function deriveInSql(sql: Sql, c: Case): Promise<Derived> {
  try {
    const [row] = await sql`
      select sluice.step_queue_name(${c.flow}, ${c.step}, ${c.index}) as name
    `;
    return { name: row.name };
  } catch (error) {
    // SQLSTATE 42622 is name_too_long, the errcode sluice.step_queue_name raises.
    assert.equal((error as { code?: string }).code, "42622", `unexpected SQL error: ${error}`);
    return { error: "name_too_long" };
  }
}

Deno.test("stepQueueName() and sluice.step_queue_name() agree on every case of the table", async () => {
  await using db = await freshDatabase();
  for (const c of cases) {
    const expected: Derived = c.expected === null ? { error: "name_too_long" } : {
      name: c.expected,
    };
    const readable = `${c.flow}__${c.step}`;
    const fallback = `${c.flow}__${c.index}`;
    assert.deepEqual([readable.length, fallback.length], c.lengths, `fixture: ${c.name}`);
    assert.deepEqual(deriveInTypeScript(c), expected, `TypeScript: ${c.name}`);
    assert.deepEqual(await deriveInSql(db.sql, c), expected, `SQL: ${c.name}`);
  }
});

/** Names that look like `orders` or break the rule otherwise, and the truncation case. */
const RULE_CASES: [name: string, valid: boolean][] = [
  ["orders", true],
  ["orders_2", true],
  ["o".repeat(47), true],
  ["o".repeat(48), false],
  ["\u043erders", false], // Cyrillic о
  ["\uff4frders", false], // full-width ｏ
  ["or\u200bders", false], // zero-width space
  ["Orders", false],
  ['ord"ers', false],
  ["ord'ers", false],
  ["ord ers", false],
  ["ord/ers", false],
  ["ord.ers", false],
  ["ord-ers", false], // PGMQ quotes it, but the rule is letters, digits and underscores
  ["", false],
  ["\u00e9".repeat(47), false], // 47 characters, 94 bytes
  ["\u00e9".repeat(23), false], // 23 characters, 46 bytes: still not ASCII
];

Deno.test("isValidQueueName() and sluice.is_valid_queue_name() agree: twins of orders, punctuation, byte length", async () => {
  await using db = await freshDatabase();
  const names = RULE_CASES.map(([name]) => name);
  const [{ valid }] = await db.sql`
    select array_agg(sluice.is_valid_queue_name(n) order by ord) as valid
    from unnest(${names}::text[]) with ordinality as u(n, ord)`;
  assert.deepEqual(valid, RULE_CASES.map(([, expected]) => expected));
  assert.deepEqual(names.map(isValidQueueName), RULE_CASES.map(([, expected]) => expected));
});

Deno.test("flowQueueName() and stepQueueName() refuse a slug that would give a name outside the rule", () => {
  for (const slug of ["\u043erders", "ord.ers", "ord ers", "\u00e9".repeat(30)]) {
    for (const derive of [() => flowQueueName(slug), () => stepQueueName(slug, "fetch", 0)]) {
      assert.throws(derive, (error: unknown) => {
        assert.ok(error instanceof QueueNameError, String(error));
        assert.equal(error.reason, "invalid_name");
        assert.equal(error.flowSlug, slug);
        assert.match(error.message, /must be ASCII lowercase letters, digits and underscores/);
        return true;
      });
    }
  }
});

Deno.test("flowQueueName() and sluice.derive_queue_name('flow', ...) agree", async () => {
  await using db = await freshDatabase();
  for (const slug of ["orders", "Orders_V2", `F${"x".repeat(46)}`]) {
    const [row] = await db.sql`
      select sluice.derive_queue_name('flow', ${slug}, 'any', 0) as name
    `;
    assert.equal(flowQueueName(slug), row.name, slug);
  }
});

Deno.test("withStepQueues() routes and the routes SQL compiles are the same", async () => {
  await using db = await freshDatabase();
  const flow = withStepQueues(
    new Flow({ slug: "Agreement_Flow" })
      .step({ slug: "fetch" }, () => 1)
      .step({ slug: `s${"x".repeat(40)}` }, () => 2)
      .step({ slug: "Deliver", dependsOn: ["fetch"] }, () => 3),
  );
  const definition = extractDefinition(flow) as unknown as postgres.JSONValue;
  const [{ result }] = await db.sql`
    select sluice.ensure_flow_compiled(${db.sql.json(definition)}::jsonb, 'production') as result
  `;
  assert.equal(result.outcome, "compiled");
  const stored = await db.sql`
    select step_slug, queue_name from sluice.steps
    where flow_slug = 'Agreement_Flow' order by step_index
  `;
  assert.deepEqual(
    stored.map((row) => ({ stepSlug: row.step_slug, queueName: row.queue_name })),
    flow.routes.map((route) => ({ ...route })),
  );
  assert.deepEqual(flow.routes.map((route) => route.queueName), [
    "agreement_flow__fetch",
    "agreement_flow__1",
    "agreement_flow__deliver",
  ]);
});

/** Every trace a compile could leave: sluice rows and PGMQ queues. */
async function traces(sql: Sql) {
  const [row] = await sql`
    select
      (select count(*)::int from sluice.flows) as flows,
      (select count(*)::int from sluice.steps) as steps,
      (select count(*)::int from sluice.queues) as queues,
      (select count(*)::int from sluice.aliases) as aliases,
      (select count(*)::int from pgmq.list_queues()) as pgmq_queues
  `;
  return { ...row };
}

Deno.test("SQL is authoritative: a definition whose route disagrees with SQL's derivation is rejected and nothing is created", async () => {
  await using db = await freshDatabase();
  const before = await traces(db.sql);
  const flow = withStepQueues(
    new Flow({ slug: "tampered" })
      .step({ slug: "fetch" }, () => 1)
      .step({ slug: "classify", dependsOn: ["fetch"] }, () => 2)
      .step({ slug: "deliver", dependsOn: ["classify"] }, () => 3),
  );
  // As if the TypeScript mirror had a bug: the index fallback where SQL derives the readable name.
  const definition = extractDefinition(flow);
  const tampered = {
    ...definition,
    routes: definition.routes.map((route, index) =>
      index === 1 ? { ...route, queue_name: "tampered__1" } : route
    ),
  } as unknown as postgres.JSONValue;

  await assert.rejects(
    db.sql`select sluice.ensure_flow_compiled(${db.sql.json(tampered)}::jsonb, 'production')`,
    (error: Error) => {
      assert.equal(
        error.message,
        'Invalid flow definition: the route of step "classify" of flow "tampered" is ' +
          '"tampered__1", but SQL derives "tampered__classify"',
      );
      return true;
    },
  );
  assert.deepEqual(await traces(db.sql), before, "nothing was created");
  const [{ exists }] = await db.sql`
    select exists (
      select 1 from pgmq.list_queues()
      where queue_name in ('tampered__fetch', 'tampered__classify', 'tampered__1')
    ) as exists
  `;
  assert.equal(exists, false, "no queue of the flow exists");

  const [{ result }] = await db.sql`
    select sluice.ensure_flow_compiled(
      ${db.sql.json(definition as unknown as postgres.JSONValue)}::jsonb, 'production'
    ) as result
  `;
  assert.equal(result.outcome, "compiled", "the untampered definition still compiles");
});

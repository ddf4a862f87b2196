// Exact type equality for type tests: `const _x: Equals<A, B> = true` fails to compile unless A and
// B are identical (not merely mutually assignable).

export type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2)
  ? true
  : false;

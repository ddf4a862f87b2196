// Small helpers shared by the generator's modules.

/** Orders strings by code point, the same on every machine and locale (output must be stable). */
export function byCodePoint(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

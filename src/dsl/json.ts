/**
 * JSON types: what step handlers may return and what crosses into Postgres as `jsonb`.
 *
 * @module
 */

/**
 * A JSON primitive.
 *
 * @example Usage
 * ```ts
 * import type { JsonPrimitive } from "@sluice/sluice";
 *
 * const value: JsonPrimitive = "paid";
 * ```
 */
export type JsonPrimitive = string | number | boolean | null;

/**
 * A JSON array.
 *
 * @example Usage
 * ```ts
 * import type { JsonArray } from "@sluice/sluice";
 *
 * const value: JsonArray = [1, "two", { three: 3 }];
 * ```
 */
export type JsonArray = Json[];

/**
 * A JSON object. A property may be `undefined`: `JSON.stringify` drops it, so it arrives as a
 * missing key.
 *
 * @example Usage
 * ```ts
 * import type { JsonObject } from "@sluice/sluice";
 *
 * const value: JsonObject = { id: 1, tags: ["a"], note: undefined };
 * ```
 */
export type JsonObject = { [key: string]: Json | undefined };

/**
 * Any JSON value: the type of an untyped flow input and of stored step outputs.
 *
 * @example Usage
 * ```ts
 * import type { Json } from "@sluice/sluice";
 *
 * const value: Json = { order: { id: 7, lines: [{ sku: "x", qty: 2 }] } };
 * ```
 */
export type Json = JsonPrimitive | JsonArray | JsonObject;

/**
 * Maps `T` to itself when it survives a JSON round trip unchanged, and puts `never` at every
 * position that does not: functions and methods, symbols and symbol keys, `bigint`, `undefined`
 * outside an object property, and therefore class instances such as `Date`, `Map` or `Set`.
 * Interfaces and class instances with data fields only are accepted, unlike with {@linkcode Json},
 * which needs an index signature.
 *
 * A handler's output must satisfy `Out extends JsonCompatible<Out>`.
 *
 * @typeParam T The type to check.
 *
 * @example Usage
 * ```ts
 * import type { JsonCompatible } from "@sluice/sluice";
 *
 * interface Order {
 *   id: number;
 *   paidAt?: string;
 * }
 * const order: JsonCompatible<Order> = { id: 7 };
 * ```
 */
export type JsonCompatible<T> = T extends Json ? T
  : T extends readonly unknown[] ? { [K in keyof T]: JsonCompatible<T[K]> }
  : T extends (...args: never) => unknown ? never
  : T extends object ? {
      [K in keyof T]: K extends symbol ? never
        : undefined extends T[K] ? JsonCompatible<Exclude<T[K], undefined>> | undefined
        : JsonCompatible<T[K]>;
    }
  : never;

/**
 * The instrumentation scope of every span and instrument sluice creates, on producers and workers.
 *
 * @module
 */

/** The instrumentation scope name: what a tracing backend shows as the library. */
export const INSTRUMENTATION_SCOPE = "sluice";

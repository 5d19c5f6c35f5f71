/**
 * Planted secrets and the scanner that looks for them. Each secret is distinct, so a hit names the
 * place it was planted; each is plain alphanumeric, so it reads the same percent-encoded, in JSON
 * and in `util.inspect`.
 */
import { inspect } from 'node:util';
import type { BalancerEvents } from '../../src/index.js';

export const SECRET = {
  originPassword: 'PlantOriginPw1x',
  queryToken: 'PlantQueryTok2x',
  bearer: 'PlantBearerTok3x',
  cookie: 'PlantCookieVal4x',
  apiKey: 'PlantApiKey5x',
  accessKeyId: 'PLANTAKID6X',
  secretAccessKey: 'PlantSecretKey7x',
  sessionToken: 'PlantSessionTok8x',
  bodyPassword: 'PlantBodyPw9x',
  bodyWhole: 'PlantBodyText10x',
  unknownOption: 'PlantUnknownOpt11x',
  tlsKey: 'PlantTlsKeyPem12x',
  headerFnToken: 'PlantHeaderFnTok13x',
  headerFnProof: 'PlantHeaderFnProof14x',
  signature: 'PlantSignature15x',
} as const;

export const ALL_SECRETS: readonly string[] = Object.values(SECRET);

/** JSON that survives cycles, bigints and functions. */
function json(value: unknown): string {
  const seen = new WeakSet<object>();
  try {
    return JSON.stringify(value, (_key, v: unknown) => {
      if (typeof v === 'object' && v !== null) {
        if (seen.has(v)) return '[cycle]';
        seen.add(v);
      }
      return typeof v === 'bigint' ? String(v) : v;
    });
  } catch (error) {
    return `[unserialisable: ${String(error)}]`;
  }
}

/** Every way a user may print a value: message, stack, JSON, inspect (deep, hidden), String. */
export function renderings(value: unknown): string[] {
  const out = [
    json(value),
    inspect(value, { depth: 10, showHidden: true, getters: false, maxArrayLength: 1_000 }),
    inspect(value, { depth: 10, showHidden: false }),
  ];
  try {
    out.push(String(value));
  } catch {
    // A null-prototype object has no toString: the other renderings cover it.
  }
  if (value instanceof Error) {
    out.push(value.message, value.stack ?? '');
    // Causes, however deep, and however they were attached.
    let cause = (value as { cause?: unknown }).cause;
    for (let depth = 0; cause !== undefined && depth < 10; depth++) {
      out.push(...renderings(cause));
      cause = (cause as { cause?: unknown } | null)?.cause;
    }
  }
  return out;
}

/** The planted secrets found in any rendering of `value`, with where. */
export function leaks(value: unknown, secrets: readonly string[] = ALL_SECRETS): string[] {
  const found = new Set<string>();
  for (const text of renderings(value)) {
    for (const secret of secrets) if (text.includes(secret)) found.add(secret);
  }
  return [...found];
}

/** Every event a balancer emits. */
export const EVENT_NAMES = [
  'pick',
  'route',
  'success',
  'failure',
  'retry',
  'eject',
  'restore',
  'panic',
  'saturated',
  'ready',
  'drained',
  'limit',
  'transit',
  'rehash',
  'shardAdded',
  'shardRemoved',
] as const satisfies readonly (keyof BalancerEvents)[];

/** Fails to compile when `BalancerEvents` gains an event the list above does not have. */
type Unlisted = Exclude<keyof BalancerEvents, (typeof EVENT_NAMES)[number]>;
export const EVERY_EVENT_LISTED: [Unlisted] extends [never] ? true : Unlisted = true;

/** Subscribes to every event; the payloads collected, by event name. */
export function collectEvents(balancer: object): Map<string, unknown[]> {
  const emitter = balancer as { on(name: string, listener: (...payload: unknown[]) => void): void };
  const seen = new Map<string, unknown[]>();
  for (const name of EVENT_NAMES) {
    seen.set(name, []);
    emitter.on(name, (...payload: unknown[]) => seen.get(name)!.push(payload));
  }
  return seen;
}

/** What a thrown or rejected call ended with. */
export async function outcomeOf(call: () => unknown): Promise<unknown> {
  try {
    return await call();
  } catch (error) {
    return error;
  }
}

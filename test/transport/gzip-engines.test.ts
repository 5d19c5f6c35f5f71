/**
 * gzip engines reused across bodies: each output is one whole gzip member of its own input —
 * bodies compressed at once on more engines than are kept never mix, an engine reset after a
 * body starts the next one clean, and outputs larger than one output chunk come back whole.
 */
import { randomBytes } from 'node:crypto';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { GzipEngines } from '../../src/transport/gzip-engines.js';

const lines = (n: number, tag: string) =>
  Buffer.from(
    Array.from({ length: n }, (_, i) => `{"id":${i},"tag":"${tag}","note":"row ${i}"}\n`).join(''),
  );

describe('GzipEngines', () => {
  it('one after another on one engine: each output decodes to its own input', async () => {
    const engines = new GzipEngines(1, 1);
    for (let b = 0; b < 30; b++) {
      const input = lines(50 + b * 7, `b${b}`);
      const out = await engines.compress(input);
      expect(zlib.gunzipSync(out).equals(input)).toBe(true);
    }
  });

  it('many at once, more than the engines kept: none mixes with another', async () => {
    const engines = new GzipEngines(6, 2);
    const inputs = Array.from({ length: 12 }, (_, b) => lines(300 + b, `c${b}`));
    const outs = await Promise.all(inputs.map((input) => engines.compress(input)));
    for (const [b, out] of outs.entries()) {
      expect(zlib.gunzipSync(out).equals(inputs[b]!)).toBe(true);
    }
    // And again, on the engines kept from the first round.
    const again = await Promise.all(inputs.map((input) => engines.compress(input)));
    for (const [b, out] of again.entries()) expect(out.equals(outs[b]!)).toBe(true);
  });

  it('an empty body, and one whose output spans several output chunks', async () => {
    const engines = new GzipEngines(1, 1);
    const empty = await engines.compress(new Uint8Array(0));
    expect(zlib.gunzipSync(empty).length).toBe(0);
    const noise = randomBytes(300 * 1024);
    const out = await engines.compress(noise);
    expect(out.length).toBeGreaterThan(256 * 1024);
    expect(zlib.gunzipSync(out).equals(noise)).toBe(true);
    // An output is a copy, not a view of the engine's buffer a later body overwrites.
    const first = await engines.compress(lines(20, 'x'));
    const copy = Buffer.from(first);
    await engines.compress(lines(20, 'y'));
    expect(first.equals(copy)).toBe(true);
    expect(first.buffer.byteLength).toBeLessThan(64 * 1024);
  });
});

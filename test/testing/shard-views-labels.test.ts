import { describe, expect, it } from 'vitest';
import { shardViews } from '../../src/testing/index.js';

describe('shardViews: a write throws in sloppy-mode code too', () => {
  it("a sloppy-mode write to a view's labels throws (docs/reference.md: a write to one throws, from sloppy-mode code too)", () => {
    const [v] = shardViews([{ id: 'a', labels: { zone: 'eu' } }]);
    const write = new Function('s', "s.labels.zone = 'us';") as (s: unknown) => void;
    expect(() => write(v)).toThrow(TypeError);
  });
});

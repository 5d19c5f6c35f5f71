import { describe, expect, it } from 'vitest';
import { ConfigError, NoShardAvailableError, roundRobin } from '../../src/index.js';
import { makeBalancer } from '../helpers.js';

function make(extra: Record<string, unknown> = {}) {
  const { clock, balancer } = makeBalancer({
    shards: [
      { id: 'eu-1', target: 'a', labels: { region: 'eu', site: 'onprem' } },
      { id: 'us-1', target: 'b', labels: { region: 'us', site: 'cloud' } },
    ],
    picker: roundRobin(),
    ...extra,
  });
  return { clock, balancer };
}

describe('rule grammar: a label no shard has', () => {
  for (const label of ['toString', 'constructor', 'hasOwnProperty', 'valueOf']) {
    it(`require: { ${label}: 'x' } is a ConfigError (no shard has the label "${label}")`, async () => {
      const { balancer } = make();
      const error = await balancer
        .run(async (s) => s.id, { require: { [label]: 'x' } })
        .catch((e) => e);
      expect(error).toBeInstanceOf(ConfigError);
      expect(String(error.message)).toContain(label);
      await balancer.close();
    });
  }

  it("prefer: [{ constructor: 'x' }] is a ConfigError at construction", () => {
    expect(() => make({ prefer: [{ constructor: 'x' }] })).toThrow(ConfigError);
  });
});

describe('rule text never echoes URL credentials', () => {
  it('NoShardAvailableError for a rule whose value is a URL with credentials', async () => {
    const { balancer } = makeBalancer({
      shards: [{ id: 'a', target: 'a', labels: { origin: 'http://10.0.0.1' } }],
      picker: roundRobin(),
    });
    const error = await balancer
      .run(async (s) => s.id, { require: { origin: 'http://admin:hunter2@10.0.0.9/?token=abc' } })
      .catch((e) => e);
    expect(error).toBeInstanceOf(NoShardAvailableError);
    expect(String(error.message)).not.toContain('hunter2');
    expect(String(error.message)).not.toContain('token=abc');
    await balancer.close();
  });
});

/**
 * `balancer.reportLoad(shard, figures)` from a custom transport's `send`, with the ShardState the
 * send was given (the JSDoc's recipe), throws a ConfigError when that shard was removed (drain)
 * while the call ran: the record that the shard wrote fails. The HTTP transport had the same bug
 * (docs/performance.md "Found on the way, and fixed") and was fixed for itself only.
 */
import { describe, expect, it } from 'vitest';
import { makeBalancer, resolveAfter, shardsOf, tick } from '../helpers.js';

describe('reportLoad from a send whose shard was removed while it ran (drain)', () => {
  for (const load of [3, { cpuUtilization: 0.5, rpsFractional: 100, eps: 0 }] as const) {
    it(`a custom transport feeding ${typeof load === 'number' ? 'x-shard-load' : 'an ORCA report'}: the run still succeeds`, async () => {
      const { clock, balancer } = makeBalancer({
        shards: shardsOf(['a', 'b']),
        retry: { attempts: 1 },
      });
      let sentTo: string | undefined;
      const run = balancer.run(async (shard) => {
        sentTo = shard.id;
        await resolveAfter(clock, 10, undefined); // the call is under way
        // The reply carries the shard's load: fed with the shard the send was given.
        balancer.reportLoad(shard, load);
        return 'written';
      });
      const outcome = run.then(
        (v) => ({ ok: true as const, v }),
        (e: unknown) => ({ ok: false as const, e }),
      );
      await tick(clock, 1);
      expect(sentTo).toBeDefined();
      // The shard leaves with drain: docs/reference.md "its in-flight calls finish".
      const removed = balancer.removeShard(sentTo!, { drain: true });
      await tick(clock, 20);
      await removed;
      const result = await outcome;
      await balancer.close();
      // src/core/balancer.ts reportLoad JSDoc: "a custom one may, with the shard or id its `send` was
      // given"; docs/performance.md calls the ConfigError in this case a bug (fixed for HTTP only).
      expect(result.ok ? 'written' : String(result.e)).toBe('written');
    });
  }
});

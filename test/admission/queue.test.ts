/**
 * The admission queue (`RunQueue`): first in, first out; a retry put first; any node leaves in
 * place, once, and the size stays exact.
 */
import { describe, expect, it } from 'vitest';
import { type QueueNode, RunQueue } from '../../src/admission/queue.js';

interface Node extends QueueNode {
  name: string;
}
const node = (name: string): Node => ({ name, prev: undefined, next: undefined, queued: false });

function names(queue: RunQueue<Node>): string[] {
  const out: string[] = [];
  for (let n = queue.head; n !== undefined; n = n.next as Node | undefined) out.push(n.name);
  return out;
}

describe('RunQueue', () => {
  it('keeps arrival order, with an unshifted node first', () => {
    const queue = new RunQueue<Node>();
    for (const name of ['a', 'b', 'c']) queue.push(node(name));
    queue.unshift(node('retry'));
    expect(names(queue)).toEqual(['retry', 'a', 'b', 'c']);
    expect(queue.size).toBe(4);
  });

  it('removes a node from the head, the middle or the tail, and marks it out', () => {
    const queue = new RunQueue<Node>();
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map(node) as [Node, Node, Node, Node];
    for (const n of [a, b, c, d]) queue.push(n);
    queue.remove(b);
    expect(names(queue)).toEqual(['a', 'c', 'd']);
    queue.remove(a);
    queue.remove(d);
    expect(names(queue)).toEqual(['c']);
    expect([a.queued, b.queued, c.queued, d.queued]).toEqual([false, false, true, false]);
    // The tail moved back to c: a push lands after it.
    queue.push(node('e'));
    expect(names(queue)).toEqual(['c', 'e']);
    expect(queue.size).toBe(2);
  });

  it('removing a node twice, or one never queued, changes nothing', () => {
    const queue = new RunQueue<Node>();
    const a = node('a');
    queue.push(a);
    queue.push(node('b'));
    queue.remove(a);
    queue.remove(a);
    queue.remove(node('stranger'));
    expect({ names: names(queue), size: queue.size }).toEqual({ names: ['b'], size: 1 });
  });

  it('empties fully: head undefined, and a push after starts afresh', () => {
    const queue = new RunQueue<Node>();
    const a = node('a');
    queue.unshift(a);
    queue.remove(a);
    expect({ head: queue.head, size: queue.size }).toEqual({ head: undefined, size: 0 });
    queue.push(node('b'));
    queue.unshift(node('c'));
    expect(names(queue)).toEqual(['c', 'b']);
  });
});

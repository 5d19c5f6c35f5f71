/** A node of the admission queue. */
export interface QueueNode {
  prev: QueueNode | undefined;
  next: QueueNode | undefined;
  queued: boolean;
}

/**
 * The admission queue: an intrusive doubly linked FIFO, so a run whose signal aborts leaves it in
 * O(1) and nothing is allocated per run beyond the run itself.
 */
export class RunQueue<N extends QueueNode> {
  head: N | undefined;
  private tail: N | undefined;
  size = 0;

  push(node: N): void {
    node.prev = this.tail;
    node.next = undefined;
    if (this.tail === undefined) this.head = node;
    else this.tail.next = node;
    this.tail = node;
    node.queued = true;
    this.size++;
  }

  /** Puts a node first: a retry was admitted before everything that waits. */
  unshift(node: N): void {
    node.next = this.head;
    node.prev = undefined;
    if (this.head === undefined) this.tail = node;
    else this.head.prev = node;
    this.head = node;
    node.queued = true;
    this.size++;
  }

  remove(node: N): void {
    if (!node.queued) return;
    if (node.prev === undefined) this.head = node.next as N | undefined;
    else node.prev.next = node.next;
    if (node.next === undefined) this.tail = node.prev as N | undefined;
    else node.next.prev = node.prev;
    node.prev = undefined;
    node.next = undefined;
    node.queued = false;
    this.size--;
  }
}

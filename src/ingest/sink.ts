/**
 * Where taken records go: one run each (`RecordSink`) or batches (`BatchSink`). The ingest loop
 * and the write stream drive either the same way, and the ledger keeps the account.
 */
export interface Sink<Rec> {
  /**
   * Takes one record (already counted as taken; `seq`: its index in the source): sends it,
   * batches it, or fails it.
   */
  add(record: Rec, seq: number): void;
  /**
   * What to await before taking the next record (backpressure), or undefined when there is room
   * now. Resolves once there is room.
   */
  wait(): Promise<void> | undefined;
  /** No more records will come: send what is held. Records still retrying are flushed as they come. */
  end(): void;
}

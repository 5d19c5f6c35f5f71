/** Outstanding work on one shard: calls and the bytes they declared. */
export class InFlight {
  count = 0;
  bytes = 0;

  start(bytes: number): void {
    this.count++;
    this.bytes += bytes;
  }

  end(bytes: number): void {
    this.count--;
    this.bytes -= bytes;
  }
}

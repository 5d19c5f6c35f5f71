/**
 * Ctrl-C and `kill` during a load. The first SIGINT or SIGTERM stops it gracefully: no record
 * more is read, what is in flight settles, the checkpoint is saved. A second one stops it at
 * once: what is in flight is abandoned (it is read again on resume), the checkpoint still saved.
 * A third one leaves at once, for a load stuck where nothing more can be done.
 */

/** What signals are heard on: the process, or an emitter in tests. */
export interface SignalHost {
  on(event: 'SIGINT' | 'SIGTERM', listener: () => void): unknown;
  off(event: 'SIGINT' | 'SIGTERM', listener: () => void): unknown;
}

/** What each signal, in turn, does. */
export interface StopSteps {
  graceful(signal: 'SIGINT' | 'SIGTERM'): void;
  immediate(signal: 'SIGINT' | 'SIGTERM'): void;
  leave(signal: 'SIGINT' | 'SIGTERM'): void;
}

/** Listens for SIGINT and SIGTERM while a load runs; `dispose()` gives them back. */
export class StopOnSignals {
  /** The first signal heard, if any. */
  first: 'SIGINT' | 'SIGTERM' | undefined;
  #count = 0;
  readonly #host: SignalHost;
  readonly #listeners: [event: 'SIGINT' | 'SIGTERM', listener: () => void][];

  constructor(host: SignalHost, steps: StopSteps) {
    this.#host = host;
    this.#listeners = (['SIGINT', 'SIGTERM'] as const).map((event) => {
      const listener = () => {
        this.#count++;
        if (this.#count === 1) {
          this.first = event;
          steps.graceful(event);
        } else if (this.#count === 2) steps.immediate(event);
        else steps.leave(event);
      };
      host.on(event, listener);
      return [event, listener];
    });
  }

  dispose(): void {
    for (const [event, listener] of this.#listeners) this.#host.off(event, listener);
  }
}

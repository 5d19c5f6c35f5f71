/**
 * Caller signals shared by many runs (one `AbortSignal` for a whole ingestion is the common
 * case): one 'abort' listener per signal, whatever the number of runs on it, so a thousand runs
 * do not print `MaxListenersExceededWarning` nor cost a listener each.
 */
export class SignalWatch<R> {
  readonly #entries = new WeakMap<AbortSignal, { runs: Set<R>; listener: () => void }>();

  constructor(private readonly onAbort: (run: R, reason: unknown) => void) {}

  add(signal: AbortSignal, run: R): void {
    let entry = this.#entries.get(signal);
    if (entry === undefined) {
      const runs = new Set<R>();
      const listener = (): void => {
        this.#entries.delete(signal);
        for (const r of [...runs]) this.onAbort(r, signal.reason);
      };
      entry = { runs, listener };
      this.#entries.set(signal, entry);
      signal.addEventListener('abort', listener, { once: true });
    }
    entry.runs.add(run);
  }

  remove(signal: AbortSignal, run: R): void {
    const entry = this.#entries.get(signal);
    if (entry === undefined || !entry.runs.delete(run) || entry.runs.size > 0) return;
    this.#entries.delete(signal);
    signal.removeEventListener('abort', entry.listener);
  }
}

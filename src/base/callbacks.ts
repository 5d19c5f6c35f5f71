import { EventEmitter } from 'eventemitter3';

/**
 * The user's code that runs inside the balancer's own bookkeeping — event listeners,
 * `ctx.onAbort` listeners, a limit's `onSample`, `retry.retryable` — cannot break it. The
 * balancer goes on as if the callback had returned (see each caller for what it assumes), so
 * every run still settles and frees its slot, and the callback's error is thrown again on a turn
 * of its own: an uncaught exception, as Node reports an error thrown by an `EventTarget` or
 * `diagnostics_channel` listener. It is the caller's bug, so it is not swallowed.
 */
export function rethrowLater(error: unknown): void {
  queueMicrotask(() => {
    throw error;
  });
}

/**
 * An `EventEmitter` (eventemitter3) whose `emit` calls the listeners as usual, except that one
 * that throws cannot break the emitter: what emitted goes on, and the error is thrown again with
 * {@link rethrowLater}. The event's later listeners are skipped, as with Node's `EventEmitter`.
 */
export class GuardedEmitter<
  Events extends EventEmitter.ValidEventTypes,
> extends EventEmitter<Events> {
  override emit<E extends EventEmitter.EventNames<Events>>(
    event: E,
    ...args: EventEmitter.EventArgs<Events, E>
  ): boolean {
    try {
      return super.emit(event, ...args);
    } catch (error) {
      rethrowLater(error);
      return true;
    }
  }
}

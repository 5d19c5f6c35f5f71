import type { HttpResponse } from './types.js';

/** A response read in full. A class: one shape, methods on the prototype, no closures per call. */
export class Response implements HttpResponse {
  constructor(
    readonly statusCode: number,
    readonly headers: Record<string, string | string[] | undefined>,
    readonly body: Buffer,
    readonly shardId: string,
  ) {}

  text(): string {
    return this.body.toString('utf8');
  }

  json<J = unknown>(): J {
    return JSON.parse(this.body.toString('utf8')) as J;
  }
}

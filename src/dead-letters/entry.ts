/**
 * The dead-letter line: one NDJSON line per record that did not get written, and the way back
 * from it. A record keeps its type across the round trip — a string stays a string (a pre-encoded
 * JSONL line is resent untouched), bytes come back as a `Buffer`, anything else is its JSON — and
 * the error is reduced through the redaction module, so the file holds no credential.
 */
import { isShardwiseError } from '../base/errors.js';
import { reduceError } from '../base/redact.js';

/** How a record ended: `failed` (known not stored) or `uncertain` (sent, no answer came). */
export type DeadLetterOutcomeKind = 'failed' | 'uncertain';

/** The error of a dead letter, as written: no stack, no request, no secret. */
export interface DeadLetterErrorInfo {
  /** The error's stable `code` (`SHARDWISE_RETRIES_EXHAUSTED`, `ECONNRESET`), else its name. */
  code: string;
  /** Its message, redacted (URL credentials, queries, credential-named values removed). */
  message: string;
  /** The shard of the last attempt; `null` when the record was never sent. */
  shard: string | null;
  /** Attempts made (0 when it was never sent). */
  attempts: number;
}

/** What a dead letter says besides the record: the file line's other fields. */
export interface DeadLetterOutcome {
  outcome: DeadLetterOutcomeKind;
  error: DeadLetterErrorInfo;
  /** When it was dead-lettered: an ISO 8601 date (wall clock). */
  at: string;
}

/** A dead letter as read back: the record (decoded) and its outcome. */
export interface DeadLetterEntry<Rec = unknown> extends DeadLetterOutcome {
  record: Rec;
}

/**
 * A record to dead-letter, as the ingestion hands it over. `shard` and `attempts` say where and
 * how often it was tried when the error does not (a `RetriesExhaustedError` does).
 */
export interface DeadLetter<Rec = unknown> {
  record: Rec;
  error: unknown;
  outcome: DeadLetterOutcomeKind;
  shard?: string;
  attempts?: number;
}

/** A `code` fit to write: an identifier, not text that could carry anything. */
const CODE = /^[\w.:-]{1,64}$/;

/** The error of `letter` as it is written: code, redacted message, shard, attempts. */
export function errorInfo(letter: DeadLetter): DeadLetterErrorInfo {
  const error = letter.error;
  const e = (typeof error === 'object' && error !== null ? error : {}) as Record<string, unknown>;
  const reduced = reduceError(error);
  const code =
    typeof e.code === 'string' && CODE.test(e.code)
      ? e.code
      : CODE.test(reduced.name)
        ? reduced.name
        : 'Error';
  const tried = isShardwiseError(error, 'SHARDWISE_RETRIES_EXHAUSTED')
    ? (e.attempts as { shardId: string }[])
    : undefined;
  const shard =
    letter.shard ??
    tried?.[tried.length - 1]?.shardId ??
    (typeof e.shardId === 'string' ? e.shardId : undefined);
  const attempts =
    letter.attempts ?? tried?.length ?? (typeof e.attempts === 'number' ? e.attempts : undefined);
  return {
    code,
    message: reduced.message,
    shard: shard ?? null,
    attempts: attempts ?? (shard === undefined ? 0 : 1),
  };
}

/**
 * {@link errorInfo} remembered for the last error seen: the records of one failed batch share one
 * error object, and its redaction (tens of µs of regular expressions) is done once for all.
 */
export class ErrorInfoMemo {
  private error: unknown = ErrorInfoMemo;
  private shard: string | undefined;
  private attempts: number | undefined;
  private info: DeadLetterErrorInfo | undefined;
  private json = '';

  /** The error of `letter` as written (shared with the letters of the same error: read it only). */
  of(letter: DeadLetter): DeadLetterErrorInfo {
    if (
      this.info === undefined ||
      letter.error !== this.error ||
      letter.shard !== this.shard ||
      letter.attempts !== this.attempts
    ) {
      this.info = errorInfo(letter);
      this.json = JSON.stringify(this.info);
      this.error = letter.error;
      this.shard = letter.shard;
      this.attempts = letter.attempts;
    }
    return this.info;
  }

  /** {@link of} as JSON text. */
  jsonOf(letter: DeadLetter): string {
    this.of(letter);
    return this.json;
  }
}

/**
 * The NDJSON line of a dead letter, newline included:
 * `{"record":…,"error":{…},"outcome":"failed","at":"…"}` — with `"recordEncoding":"base64"` after
 * the record when it is bytes. Throws a `TypeError` for a record JSON cannot hold (a `BigInt`, a
 * cycle, `undefined`, a function).
 */
export function encodeLine(
  letter: DeadLetter,
  at: string,
  errorJson = JSON.stringify(errorInfo(letter)),
): string {
  const record = letter.record;
  let body: string;
  if (typeof record === 'string') body = JSON.stringify(record);
  else if (record instanceof Uint8Array) {
    const b64 = Buffer.from(record.buffer, record.byteOffset, record.byteLength).toString('base64');
    body = `"${b64}","recordEncoding":"base64"`;
  } else {
    const json = JSON.stringify(record) as string | undefined;
    if (json === undefined) {
      throw new TypeError(`a record of type ${typeof record} has no JSON form`);
    }
    body = json;
  }
  return `{"record":${body},"error":${errorJson},"outcome":"${letter.outcome}","at":"${at}"}\n`;
}

/**
 * A parsed line back to its entry, the record decoded; throws a `TypeError` saying what is
 * missing when the value is not a dead-letter line.
 */
export function decodeLine(value: unknown): DeadLetterEntry {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TypeError('not a dead-letter line (not a JSON object)');
  }
  const v = value as Record<string, unknown>;
  if (!('record' in v)) throw new TypeError('not a dead-letter line (no "record")');
  if (v.outcome !== 'failed' && v.outcome !== 'uncertain') {
    throw new TypeError('not a dead-letter line ("outcome" is not "failed" or "uncertain")');
  }
  const error = v.error as Record<string, unknown> | null | undefined;
  if (typeof error !== 'object' || error === null || typeof error.message !== 'string') {
    throw new TypeError('not a dead-letter line ("error" is not { code, message, … })');
  }
  let record = v.record;
  if (v.recordEncoding !== undefined) {
    if (v.recordEncoding !== 'base64' || typeof record !== 'string') {
      throw new TypeError('not a dead-letter line (unknown "recordEncoding")');
    }
    record = Buffer.from(record, 'base64');
  }
  return {
    record,
    error: {
      code: typeof error.code === 'string' ? error.code : 'Error',
      message: error.message,
      shard: typeof error.shard === 'string' ? error.shard : null,
      attempts: typeof error.attempts === 'number' ? error.attempts : 0,
    },
    outcome: v.outcome,
    at: typeof v.at === 'string' ? v.at : '',
  };
}

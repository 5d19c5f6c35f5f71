/**
 * `shardwise/sources`: durable loads. File sources that report their position (`readJsonl`),
 * checkpoints saved atomically (`saveCheckpoint`, `loadCheckpoint`), and dead letters kept on the
 * disk (`DeadLetterFile`, `readDeadLetters`). See docs/durable-loads.md.
 */
export type {
  DeadLetter,
  DeadLetterEntry,
  DeadLetterErrorInfo,
  DeadLetterOutcome,
  DeadLetterOutcomeKind,
} from '../dead-letters/entry.js';
export { DeadLetterError } from '../dead-letters/error.js';
export {
  DEAD_LETTER_DEFAULTS,
  DeadLetterFile,
  type DeadLetterFileOptions,
} from '../dead-letters/file.js';
export {
  type DeadLetterSource,
  type ReadDeadLettersOptions,
  readDeadLetters,
} from '../dead-letters/read.js';
export type {
  CustomDeadLetterSink,
  DeadLetterFileSpec,
  DeadLetterOption,
  DeadLetterSink,
} from '../dead-letters/types.js';
export {
  CHECKPOINT_VERSION,
  type Checkpoint,
  type CheckpointInput,
  loadCheckpoint,
  saveCheckpoint,
} from './checkpoint.js';
export { CheckpointWriter } from './checkpoint-writer.js';
export { CheckpointError, SourceError } from './errors.js';
export { type JsonlSource, type ReadJsonlOptions, readJsonl } from './jsonl.js';
export {
  type PositionedSource,
  positionReader,
  SOURCE_POSITION,
  type SourcePosition,
} from './position.js';

/**
 * `shardwise/sources`: durable loads. File sources that report their position (`readJsonl`),
 * checkpoints saved atomically (`saveCheckpoint`, `loadCheckpoint`), and dead letters kept on the
 * disk (`DeadLetterFile`, `readDeadLetters`). See docs/durable-loads.md.
 */
export { DeadLetterError } from '../dead-letters/error.js';
export {
  CHECKPOINT_VERSION,
  type Checkpoint,
  type CheckpointInput,
  loadCheckpoint,
  saveCheckpoint,
} from './checkpoint.js';
export { CheckpointError, SourceError } from './errors.js';
export { type JsonlSource, type ReadJsonlOptions, readJsonl } from './jsonl.js';
export {
  type PositionedSource,
  positionReader,
  SOURCE_POSITION,
  type SourcePosition,
} from './position.js';

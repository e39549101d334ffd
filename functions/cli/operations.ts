/**
 * The operator's commands: seek (move checkpoints on purpose), pause, resume and status. Each takes its
 * ports and prints; the CLI entry wires them. Bad arguments change nothing and exit 2.
 */

import { randomBytes } from 'node:crypto';
import type { WriteMode } from '../config/config.js';
import { DrainError } from '../kernel/errors.js';
import type { CheckpointControls, Checkpoints, Lease, Source } from '../kernel/ports.js';
import type { Watermarks } from '../kernel/records.js';
import { partitionId } from '../kernel/records.js';
import { writeModeNamed } from '../modes/registry.js';

export class UsageError extends DrainError {
  constructor(message: string) {
    super(message, { retriable: false, code: 'usage' });
  }
}

export type SeekTarget =
  | { kind: 'offset'; offset: number }
  | { kind: 'timestamp'; timestamp: number }
  | { kind: 'earliest' }
  | { kind: 'latest' };

export interface OperatorArgs {
  topic: string;
  partition: number | null;
  target: SeekTarget | null;
  reason: string | null;
  force: boolean;
  /** seek --timestamp: may move a partition forward (past records not drained yet). */
  allowForward: boolean;
  dryRun: boolean;
  json: boolean;
  /** status: every column, however wide. */
  wide: boolean;
}

/** `--topic T [--partition P] (--offset N | --timestamp ISO | --earliest | --latest) --reason "..." [--force] [--allow-forward] [--dry-run] [--json]` */
export function parseOperatorArgs(argv: readonly string[]): OperatorArgs {
  const args: OperatorArgs = {
    topic: '',
    partition: null,
    target: null,
    reason: null,
    force: false,
    allowForward: false,
    dryRun: false,
    json: false,
    wide: false,
  };
  const targets: SeekTarget[] = [];
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const value = (): string => {
      const next = argv[++i];
      if (next === undefined || next.startsWith('--')) throw new UsageError(`${flag} needs a value`);
      return next;
    };
    switch (flag) {
      case '--topic':
        args.topic = value();
        break;
      case '--partition': {
        const text = value();
        if (!/^\d+$/.test(text)) throw new UsageError(`--partition "${text}" is not a partition number`);
        args.partition = Number(text);
        break;
      }
      case '--offset': {
        const text = value();
        if (!/^\d+$/.test(text)) throw new UsageError(`--offset "${text}" is not an offset`);
        targets.push({ kind: 'offset', offset: Number(text) });
        break;
      }
      case '--timestamp': {
        const text = value();
        const timestamp = Date.parse(text);
        if (!/^\d{4}-\d{2}-\d{2}T/.test(text) || Number.isNaN(timestamp)) {
          throw new UsageError(`--timestamp "${text}" is not an ISO-8601 time (e.g. 2026-01-31T12:00:00Z)`);
        }
        targets.push({ kind: 'timestamp', timestamp });
        break;
      }
      case '--earliest':
        targets.push({ kind: 'earliest' });
        break;
      case '--latest':
        targets.push({ kind: 'latest' });
        break;
      case '--reason':
        args.reason = value();
        break;
      case '--force':
        args.force = true;
        break;
      case '--allow-forward':
        args.allowForward = true;
        break;
      case '--dry-run':
        args.dryRun = true;
        break;
      case '--json':
        args.json = true;
        break;
      case '--wide':
        args.wide = true;
        break;
      default:
        throw new UsageError(`unknown argument "${flag}"`);
    }
  }
  if (targets.length > 1) throw new UsageError('give one of --offset, --timestamp, --earliest, --latest');
  args.target = targets[0] ?? null;
  return args;
}

export interface OperationsDeps {
  readonly checkpoints: Checkpoints & CheckpointControls;
  readonly source: Source;
  readonly actor: string;
  readonly writeMode: WriteMode;
  readonly topics: readonly string[];
  readonly print: (line: string) => void;
}

async function partitionsOf(deps: OperationsDeps, args: OperatorArgs): Promise<Watermarks[]> {
  if (args.topic === '') throw new UsageError('--topic is required');
  if (!deps.topics.includes(args.topic)) {
    throw new UsageError(`unknown topic "${args.topic}": this pipeline drains ${deps.topics.join(', ')}`);
  }
  let marks: Watermarks[];
  try {
    marks = await deps.source.watermarks([args.topic]);
  } catch (error) {
    throw new UsageError(`topic "${args.topic}" cannot be read from Kafka: ${(error as Error).message}`);
  }
  if (args.partition === null) return marks;
  const one = marks.filter((m) => m.partition === args.partition);
  if (one.length === 0) {
    throw new UsageError(
      `partition ${args.partition} is out of range: ${args.topic} has partitions 0-${marks.length - 1}`,
    );
  }
  return one;
}

function requireReason(args: OperatorArgs): string {
  if (args.reason === null || args.reason.trim() === '')
    throw new UsageError('--reason "..." is required: it goes into the audit trail');
  return args.reason;
}

/** Moves checkpoints under leases (all or nothing), with an audit record each. Returns the exit code. */
export async function seek(deps: OperationsDeps, args: OperatorArgs): Promise<number> {
  const reason = requireReason(args);
  if (args.target === null) throw new UsageError('give one of --offset, --timestamp, --earliest, --latest');
  const marks = await partitionsOf(deps, args);
  const target = args.target;
  const atTime =
    target.kind === 'timestamp' ? await deps.source.offsetsAt(args.topic, target.timestamp) : undefined;
  const plan = marks.map((mark) => {
    const to =
      target.kind === 'offset'
        ? target.offset
        : target.kind === 'earliest'
          ? mark.logStart
          : target.kind === 'latest'
            ? mark.end
            : (atTime!.get(mark.partition) ?? mark.end);
    if ((to < mark.logStart || to > mark.end) && !args.force) {
      throw new UsageError(
        `offset ${to} is outside partition ${mark.partition}'s log [${mark.logStart}, ${mark.end}]; --force to move there anyway`,
      );
    }
    return { mark, to };
  });

  const owner = `seek:${deps.actor}:${randomBytes(3).toString('hex')}`;
  const leases: { lease: Lease; to: number; mark: Watermarks }[] = [];
  try {
    for (const { mark, to } of plan) {
      const lease = await deps.checkpoints.acquire(mark, owner, 60_000);
      if (lease === undefined) {
        deps.print(
          `partition ${partitionId(mark)} is leased by a running drain; nothing was moved. Try again once it has finished: pause the schedule first (gcloud scheduler jobs pause <pipeline>-drain-schedule, docs/operations.md), and resume it after the seek.`,
        );
        return 1;
      }
      leases.push({ lease, to, mark });
      if (lease.intent) {
        // A recorded flush whose streams may still commit: moving the checkpoint under it would let its
        // rows land after the move. The next run finishes it; then the seek can go ahead.
        deps.print(
          `partition ${partitionId(mark)} has a flush [${lease.intent.fromOffset}, ${lease.intent.nextOffset}) recorded but not finished; nothing was moved. Run the drain once, then seek again.`,
        );
        return 1;
      }
    }
    if (target.kind === 'timestamp' && !args.allowForward) {
      const forward = leases.filter(({ lease, to }) => lease.nextOffset !== null && to > lease.nextOffset);
      if (forward.length > 0) {
        for (const { lease, to, mark } of forward)
          deps.print(
            `${partitionId(mark)} would move forwards from ${lease.nextOffset} to ${to}: records [${lease.nextOffset}, ${to}) would never be drained`,
          );
        deps.print(
          `nothing was moved: a --timestamp seek moves a partition forwards when no record before the time is left to drain (its checkpoint is before the time); --allow-forward to move those too`,
        );
        return 2;
      }
    }
    for (const { lease, to, mark } of leases) {
      const from = lease.nextOffset;
      const direction =
        from === null ? 'set' : to < from ? 'backwards' : to > from ? 'forwards' : 'unchanged';
      let note = '';
      if (direction === 'backwards') {
        note = `: ${writeModeNamed(deps.writeMode).seekBackNote(to, from!)}`;
      } else if (direction === 'forwards') {
        note = `: records [${from}, ${to}) will never be drained`;
      }
      deps.print(
        `${args.dryRun ? 'would move' : 'moved'} ${partitionId(mark)} from ${from ?? 'no checkpoint'} to ${to} (${direction})${note}`,
      );
      if (!args.dryRun)
        await deps.checkpoints.reset(lease, to, { actor: deps.actor, reason, forced: args.force });
    }
    return 0;
  } finally {
    for (const { lease } of leases) await deps.checkpoints.release(lease).catch(() => {});
  }
}

export async function setPaused(deps: OperationsDeps, args: OperatorArgs, paused: boolean): Promise<number> {
  const reason = requireReason(args);
  if (args.target !== null) throw new UsageError(`${paused ? 'pause' : 'resume'} takes no offset`);
  for (const mark of await partitionsOf(deps, args)) {
    if (args.dryRun) {
      deps.print(`would ${paused ? 'pause' : 'resume'} ${partitionId(mark)}`);
      continue;
    }
    await deps.checkpoints.setPaused(mark, paused, { actor: deps.actor, reason });
    deps.print(`${paused ? 'paused' : 'resumed'} ${partitionId(mark)}`);
  }
  return 0;
}

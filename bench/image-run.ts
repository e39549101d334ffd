/**
 * The job as its image runs it (the bundle made by `node scripts/bundle.mjs --sources --out
 * bench/compiled/image`, the ENTRYPOINT's node flags), watched from outside for its peak RSS and CPU; its
 * stdout kept in a log file of the pipeline's name. Shared by the benches that run whole jobs.
 */
import { spawn } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { imageNodeFlags } from '../test/support/image-flags.js';

const root = join(import.meta.dirname, '..');

/** Peak RSS so far of a running process, MB (VmHWM only grows: the last read before it exits stands). */
function peakRssMb(pid: number): number | undefined {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('VmHWM:'));
    return line === undefined ? undefined : Math.round(Number(line.replace(/\D+/g, '')) / 1024);
  } catch {
    return undefined; // it has exited
  }
}

/** A running process's CPU seconds so far (user + system). */
function cpuSeconds(pid: number): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return undefined;
  }
}

/** BENCH_NODE_FLAGS: node flags after the image's (to weigh one before it goes into the Dockerfile). */
function extraFlags(): string[] {
  return (process.env.BENCH_NODE_FLAGS ?? '').split(/\s+/).filter((f) => f !== '');
}

/** The job as the image runs it, watched for its peak RSS and CPU; its exit code, summary line and those. */
export async function runImage(env: Record<string, string>) {
  const child = spawn(
    process.execPath,
    [...imageNodeFlags(root), ...extraFlags(), join(root, 'bench/compiled/image/job.mjs'), 'run'],
    {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let peak = 0;
  let cpu = 0;
  const watch = setInterval(() => {
    peak = Math.max(peak, peakRssMb(child.pid!) ?? 0);
    cpu = Math.max(cpu, cpuSeconds(child.pid!) ?? 0);
  }, 50);
  let out = '';
  const log = join(tmpdir(), `${env.PIPELINE_ID}.log`);
  child.stdout.on('data', (chunk: Buffer) => {
    appendFileSync(log, chunk);
    out = (out + chunk.toString()).slice(-200_000);
  });
  const code = await new Promise<number>((resolve) => child.on('exit', (c) => resolve(c ?? 1)));
  clearInterval(watch);
  const lines = out.trim().split('\n');
  const summary = lines
    .map((l) => {
      try {
        return JSON.parse(l) as {
          event?: string;
          stopReason?: string;
          recordsRead?: number;
          durationMs?: number;
          runId?: string;
          latencyMs?: { count: number; p50: number | null; p99: number | null; max: number | null };
          /** The partitions the line names (all up to 50; those skipped always). */
          partitions?: { partition: number; skipped?: string }[];
        };
      } catch {
        return {};
      }
    })
    .findLast((l) => l.event === 'run_summary' || l.stopReason !== undefined);
  return { code, summary, peakRssMb: peak, cpuSeconds: cpu, tail: lines.slice(-5), log };
}

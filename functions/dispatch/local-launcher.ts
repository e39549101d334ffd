/**
 * `dispatch --launch local`: the execution's tasks as processes on this machine, as Cloud Run starts them
 * (the same entry and environment, CLOUD_RUN_TASK_INDEX/COUNT and CLOUD_RUN_EXECUTION set), their output
 * passed through line by line; the launch returns when every task has ended, with the worst exit code.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { Launcher } from './launcher.js';

export interface TaskProcess {
  readonly index: number;
  readonly child: ChildProcess;
  readonly exited: Promise<number>;
}

/** Starts `tasks` processes of `run` from this process's own entry (the bundle or the sources). */
export function startTasks(
  tasks: number,
  execution: string,
  env: NodeJS.ProcessEnv,
  write: (line: string) => void,
): TaskProcess[] {
  return Array.from({ length: tasks }, (_, index) => {
    const child = spawn(process.execPath, [...process.execArgv, process.argv[1]!, 'run'], {
      env: {
        ...env,
        CLOUD_RUN_TASK_INDEX: String(index),
        CLOUD_RUN_TASK_COUNT: String(tasks),
        CLOUD_RUN_EXECUTION: execution,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let buffer = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const lines = buffer.split('\n');
      buffer = lines.pop()!;
      for (const line of lines) write(line);
    });
    const exited = new Promise<number>((resolve) =>
      child.on('exit', (code) => {
        if (buffer !== '') write(buffer);
        // A task killed by a signal failed, as Cloud Run counts it.
        resolve(code ?? 1);
      }),
    );
    return { index, child, exited };
  });
}

export function localLauncher(
  env: NodeJS.ProcessEnv,
  pipelineId: string,
  write: (line: string) => void,
  now: () => number = Date.now,
): Launcher {
  return {
    kind: 'local',
    // Nothing this launcher started is still running (it waits for its tasks): the leases say the rest.
    runningTasks: async () => null,
    async launch(tasks) {
      const execution = `${pipelineId}-local-${now().toString(36)}`;
      const started = startTasks(tasks, execution, env, write);
      for (const task of started)
        write(JSON.stringify({ event: 'dispatch_task', execution, index: task.index, pid: task.child.pid }));
      const codes = await Promise.all(started.map((t) => t.exited));
      return { execution, exitCode: Math.max(...codes) };
    },
  };
}

/** How the dispatcher starts an execution, and sees the ones still running. */
export interface Launcher {
  /** `none` (decide only), `local` (task processes here), `cloud-run` (`jobs.run` with the task count). */
  readonly kind: 'none' | 'local' | 'cloud-run';
  /** Tasks of executions not yet finished; null when the launcher cannot tell (leases say it then). */
  runningTasks(): Promise<number | null>;
  /** Starts an execution of `tasks` tasks; `exitCode` when the launcher waited for them. */
  launch(tasks: number): Promise<{ readonly execution: string; readonly exitCode?: number }>;
}

/** `--json` without `--launch`: the decision only. */
export const decideOnly: Launcher = {
  kind: 'none',
  runningTasks: async () => null,
  launch: async () => ({ execution: '' }),
};

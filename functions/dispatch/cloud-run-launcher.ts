/**
 * The dispatcher in the cloud: executions of the drain job through the Cloud Run Admin API's official
 * client (`jobs.run` with `overrides.taskCount`; the executions not yet completed, listed), or of the
 * plaintext gRPC endpoint CLOUD_RUN_ADMIN_ENDPOINT names (tests: no emulator exists, so they serve the
 * client's own protocol). Loaded only here: nothing else needs the package.
 */
import type { DispatchConfig } from '../config/dispatch.js';
import { ConfigError } from '../kernel/errors.js';
import type { Launcher } from './launcher.js';

export async function cloudRunLauncher(
  config: DispatchConfig,
): Promise<Launcher & { close(): Promise<void> }> {
  const job = config.job;
  if (job === null) throw new ConfigError('DISPATCH_JOB', 'is required to launch through Cloud Run');
  const { JobsClient, ExecutionsClient } = await import('@google-cloud/run');
  const endpoint = config.adminEndpoint;
  const grpc = endpoint === null ? undefined : await import('@grpc/grpc-js');
  const options =
    endpoint === null || grpc === undefined
      ? {}
      : {
          servicePath: endpoint.slice(0, endpoint.lastIndexOf(':')),
          port: Number(endpoint.slice(endpoint.lastIndexOf(':') + 1)),
          sslCreds: grpc.credentials.createInsecure(),
        };
  const jobs = new JobsClient(options);
  const executions = new ExecutionsClient(options);
  return {
    kind: 'cloud-run',
    async runningTasks() {
      // The newest hundred (Cloud Run lists executions newest first): a decision launches at most one a
      // period, so one still running is among them; older pages are not read.
      const [listed] = await executions.listExecutions(
        { parent: job, pageSize: 100 },
        { autoPaginate: false },
      );
      // An execution not completed still holds its tasks not finished (running, pending or retried).
      return listed
        .filter((e) => e.completionTime == null)
        .reduce(
          (sum, e) =>
            sum +
            Math.max(
              0,
              (e.taskCount ?? 0) - (e.succeededCount ?? 0) - (e.failedCount ?? 0) - (e.cancelledCount ?? 0),
            ),
          0,
        );
    },
    async launch(tasks) {
      const [operation] = await jobs.runJob({ name: job, overrides: { taskCount: tasks } });
      const metadata = operation.metadata as { name?: string } | null;
      return { execution: metadata?.name ?? operation.name ?? '' };
    },
    close: async () => {
      await Promise.all([jobs.close(), executions.close()]);
    },
  };
}

/**
 * The Cloud Run Admin API as its official client (@google-cloud/run) sees it: a plaintext gRPC server on
 * loopback serving `google.cloud.run.v2.Jobs/RunJob` and `Executions/ListExecutions` from the protos the
 * client ships. No emulator of Cloud Run exists; this fakes the client's transport, so what is proven is
 * our use of the real client (the request it sends, the operation and executions it reads back), not
 * Google's service. An execution's tasks are what `onRun` makes of them: the tests start real task
 * processes and report back as they end.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';

const require = createRequire(import.meta.url);

export interface FakeExecution {
  readonly name: string;
  readonly taskCount: number;
  succeededCount: number;
  failedCount: number;
  completed: boolean;
}

export interface FakeCloudRun {
  /** `host:port`, for CLOUD_RUN_ADMIN_ENDPOINT. */
  readonly endpoint: string;
  /** Every RunJob request: the job's name and the task count of its overrides. */
  readonly runs: { name: string; taskCount: number }[];
  readonly executions: FakeExecution[];
  close(): Promise<void>;
}

/** `onRun`: what starts the execution's tasks; it marks them ended on the execution it is given. */
export async function startFakeCloudRun(
  onRun: (execution: FakeExecution) => void = () => {},
  denied = false,
): Promise<FakeCloudRun> {
  const base = dirname(require.resolve('@google-cloud/run/package.json'));
  const protos = join(base, 'build', 'protos');
  const gaxProtos = join(dirname(require.resolve('google-gax')), '..', '..', 'build', 'protos');
  const options = { includeDirs: [protos, gaxProtos], keepCase: false, longs: String, defaults: true };
  const loaded = grpc.loadPackageDefinition(
    protoLoader.loadSync(['google/cloud/run/v2/job.proto', 'google/cloud/run/v2/execution.proto'], options),
  ) as any;
  const v2 = loaded.google.cloud.run.v2;
  // The operation's metadata is an Execution packed in an Any, encoded as the client decodes it.
  const root = protobuf.Root.fromJSON(require(join(protos, 'protos.json')));
  const Execution = root.lookupType('google.cloud.run.v2.Execution');
  const runs: { name: string; taskCount: number }[] = [];
  const executions: FakeExecution[] = [];
  const message = (e: FakeExecution) => ({
    name: e.name,
    taskCount: e.taskCount,
    succeededCount: e.succeededCount,
    failedCount: e.failedCount,
    runningCount: e.completed ? 0 : e.taskCount - e.succeededCount - e.failedCount,
    ...(e.completed ? { completionTime: { seconds: Math.floor(Date.now() / 1000), nanos: 0 } } : {}),
  });
  const server = new grpc.Server();
  const refuse = (callback: grpc.sendUnaryData<unknown>, what: string) =>
    callback({ code: grpc.status.PERMISSION_DENIED, details: `Permission '${what}' denied` });
  server.addService(v2.Jobs.service, {
    runJob(
      call: grpc.ServerUnaryCall<{ name: string; overrides?: { taskCount?: number } }, unknown>,
      callback: grpc.sendUnaryData<unknown>,
    ) {
      if (denied) return refuse(callback, 'run.jobs.runWithOverrides');
      const taskCount = call.request.overrides?.taskCount || 1;
      runs.push({ name: call.request.name, taskCount });
      const job = call.request.name.split('/').at(-1)!;
      const execution: FakeExecution = {
        name: `${call.request.name}/executions/${job}-${String(runs.length).padStart(5, '0')}`,
        taskCount,
        succeededCount: 0,
        failedCount: 0,
        completed: false,
      };
      executions.push(execution);
      onRun(execution);
      callback(null, {
        name: `projects/p/locations/l/operations/op-${runs.length}`,
        done: false,
        metadata: {
          typeUrl: 'type.googleapis.com/google.cloud.run.v2.Execution',
          value: Buffer.from(Execution.encode(Execution.fromObject(message(execution))).finish()),
        },
      });
    },
  });
  server.addService(v2.Executions.service, {
    listExecutions(
      call: grpc.ServerUnaryCall<{ parent: string }, unknown>,
      callback: grpc.sendUnaryData<unknown>,
    ) {
      if (denied) return refuse(callback, 'run.executions.list');
      const mine = executions.filter((e) => e.name.startsWith(`${call.request.parent}/executions/`));
      callback(null, { executions: mine.reverse().map(message), nextPageToken: '' });
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) =>
      error === null ? resolve(bound) : reject(error),
    ),
  );
  return {
    endpoint: `127.0.0.1:${port}`,
    runs,
    executions,
    close: () => new Promise<void>((resolve) => server.tryShutdown(() => resolve())),
  };
}

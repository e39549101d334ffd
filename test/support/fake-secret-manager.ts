/**
 * Secret Manager as its official client sees it: a plaintext gRPC server on loopback speaking the
 * service's own protocol (`google.cloud.secretmanager.v1.SecretManagerService`, loaded from the protos
 * the client ships), answering AccessSecretVersion from a map. No emulator of Secret Manager exists; this
 * is the client's transport faked, so what is proven is our use of the real client, not Google's service.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const require = createRequire(import.meta.url);

export interface FakeSecretManager {
  /** `host:port`, for SECRET_MANAGER_ENDPOINT. */
  readonly endpoint: string;
  /** Every secret version name asked for, in order. */
  readonly asked: string[];
  close(): Promise<void>;
}

/** `secrets`: version name (`projects/p/secrets/s/versions/1`) → payload. Others answer NOT_FOUND. */
export async function startFakeSecretManager(
  secrets: Readonly<Record<string, string>>,
  denied: readonly string[] = [],
): Promise<FakeSecretManager> {
  const protos = join(
    dirname(require.resolve('@google-cloud/secret-manager/package.json')),
    'build',
    'protos',
  );
  const gaxProtos = join(dirname(require.resolve('google-gax')), '..', '..', 'build', 'protos');
  const definition = protoLoader.loadSync('google/cloud/secretmanager/v1/service.proto', {
    includeDirs: [protos, gaxProtos],
    keepCase: false,
    longs: String,
    defaults: true,
  });
  const loaded = grpc.loadPackageDefinition(definition) as any;
  const service = loaded.google.cloud.secretmanager.v1.SecretManagerService.service;
  const asked: string[] = [];
  const server = new grpc.Server();
  server.addService(service, {
    accessSecretVersion(
      call: grpc.ServerUnaryCall<{ name: string }, unknown>,
      callback: grpc.sendUnaryData<unknown>,
    ) {
      const name = call.request.name;
      asked.push(name);
      if (denied.includes(name)) {
        callback({ code: grpc.status.PERMISSION_DENIED, details: `Permission denied on ${name}` });
        return;
      }
      const payload = secrets[name];
      if (payload === undefined) {
        callback({ code: grpc.status.NOT_FOUND, details: `Secret Version [${name}] not found.` });
        return;
      }
      callback(null, { name, payload: { data: Buffer.from(payload, 'utf8') } });
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) =>
      error === null ? resolve(bound) : reject(error),
    ),
  );
  return {
    endpoint: `127.0.0.1:${port}`,
    asked,
    close: () => new Promise<void>((resolve) => server.tryShutdown(() => resolve())),
  };
}

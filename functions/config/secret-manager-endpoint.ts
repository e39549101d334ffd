import type { Reader } from './reader.js';

/** SECRET_MANAGER_ENDPOINT: a plaintext gRPC Secret Manager on `host:port` (tests); null in production. */
export function secretManagerEndpoint(read: Reader): string | null {
  return read.matching('SECRET_MANAGER_ENDPOINT', /^[^\s:/]+:\d{1,5}$/, 'host:port', true);
}

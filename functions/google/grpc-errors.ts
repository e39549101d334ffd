/**
 * Google's gRPC clients (Firestore, Pub/Sub, the Storage Write API): one table of the status codes worth
 * another try, shared by their adapters; every other code is fatal.
 */
import { DrainError } from '../kernel/errors.js';

export const retriableGrpcCodes: ReadonlyMap<number, string> = new Map([
  [1, 'CANCELLED'],
  [4, 'DEADLINE_EXCEEDED'],
  [8, 'RESOURCE_EXHAUSTED'],
  [10, 'ABORTED'],
  [13, 'INTERNAL'],
  [14, 'UNAVAILABLE'],
]);

/** A gRPC client's failure as a DrainError naming the service and what was being done, retriable or not. */
export function grpcError(service: string, error: unknown, what: string): Error {
  if (error instanceof DrainError || error instanceof TypeError || error instanceof RangeError) return error;
  const code = (error as { code?: unknown }).code;
  const message =
    error instanceof Error ? error.message : String((error as { message?: unknown })?.message ?? error);
  return new DrainError(`${service} ${what}: ${message}`, {
    retriable: typeof code === 'number' && retriableGrpcCodes.has(code),
    code: String(code),
    cause: error,
  });
}

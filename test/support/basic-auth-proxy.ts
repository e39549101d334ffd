/**
 * A schema registry that asks for HTTP basic auth, as Confluent Cloud's does (an API key and secret): a
 * loopback proxy in front of the real registry (Karapace, run here without auth) that answers 401 to a
 * request without the right credentials and forwards the others unchanged.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface BasicAuthRegistry {
  readonly url: string;
  /** Requests forwarded (credentials right) and refused (wrong or none). */
  readonly counts: { forwarded: number; refused: number };
  close(): Promise<void>;
}

export async function startBasicAuthRegistry(
  target: string,
  credentials: { username: string; password: string },
): Promise<BasicAuthRegistry> {
  const expected = `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`;
  const counts = { forwarded: 0, refused: 0 };
  const body = async (request: IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  };
  const server = createServer(async (request, response) => {
    if (request.headers.authorization !== expected) {
      counts.refused++;
      response.writeHead(401, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error_code: 401, message: 'Unauthorized' }));
      return;
    }
    counts.forwarded++;
    const sent = await body(request);
    const answer = await fetch(new URL(request.url ?? '/', target), {
      method: request.method ?? 'GET',
      headers: { 'content-type': request.headers['content-type'] ?? 'application/json' },
      ...(sent.length === 0 ? {} : { body: sent }),
    });
    response.writeHead(answer.status, {
      'content-type': answer.headers.get('content-type') ?? 'application/json',
    });
    response.end(Buffer.from(await answer.arrayBuffer()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    counts,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * A loopback HTTP proxy in front of the BigQuery emulator's REST API that fails requests on purpose: a
 * rule looks at each request (method, path, body) and lets it through, answers it with an error status
 * (as Google's front end does: a JSON error body), resets the connection, or never answers (a hang).
 * Tests point BIGQUERY_API_ENDPOINT at it and change the rule while a run goes on.
 */
import { createServer, request as forward, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export type Verdict = 'pass' | 'reset' | 'hang' | { readonly status: number };

export interface ProxiedRequest {
  readonly method: string;
  readonly url: string;
  readonly body: string;
  readonly headers: IncomingMessage['headers'];
}

export type FaultRule = (request: ProxiedRequest) => Verdict;

export interface FaultProxy {
  /** `http://127.0.0.1:port`, for BIGQUERY_API_ENDPOINT. */
  readonly url: string;
  setRule(rule: FaultRule): void;
  /** How many requests got each verdict so far (`pass`, `reset`, `hang`, `503`, ...). */
  readonly counts: Map<string, number>;
  close(): Promise<void>;
}

const statusNames: Record<number, string> = {
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  502: 'UNAVAILABLE',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

export const passAll: FaultRule = () => 'pass';

export async function startFaultProxy(target: string, rule: FaultRule = passAll): Promise<FaultProxy> {
  const upstream = new URL(target);
  let current = rule;
  const counts = new Map<string, number>();
  const sockets = new Set<Socket>();
  const count = (verdict: Verdict) => {
    const name = typeof verdict === 'string' ? verdict : String(verdict.status);
    counts.set(name, (counts.get(name) ?? 0) + 1);
  };
  const server: Server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const verdict = current({
        method: req.method ?? 'GET',
        url: req.url ?? '/',
        body: body.toString(),
        headers: req.headers,
      });
      count(verdict);
      if (verdict === 'reset') {
        req.socket.resetAndDestroy();
        return;
      }
      if (verdict === 'hang') return; // the socket stays open, unanswered, until the client gives up
      if (verdict !== 'pass') {
        const status = verdict.status;
        res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' });
        res.end(
          JSON.stringify({
            error: {
              code: status,
              message: `fault proxy: ${statusNames[status] ?? 'error'} on purpose`,
              status: statusNames[status] ?? 'UNKNOWN',
              errors: [{ reason: 'backendError', message: 'fault proxy' }],
            },
          }),
        );
        return;
      }
      const out = forward(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, host: upstream.host },
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      out.on('error', () => req.socket.destroy());
      out.end(body);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    counts,
    setRule(next) {
      current = next;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

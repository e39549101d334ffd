/**
 * A loopback stand-in for Google's metadata server (what Cloud Run gives a job: its service account's email
 * and access tokens) and for Google's tokeninfo endpoint (what a service asks to learn whose an access token
 * is and whether it is still good). google-auth-library reaches it through GCE_METADATA_HOST; the local
 * broker's OAUTHBEARER validator asks its /tokeninfo. Each access token it issues is random and known only
 * to it, so the broker accepts only tokens this server handed out.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll } from 'vitest';
import { stackEnv } from './stack.js';

export interface MetadataServer {
  /** The service account the job runs as. */
  email: string;
  /** What each issued access token is good for, in seconds (negative: expired when issued). */
  lifetimeSeconds: number;
  /** Access tokens issued, in order. */
  readonly issued: string[];
  /** How many times the broker asked about each access token. */
  readonly checked: Map<string, number>;
  close(): Promise<void>;
}

/**
 * For a test file: the stand-in on the stack's KBD_METADATA_HOST (where the broker's validator asks),
 * serving the stack's allowed principal, listening from before the file's tests until after them.
 */
export function metadataServerForFile(): MetadataServer & { readonly principal: string } {
  const stack = stackEnv() as unknown as Record<string, string>;
  const principal = stack.KBD_OAUTH_PRINCIPAL!;
  let server: MetadataServer | undefined;
  const state = {
    email: principal,
    lifetimeSeconds: 3600,
    issued: [] as string[],
    checked: new Map<string, number>(),
  };
  beforeAll(async () => {
    server = await startMetadataServer(stack.KBD_METADATA_HOST!, { email: principal, state });
  });
  afterAll(() => server?.close());
  return Object.assign(state, { principal, close: async () => server?.close() });
}

export async function startMetadataServer(
  hostPort: string,
  options: { email: string; lifetimeSeconds?: number; state?: Omit<MetadataServer, 'close'> },
): Promise<MetadataServer> {
  const tokens = new Map<string, { email: string; expiresAt: number }>();
  const state: Omit<MetadataServer, 'close'> = options.state ?? {
    email: options.email,
    lifetimeSeconds: options.lifetimeSeconds ?? 3600,
    issued: [],
    checked: new Map(),
  };
  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://metadata');
    const send = (status: number, body: unknown, type = 'application/json') => {
      response.writeHead(status, { 'Content-Type': type, 'Metadata-Flavor': 'Google' });
      response.end(typeof body === 'string' ? body : JSON.stringify(body));
    };
    if (url.pathname === '/tokeninfo') {
      const token = url.searchParams.get('access_token') ?? '';
      state.checked.set(token, (state.checked.get(token) ?? 0) + 1);
      const known = tokens.get(token);
      if (known === undefined)
        return send(400, { error: 'invalid_token', error_description: 'Invalid Value' });
      const expiresIn = Math.floor((known.expiresAt - Date.now()) / 1000);
      if (expiresIn <= 0) return send(400, { error: 'invalid_token', error_description: 'Token expired' });
      return send(200, {
        email: known.email,
        email_verified: 'true',
        scope: 'https://www.googleapis.com/auth/cloud-platform',
        exp: String(Math.floor(known.expiresAt / 1000)),
        expires_in: String(expiresIn),
      });
    }
    // The metadata server answers only requests that carry its header, as Google's does.
    if (request.headers['metadata-flavor'] !== 'Google')
      return send(403, 'Missing Metadata-Flavor header', 'text/plain');
    const path = url.pathname.replace(/^\/computeMetadata\/v1\/?/, '');
    switch (path) {
      case '':
      case 'instance':
      case 'instance/':
        return send(200, 'attributes/\nservice-accounts/\n', 'text/plain');
      case 'project/project-id':
        return send(200, 'local-project', 'text/plain');
      case 'universe/universe-domain':
        return send(200, 'googleapis.com', 'text/plain');
      case 'instance/service-accounts/default/email':
        return send(200, state.email, 'text/plain');
      case 'instance/service-accounts/default/token': {
        const token = `ya29.local-${randomBytes(18).toString('base64url')}`;
        tokens.set(token, { email: state.email, expiresAt: Date.now() + state.lifetimeSeconds * 1000 });
        state.issued.push(token);
        return send(200, { access_token: token, expires_in: state.lifetimeSeconds, token_type: 'Bearer' });
      }
      default:
        return send(404, 'not found', 'text/plain');
    }
  });
  const at = hostPort.lastIndexOf(':');
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(Number(hostPort.slice(at + 1)), hostPort.slice(0, at), resolve);
  });
  return Object.assign(state, {
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

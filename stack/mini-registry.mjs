#!/usr/bin/env node
// A minimal schema registry speaking Confluent's REST API: only what a serializer (Python's
// confluent-kafka, Confluent's Java and Go clients) and this drain ask of one. Started by the stack only
// when no Karapace is named (KBD_KARAPACE). It does NOT check compatibility (every version
// registers), normalise schemas, or offer contexts, modes, exporters or deletes; schemas live in a JSON
// file beside the stack's state, so a restart keeps them.
//   node stack/mini-registry.mjs PORT FILE
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';

const [port, file] = [Number(process.argv[2] ?? 18081), process.argv[3] ?? 'registry.json'];
/** { schemas: [{ id, schemaType, schema, references }], subjects: { name: [id, ...] }, config: { subject: level } } */
const state = existsSync(file)
  ? JSON.parse(readFileSync(file, 'utf8'))
  : { schemas: [], subjects: {}, config: {} };
const save = () => writeFileSync(file, JSON.stringify(state));
const type = (s) => s.schemaType ?? 'AVRO';
const same = (a, b) =>
  a.schema === b.schema &&
  type(a) === type(b) &&
  JSON.stringify(a.references ?? []) === JSON.stringify(b.references ?? []);
const wire = (s) => ({
  schema: s.schema,
  ...(type(s) === 'AVRO' ? {} : { schemaType: type(s) }),
  ...(s.references?.length ? { references: s.references } : {}),
});

function versionOf(subject, version) {
  const ids = state.subjects[subject];
  if (ids === undefined || ids.length === 0)
    return [404, { error_code: 40401, message: `Subject '${subject}' not found.` }];
  const n = version === 'latest' || version === '-1' ? ids.length : Number(version);
  if (!Number.isInteger(n) || n < 1 || n > ids.length)
    return [404, { error_code: 40402, message: 'Version not found.' }];
  const s = state.schemas.find((x) => x.id === ids[n - 1]);
  return [200, { subject, version: n, id: s.id, ...wire(s) }];
}

const notFound = (code, message) => [404, { error_code: code, message }];

/** The endpoints: method, path pattern, and what answers it (the pattern's groups, the request body). */
const routes = [
  ['GET', /^\/subjects$/, () => [200, Object.keys(state.subjects)]],
  [
    'GET',
    /^\/schemas\/ids\/(\d+)$/,
    ([id]) => {
      const s = state.schemas.find((x) => x.id === Number(id));
      return s === undefined ? notFound(40403, 'Schema not found') : [200, wire(s)];
    },
  ],
  [
    'GET',
    /^\/subjects\/([^/]+)\/versions$/,
    ([subject]) => {
      const ids = state.subjects[subject];
      return ids === undefined ? notFound(40401, 'Subject not found.') : [200, ids.map((_, i) => i + 1)];
    },
  ],
  ['GET', /^\/subjects\/([^/]+)\/versions\/([^/]+)$/, ([subject, version]) => versionOf(subject, version)],
  [
    'POST',
    /^\/subjects\/([^/]+)\/versions$/,
    ([subject], body) => {
      let s = state.schemas.find((x) => same(x, body));
      if (s === undefined) {
        s = {
          id: state.schemas.length + 1,
          schemaType: type(body),
          schema: body.schema,
          references: body.references ?? [],
        };
        state.schemas.push(s);
      }
      state.subjects[subject] ??= [];
      if (!state.subjects[subject].includes(s.id)) state.subjects[subject].push(s.id);
      save();
      return [200, { id: s.id }];
    },
  ],
  [
    'POST',
    /^\/subjects\/([^/]+)$/,
    ([subject], body) => {
      const ids = state.subjects[subject] ?? [];
      const i = ids.findIndex((id) =>
        same(
          state.schemas.find((x) => x.id === id),
          body,
        ),
      );
      return i < 0 ? notFound(40403, 'Schema not found') : versionOf(subject, String(i + 1));
    },
  ],
  [
    'PUT',
    /^\/config(?:\/([^/]+))?$/,
    ([subject = ''], body) => {
      state.config[subject] = body.compatibility;
      save();
      return [200, { compatibility: body.compatibility }];
    },
  ],
  [
    'GET',
    /^\/config(?:\/([^/]+))?$/,
    ([subject = '']) => [
      200,
      { compatibilityLevel: state.config[subject] ?? state.config[''] ?? 'BACKWARD' },
    ],
  ],
];

function route(method, path, body) {
  for (const [verb, pattern, answer] of routes) {
    const match = verb === method ? pattern.exec(path) : null;
    if (match !== null)
      return answer(
        match.slice(1).map((g) => (g === undefined ? undefined : decodeURIComponent(g))),
        body,
      );
  }
  return notFound(404, `${method} ${path} is not offered by this minimal registry`);
}

createServer((req, res) => {
  let text = '';
  req.on('data', (c) => {
    text += c;
  });
  req.on('end', () => {
    let status;
    let answer;
    try {
      [status, answer] = route(
        req.method,
        new URL(req.url, 'http://x').pathname,
        text === '' ? {} : JSON.parse(text),
      );
    } catch (error) {
      [status, answer] = [422, { error_code: 42201, message: String(error) }];
    }
    res.writeHead(status, { 'content-type': 'application/vnd.schemaregistry.v1+json' });
    res.end(JSON.stringify(answer));
  });
}).listen(port, '127.0.0.1');

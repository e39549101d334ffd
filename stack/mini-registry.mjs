#!/usr/bin/env node
// A minimal schema registry speaking Confluent's REST API: only what a serializer (Python's
// confluent-kafka, Confluent's Java and Go clients) and this drain ask of one. Started by the stack only
// when Karapace (../shared/tools/karapace) is not there. It does NOT check compatibility (every version
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

function route(method, path, body) {
  let m;
  if (method === 'GET' && path === '/subjects') return [200, Object.keys(state.subjects)];
  if (method === 'GET' && (m = /^\/schemas\/ids\/(\d+)$/.exec(path))) {
    const s = state.schemas.find((x) => x.id === Number(m[1]));
    return s === undefined ? [404, { error_code: 40403, message: 'Schema not found' }] : [200, wire(s)];
  }
  if (method === 'GET' && (m = /^\/subjects\/([^/]+)\/versions$/.exec(path))) {
    const ids = state.subjects[decodeURIComponent(m[1])];
    return ids === undefined
      ? [404, { error_code: 40401, message: 'Subject not found.' }]
      : [200, ids.map((_, i) => i + 1)];
  }
  if (method === 'GET' && (m = /^\/subjects\/([^/]+)\/versions\/([^/]+)$/.exec(path)))
    return versionOf(decodeURIComponent(m[1]), m[2]);
  if (method === 'POST' && (m = /^\/subjects\/([^/]+)\/versions$/.exec(path))) {
    const subject = decodeURIComponent(m[1]);
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
    const ids = (state.subjects[subject] ??= []);
    if (!ids.includes(s.id)) ids.push(s.id);
    save();
    return [200, { id: s.id }];
  }
  if (method === 'POST' && (m = /^\/subjects\/([^/]+)$/.exec(path))) {
    const subject = decodeURIComponent(m[1]);
    const ids = state.subjects[subject] ?? [];
    const i = ids.findIndex((id) =>
      same(
        state.schemas.find((x) => x.id === id),
        body,
      ),
    );
    return i < 0
      ? [404, { error_code: 40403, message: 'Schema not found' }]
      : versionOf(subject, String(i + 1));
  }
  if ((m = /^\/config(?:\/([^/]+))?$/.exec(path))) {
    const key = m[1] === undefined ? '' : decodeURIComponent(m[1]);
    if (method === 'PUT') {
      state.config[key] = body.compatibility;
      save();
      return [200, { compatibility: body.compatibility }];
    }
    return [200, { compatibilityLevel: state.config[key] ?? state.config[''] ?? 'BACKWARD' }];
  }
  return [404, { error_code: 404, message: `${method} ${path} is not offered by this minimal registry` }];
}

createServer((req, res) => {
  let text = '';
  req.on('data', (c) => (text += c));
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

/** docs/operations.md's table of roles is infra/permissions.ts's, row for row. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { dispatcherGrants, drainGrants, operationsGrants } from '../../infra/permissions.js';

const page = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'operations.md'), 'utf8');

test("the page's roles are the ones the infra grants, on the resources it grants them", () => {
  const section = page.slice(page.indexOf('### Roles'), page.indexOf('### Secrets'));
  const rows = section
    .split('\n')
    .filter((line) => /^\| (drain|operations|dispatcher) \|/.test(line))
    .flatMap((line) => {
      const [account, role, on] = line
        .split('|')
        .slice(1, 4)
        .map((cell) => cell.trim().replaceAll('`', ''));
      return on!.split(', ').map((resource) => `${account} ${role} ${resource}`);
    })
    .sort();
  const granted = [
    ...drainGrants.map((g) => `drain ${g.role} ${g.on}`),
    ...operationsGrants.map((g) => `operations ${g.role} ${g.on}`),
    ...dispatcherGrants.map((g) => `dispatcher ${g.role} ${g.on}`),
  ].sort();
  expect(rows).toEqual(granted);
});

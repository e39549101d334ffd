/**
 * Every write mode of the registry has its crash matrix (#77): a file `test/e2e/crash-matrix-<mode>.test.ts`
 * (they run side by side), and every fault point the matrix names for the mode is a crash point its code
 * passes (`crashPoint('<point>')` somewhere in functions/), so that no point is killed at in name only.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { writeModeNames } from '../../functions/config/bigquery.js';

const root = join(import.meta.dirname, '..', '..');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : path.endsWith('.ts') ? [path] : [];
  });
}

test('every mode of the registry has a crash matrix file, and its points are crash points of the code', () => {
  const support = readFileSync(join(root, 'test/support/crash-matrix.ts'), 'utf8');
  const code = sources(join(root, 'functions'))
    .map((f) => readFileSync(f, 'utf8'))
    .join('\n');
  // Mid-commit is the drain's own, armed after the commit is sent (drain/commit.ts).
  const passed = new Set([...code.matchAll(/crashPoint\('([a-z-]+)'\)/g)].map((m) => m[1]));
  const pointsOf = new Function(
    `return ${/export const crashPoints = (\{[\s\S]*?\}) as const;/.exec(support)![1]}`,
  )() as Record<string, string[]>;
  for (const mode of writeModeNames) {
    const file = join(root, `test/e2e/crash-matrix-${mode}.test.ts`);
    expect(() => statSync(file), `no crash matrix for ${mode}`).not.toThrow();
    const text = readFileSync(file, 'utf8');
    expect(text.includes(`crashMatrix('${mode}')`) || text.includes(`crashPoints.${mode}`), file).toBe(true);
    expect(pointsOf[mode], `no crash points for ${mode}`).toBeDefined();
    for (const point of pointsOf[mode]!) expect(passed.has(point), `${mode}: ${point}`).toBe(true);
  }
});

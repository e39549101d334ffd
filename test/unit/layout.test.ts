/**
 * The layout of functions/ (issue #69's aims), from the import graph of its files, type-only imports
 * included: no import cycle between files, no two top-level folders importing each other, at most 24 files
 * a folder, no file over 300 lines. Each failure names what breaks the aim. What breaks one today is listed
 * below, exactly: a new break fails, and so does a listed one that is gone (take it off the list). Issue
 * #69 empties the list.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { expect, test } from 'vitest';

const root = resolve(import.meta.dirname, '..', '..', 'functions');

/** Today's breaks of the aims, to be mended by #69 (the formats' folders, the row encoders' layer). */
const known = {
  mutualFolders: [] as string[],
  crowdedFolders: [] as string[],
};

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return filesUnder(path);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [path] : [];
  });
}

const files = filesUnder(root);
const importPattern =
  /(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\sfrom\s+)?['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;
const graph = new Map(
  files.map((file) => {
    const targets = new Set<string>();
    for (const match of readFileSync(file, 'utf8').matchAll(importPattern)) {
      const target = resolve(dirname(file), match[1] ?? match[2]!).replace(/\.js$/, '.ts');
      if (files.includes(target)) targets.add(target);
    }
    return [file, targets] as const;
  }),
);
const name = (file: string) => relative(root, file);
const folderOf = (file: string) => relative(root, dirname(file)) || '.';
const topOf = (file: string) => name(file).split(sep)[0]!;

/** Files that import each other, directly or around a loop (strongly connected components of two or more). */
function cycles(): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (stack.includes(next)) low.set(file, Math.min(low.get(file)!, index.get(next)!));
    }
    if (low.get(file) === index.get(file)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        component.push(name(member));
      } while (member !== file);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const file of files) if (!index.has(file)) visit(file);
  return found;
}

test('no import cycle between files of functions/', () => {
  expect(cycles()).toEqual([]);
});

test('no file over 300 lines', () => {
  const long = files
    .map((file) => `${name(file)} (${readFileSync(file, 'utf8').split('\n').length} lines)`)
    .filter((line) => Number(/\((\d+) lines\)/.exec(line)![1]) > 300);
  expect(long).toEqual([]);
});

test('no two top-level folders import each other (but those listed, until #69)', () => {
  const edges = new Set<string>();
  for (const [file, targets] of graph)
    for (const target of targets) {
      const [a, b] = [topOf(file), topOf(target)];
      if (a !== b && !a.endsWith('.ts') && !b.endsWith('.ts')) edges.add(`${a}>${b}`);
    }
  const mutual = [...edges]
    .map((edge) => edge.split('>') as [string, string])
    .filter(([a, b]) => a < b && edges.has(`${b}>${a}`))
    .map(([a, b]) => `${a}<->${b}`)
    .sort();
  expect(mutual).toEqual(known.mutualFolders);
});

test('at most 24 files a folder (but those listed, until #69)', () => {
  const counts = new Map<string, number>();
  for (const file of files) counts.set(folderOf(file), (counts.get(folderOf(file)) ?? 0) + 1);
  const crowded = [...counts]
    .filter(([, n]) => n > 24)
    .map(([folder]) => folder)
    .sort();
  expect(crowded).toEqual(known.crowdedFolders);
});

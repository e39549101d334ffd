import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, test } from 'vitest';

const root = resolve(import.meta.dirname, '../..');
const pages = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slugOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slugOf(m[1]!)));
}

/** Every relative link of a page: `[text](target)`, outside code blocks and inline code. */
function linksOf(file: string): string[] {
  const text = readFileSync(file, 'utf8')
    .replace(/```[\s\S]*?```/g, '')
    .replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((t) => !/^[a-z]+:/.test(t));
}

describe('README.md and docs/', () => {
  test.each(pages)('%s: every relative link resolves inside the repository, anchors too', (page) => {
    const from = join(root, page);
    const broken: string[] = [];
    for (const link of linksOf(from)) {
      const [path, anchor] = link.split('#') as [string, string | undefined];
      const target = path === '' ? from : resolve(dirname(from), path);
      if (relative(root, target).startsWith('..')) broken.push(`${link}: outside the repository`);
      else if (!existsSync(target)) broken.push(`${link}: no such file`);
      else if (anchor !== undefined && statSync(target).isFile() && !anchorsOf(target).has(anchor))
        broken.push(`${link}: no heading #${anchor} in ${relative(root, target)}`);
    }
    expect(broken).toEqual([]);
  });

  test('the README is short and links every page of docs/', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    expect(readme.split('\n').length).toBeLessThanOrEqual(250);
    expect(linksOf(join(root, 'README.md')).length).toBeGreaterThan(20);
    for (const page of pages.filter((p) => p.startsWith('docs/')))
      expect(readme, page).toContain(`](${page})`);
  });

  test('each page opens with what it answers: a title, then a sentence', () => {
    for (const page of pages.filter((p) => p.startsWith('docs/'))) {
      const [title, blank, first] = readFileSync(join(root, page), 'utf8').split('\n');
      expect(title, page).toMatch(/^# \S/);
      expect(blank, page).toBe('');
      expect(first, page).toMatch(/^[A-Z`*]/);
    }
  });

  test('the link check finds a broken link and a missing anchor', () => {
    expect(slugOf("Google's Managed Kafka")).toBe('googles-managed-kafka');
    expect(slugOf('`max_staleness`, default 15 minutes')).toBe('max_staleness-default-15-minutes');
    expect(anchorsOf(join(root, 'docs/operations.md')).has('seek')).toBe(true);
    expect(anchorsOf(join(root, 'docs/operations.md')).has('no-such-heading')).toBe(false);
  });
});

/**
 * Routes that share a topic (by `when`) drain together: one drain reads the topic once, hands each record
 * to the route that takes it, and moves the partition's checkpoint only when every table it fed holds its
 * rows. A route that shares no topic is a group of its own, as before `when` existed.
 */
import { type RoutedTopics, tableName } from './routes.js';

export interface RouteGroup {
  /** The group's routes, in the routes file's order. */
  readonly members: readonly RoutedTopics[];
  /** Every topic of its routes, sorted. */
  readonly topics: readonly string[];
}

/** The drains a run's routes make: routes linked by a shared topic, each route with topics in one group. */
export function groupRoutes(routed: readonly RoutedTopics[]): RouteGroup[] {
  const withTopics = routed.filter((r) => r.topics.length > 0);
  const groupOf = withTopics.map((_, i) => i);
  const find = (i: number): number => {
    let root = i;
    while (groupOf[root] !== root) root = groupOf[root]!;
    return root;
  };
  const firstRouteOf = new Map<string, number>();
  for (const [i, r] of withTopics.entries()) {
    for (const topic of r.topics) {
      const first = firstRouteOf.get(topic);
      if (first === undefined) firstRouteOf.set(topic, i);
      else groupOf[find(i)] = find(first);
    }
  }
  const groups = new Map<number, RoutedTopics[]>();
  for (const [i, r] of withTopics.entries()) {
    const root = find(i);
    groups.set(root, [...(groups.get(root) ?? []), r]);
  }
  return [...groups.values()].map((members) => ({
    members,
    topics: [...new Set(members.flatMap((m) => m.topics))].sort(),
  }));
}

/** `dataset.table` of a group's tables, as summaries, logs and `verify` name its drain. */
export function groupTables(members: readonly Pick<RoutedTopics, 'route'>[]): string {
  return members.map(({ route }) => tableName(route)).join(' + ');
}

/** The kinds a setting of settings.ts has: its section of the page, its default, its route name. */

export type SettingSection = (typeof settingSections)[number]['id'];

/** The page's sections, in order. */
export const settingSections = [
  { id: 'pipeline', title: 'The pipeline' },
  { id: 'kafka', title: 'Kafka' },
  { id: 'tables', title: 'Tables' },
  { id: 'values', title: 'Values and bad input' },
  { id: 'writes', title: 'Write modes' },
  { id: 'run', title: 'Runs, batches and alerts' },
  { id: 'local', title: 'Local emulators (unset in production)' },
] as const;

export interface Setting {
  readonly section: SettingSection;
  /** The parser's default when the variable is unset; absent when there is none or it is computed. */
  readonly default?: string | number | boolean;
  /** How the page states the default when `default` alone does not say it (required, computed). */
  readonly shown?: string;
  /** Its name in a route of ROUTES_FILE (`partitioning.type`: a key of the route's `partitioning`). */
  readonly route?: string;
  /** One or two short sentences; the pages linked say the rest. */
  readonly meaning: string;
}

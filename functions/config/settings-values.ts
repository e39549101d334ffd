import type { Setting } from './setting-kinds.js';

/** The settings of values, bad input and write modes (part of settings.ts's table, in its order). */
export const valueAndWriteSettings = {
  VALUE_FORMAT: {
    section: 'values',
    default: 'json',
    route: 'valueFormat',
    meaning:
      "`json`, or `avro`, `protobuf`, `json-schema` in Confluent's wire format; `avro` with `VALUE_SCHEMA_FILE` is raw Avro. See [formats](formats.md).",
  },
  SCHEMA_REGISTRY_URL: {
    section: 'values',
    shown: 'required for the wire format',
    meaning: "A Confluent-compatible registry (Confluent's, Karapace, Apicurio, Google's).",
  },
  SCHEMA_REGISTRY_USERNAME: {
    section: 'values',
    meaning: 'Basic auth to the registry, with `SCHEMA_REGISTRY_PASSWORD`; or a Secret Manager reference.',
  },
  SCHEMA_REGISTRY_PASSWORD: {
    section: 'values',
    meaning:
      'Basic auth to the registry, with `SCHEMA_REGISTRY_USERNAME`. In production from Secret Manager; or a reference (`projects/P/secrets/S/versions/V`).',
  },
  SCHEMA_REGISTRY_AUTH: {
    section: 'values',
    shown: '`basic` with a user name, `google` for `*.googleapis.com`, else `none`',
    meaning: "`google`: a bearer token from the job's own credentials, no secret.",
  },
  VALUE_SUBJECT: {
    section: 'values',
    shown: '`{first topic}-value`',
    route: 'valueSubject',
    meaning:
      "The subject whose latest version gives the table's columns (set it for the record-name strategies).",
  },
  VALUE_SCHEMA_FILE: {
    section: 'values',
    route: 'valueSchemaFile',
    meaning: "Raw Avro (no wire format, no registry): the writer's `.avsc`.",
  },
  UNKNOWN_FIELDS: {
    section: 'values',
    default: 'reject',
    route: 'unknownFields',
    meaning:
      'A field the table lacks: `reject` (a `schema` dead letter), `ignore` (dropped), `json` (kept whole in a JSON column `_extra`) or `evolve` (a NULLABLE column added, its type inferred; JSON values). See [schema changes](schema-changes.md#fields-the-table-lacks).',
  },
  EVOLVE_COLUMNS_PER_RUN: {
    section: 'values',
    default: 10,
    meaning:
      '`UNKNOWN_FIELDS=evolve`: columns a route adds in one run at most; past it, its partitions wait for the next run.',
  },
  EVOLVE_COLUMNS_MAX: {
    section: 'values',
    default: 300,
    meaning:
      "`UNKNOWN_FIELDS=evolve`: top-level columns the table may reach (the schema file's too); past it, a record with a new field is a `schema` dead letter.",
  },
  FIELD_NAMES: {
    section: 'values',
    default: 'strict',
    route: 'fieldNames',
    meaning:
      'A field name BigQuery refuses (`user-id`, `1st`): `strict` (a `schema` dead letter) or `sanitize` (mapped by a fixed rule). See [schema changes](schema-changes.md#field-names-bigquery-refuses).',
  },
  TOMBSTONES: {
    section: 'values',
    default: 'skip',
    meaning: 'A record with a null value: `skip` (counted, nothing written) or `dead-letter`.',
  },
  TRANSFORM_MODULE: {
    section: 'values',
    route: 'transformModule',
    meaning:
      'A JS module exporting `transform(value, context)`: the value to write, or `null` to drop the record (`filtered`). Not with `cdc`. See [bad input](bad-input.md#transforms).',
  },
  RULES_MODULE: {
    section: 'values',
    route: 'rulesModule',
    meaning:
      'A JS module exporting `validate(record, context)`: business rules. See [bad input](bad-input.md).',
  },

  BQ_WRITE_MODE: {
    section: 'writes',
    default: 'storage-write',
    meaning:
      '`storage-write` (exactly once), `merge` (exactly once), `insert-all` (at least once), `cdc` (changes by primary key) or `load` (exactly once, free ingestion by load jobs). See [write modes](write-modes.md).',
  },
  CHANGE_FORMAT: {
    section: 'writes',
    shown: 'required with `cdc`',
    meaning:
      "`debezium` (Debezium's envelopes) or `upsert` (the value is the row; a null value deletes its key).",
  },
  BQ_PRIMARY_KEY: {
    section: 'writes',
    shown: "the record key's fields (`debezium`); required with `upsert`",
    meaning: "The `cdc` table's primary key, comma separated, at most 16 columns.",
  },
  BQ_MAX_STALENESS: {
    section: 'writes',
    default: '15m',
    meaning: "A `cdc` table's `max_staleness`: `90s`, `15m`, `2h` (at most `24h`), or `0`.",
  },
  CDC_SOURCE_COLUMNS: {
    section: 'writes',
    default: 'false',
    meaning: '`true` adds `_cdc_op`, `_cdc_source_ts` and `_cdc_source_position` to a `cdc` table.',
  },

  LOAD_JOBS_PER_TABLE_PER_DAY: {
    section: 'writes',
    default: 1000,
    meaning:
      "`load`: the pipeline's share of BigQuery's 1,500 load jobs a table a day; a run may submit its share of it.",
  },
  SCHEDULE_PERIOD_SECONDS: {
    section: 'writes',
    default: 300,
    meaning:
      '`load`: how often runs start (infra sets it from `schedule`); sizes the loads a run may submit.',
  },
} as const satisfies Record<string, Setting>;

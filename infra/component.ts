/**
 * `DrainPipeline`: one pipeline as a Pulumi component, for a team's own program, as many as it wants:
 *
 *   import { DrainPipeline } from 'kafka-bigquery-drain/infra/component.js';
 *   new DrainPipeline('payments', { project: 'acme-data', pipelineId: 'payments', kafkaBrokers: '…', … });
 *
 * Its arguments are the stack config's keys (docs/deploy.md's tables: every setting's key is there, from
 * settings-map.ts), checked the same way; secrets may be Pulumi secrets. Each part is named after the
 * component (`payments-drain`, `payments-data-…`), so pipelines side by side never share a name.
 */
import * as gcp from '@pulumi/gcp';
import * as pulumi from '@pulumi/pulumi';
import { readInfraConfig } from './config.js';
import { argumentsConfig } from './config-reader.js';
import { overviewJson } from './dashboard.js';
import { makePipeline, type PipelineOutputs } from './pipeline.js';
import type { infraKeys, SettingKey } from './settings-map.js';

type ArgumentValue = pulumi.Input<string> | number | boolean | readonly string[];

/** Every key the stack config takes, as a typed argument; `project` and `pipelineId` and the brokers required. */
export type DrainPipelineArgs = {
  readonly project: string;
  readonly pipelineId: string;
  readonly kafkaBrokers: string;
} & { readonly [K in SettingKey | (typeof infraKeys)[number]]?: ArgumentValue };

/** `{pipelineId}-sched` must fit a service account id (30 characters). */
const maxPipelineIdLength = 24;

export class DrainPipeline extends pulumi.ComponentResource {
  readonly outputs: PipelineOutputs;

  constructor(name: string, args: DrainPipelineArgs, opts?: pulumi.ComponentResourceOptions) {
    super('kafka-bigquery-drain:index:DrainPipeline', name, {}, opts);
    // Account ids are at most 30 characters (`{pipelineId}-drain`, `-sched`, `-ops`): a longer id would be
    // cut, and two pipelines could end with one account.
    if (args.pipelineId.length > maxPipelineIdLength)
      throw new Error(
        `DrainPipeline ${name}: pipelineId "${args.pipelineId}" is over ${maxPipelineIdLength} characters (its accounts' ids would be cut)`,
      );
    const config = readInfraConfig(argumentsConfig(args, `DrainPipeline ${name}`));
    this.outputs = makePipeline(config, (part) => `${name}-${part}`, this);
    this.registerOutputs({
      jobName: this.outputs.jobName,
      operationsJob: this.outputs.operationsJob,
      statusUrl: this.outputs.statusUrl,
    });
  }
}

/**
 * One Cloud Monitoring dashboard across the pipelines of a program, freshness per pipeline first (each
 * keeps its own dashboard): `new PipelinesOverview('overview', { pipelines: [payments, refunds] })`.
 */
export class PipelinesOverview extends pulumi.ComponentResource {
  readonly dashboard: gcp.monitoring.Dashboard;

  constructor(
    name: string,
    args: {
      readonly pipelines: readonly DrainPipeline[];
      readonly title?: string;
      readonly project?: string;
    },
    opts?: pulumi.ComponentResourceOptions,
  ) {
    super('kafka-bigquery-drain:index:PipelinesOverview', name, {}, opts);
    const entries = pulumi.all(args.pipelines.map((p) => p.outputs.overview));
    this.dashboard = new gcp.monitoring.Dashboard(
      `${name}-dashboard`,
      {
        ...(args.project === undefined ? {} : { project: args.project }),
        dashboardJson: entries.apply((list) =>
          overviewJson(
            args.title ?? `kafka-bigquery-drain: ${list.map((e) => e.pipelineId).join(', ')}`,
            list,
          ),
        ),
      },
      { parent: this },
    );
    this.registerOutputs({ dashboard: this.dashboard.id });
  }
}

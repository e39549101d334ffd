/**
 * One pipeline's resources, made the same way by the stack program (infra/index.ts: the one-pipeline way,
 * from stack config, its resources at the top as they always were, so that an existing stack keeps every
 * URN) and by the `DrainPipeline` component (infra/component.ts: as many as a team's own program wants,
 * each under its own name).
 */
import * as pulumi from '@pulumi/pulumi';
import { ProjectApis } from './apis.js';
import type { InfraConfig } from './config.js';
import type { OverviewEntry } from './dashboard.js';
import { Dispatcher } from './dispatcher.js';
import { DrainJob } from './drain-job.js';
import { PipelineMonitoring } from './monitoring.js';
import { logsCommand, OperationsJob, operationsCommand } from './operations-job.js';
import { PipelineData } from './pipeline-data.js';
import { StatusService } from './status-service.js';

/** What a pipeline gives its program: names, URLs and ready commands. */
export interface PipelineOutputs {
  readonly jobName: pulumi.Output<string>;
  readonly imageRepository: pulumi.Output<string>;
  readonly schedulerJob: pulumi.Output<string>;
  readonly statusUrl: pulumi.Output<string>;
  /** The dispatcher's URL (`dispatchMaxTasks` set); undefined without it. */
  readonly dispatcherUrl: pulumi.Output<string> | undefined;
  readonly deadLetterTopic: pulumi.Output<string>;
  readonly alertTopic: pulumi.Output<string>;
  readonly targetTable: pulumi.Output<string>;
  readonly targetTables: pulumi.Output<string>[];
  readonly image: pulumi.Output<string>;
  readonly enabledApis: pulumi.Output<string>[];
  /** Run the job once now, as the schedule would. */
  readonly runOnce: pulumi.Output<string>;
  /** Check the pipeline from inside the cloud (its own account, network and secrets): changes nothing. */
  readonly checkOnce: pulumi.Output<string>;
  /** The operations job: every operator command but `check`, run in the cloud as its own account. */
  readonly operationsJob: pulumi.Output<string>;
  /**
   * Ready commands (docs/operations.md): each is one execution; its exit code is the command's, its
   * output is in Cloud Logging (`logs`, with EXECUTION set to the name the execution printed).
   */
  readonly operatorCommands: Record<string, pulumi.Output<string>>;
  /** What an overview dashboard across pipelines shows of this one (component.ts `PipelinesOverview`). */
  readonly overview: pulumi.Output<OverviewEntry>;
}

/**
 * The pipeline's parts, named by `name(part)` (`drain`, `data`, ...) under `parent`: the APIs first
 * (everything else is made through a provider that exists once they are enabled), then data and state,
 * the drain job, the status service, the operations job and monitoring.
 */
export function makePipeline(
  config: InfraConfig,
  name: (part: string) => string,
  parent?: pulumi.Resource,
): PipelineOutputs {
  const under = parent === undefined ? {} : { parent };
  const apis = new ProjectApis(name('apis'), config, under);
  const ready = { ...under, providers: { gcp: apis.provider } };
  const data = new PipelineData(name('data'), config, ready);
  let dispatcher: Dispatcher | undefined;
  const drain = new DrainJob(
    name('drain'),
    config,
    data,
    ready,
    config.dispatch === undefined
      ? undefined
      : (job, scheduler) => {
          dispatcher = new Dispatcher(name('dispatcher'), config, job, scheduler, ready);
          return { url: dispatcher.service.uri, invoker: dispatcher.invoker };
        },
  );
  const status = new StatusService(name('status'), config, drain, ready);
  const operations = new OperationsJob(name('operations'), config, data, drain, ready);
  const monitoring = new PipelineMonitoring(name('monitoring'), config, drain.job.name, ready);

  const execute = (job: pulumi.Input<string>, args: pulumi.Input<string>) =>
    pulumi.interpolate`gcloud run jobs execute ${job} --region ${config.region} --args=${args} --wait`;
  const subscription = data.deadLetterSubscription.name;
  const ops = (args: string) => operationsCommand(operations.job.name, config.region, args);
  return {
    jobName: drain.job.name,
    imageRepository: drain.imageRepository,
    schedulerJob: drain.scheduler.name,
    statusUrl: status.service.uri,
    dispatcherUrl: dispatcher?.service.uri,
    deadLetterTopic: data.deadLetterTopic.name,
    alertTopic: data.alertTopic.name,
    targetTable: data.targetTable.tableId,
    targetTables: data.tables.map((t) => t.target.tableId),
    image: drain.image.ref,
    enabledApis: apis.services.map((s) => s.service),
    runOnce: pulumi.interpolate`gcloud run jobs execute ${drain.job.name} --region ${config.region} --wait`,
    checkOnce: pulumi.interpolate`gcloud run jobs execute ${drain.job.name} --region ${config.region} --args=check --tasks=1 --wait`,
    operationsJob: operations.job.name,
    operatorCommands: {
      status: ops('status'),
      verify: ops('verify'),
      deadLetters: execute(
        operations.job.name,
        pulumi.interpolate`dead-letters,--subscription,${subscription}`,
      ),
      replayDeadLetters: execute(
        operations.job.name,
        pulumi.interpolate`replay-dead-letters,--subscription,${subscription}`,
      ),
      pause: ops('pause,--topic,TOPIC,--reason,WHY'),
      seek: ops('seek,--topic,TOPIC,--partition,P,--timestamp,ISO-TIME,--reason,WHY,--dry-run'),
      pauseSchedule: pulumi.interpolate`gcloud scheduler jobs pause ${drain.scheduler.name} --location ${config.region}`,
      resumeSchedule: pulumi.interpolate`gcloud scheduler jobs resume ${drain.scheduler.name} --location ${config.region}`,
      logs: logsCommand(operations.job.name, config.project),
    },
    overview: monitoring.metrics.apply((metrics) => ({
      pipelineId: config.pipelineId,
      targetSeconds: config.freshness.targetSeconds,
      metrics,
    })),
  };
}

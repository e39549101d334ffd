/**
 * The Pulumi program (`pulumi up` in this folder): data and state, the drain job and its schedule, the
 * status function, and monitoring, for one pipeline. Settings: docs/deploy.md.
 */
import * as pulumi from '@pulumi/pulumi';
import { ProjectApis } from './apis.js';
import { readInfraConfig } from './config.js';
import { DrainJob } from './drain-job.js';
import { PipelineMonitoring } from './monitoring.js';
import { logsCommand, OperationsJob, operationsCommand } from './operations-job.js';
import { PipelineData } from './pipeline-data.js';
import { StatusService } from './status-service.js';

const config = readInfraConfig();
// The APIs first: everything else is made through a provider that exists once they are enabled.
const apis = new ProjectApis('apis', config);
const ready = { providers: { gcp: apis.provider } };
const data = new PipelineData('data', config, ready);
const drain = new DrainJob('drain', config, data, ready);
const status = new StatusService('status', config, drain, ready);
const operations = new OperationsJob('operations', config, data, drain, ready);
new PipelineMonitoring('monitoring', config, drain.job.name, ready);

export const jobName = drain.job.name;
export const imageRepository = drain.imageRepository;
export const schedulerJob = drain.scheduler.name;
export const statusUrl = status.service.uri;
export const deadLetterTopic = data.deadLetterTopic.name;
export const alertTopic = data.alertTopic.name;
export const targetTable = data.targetTable.tableId;
export const targetTables = data.tables.map((t) => t.target.tableId);
export const image = drain.image.ref;
export const enabledApis = apis.services.map((s) => s.service);
/** Run the job once now, as the schedule would. */
export const runOnce = pulumi.interpolate`gcloud run jobs execute ${drain.job.name} --region ${config.region} --wait`;
/** Check the pipeline from inside the cloud (its own account, network and secrets): changes nothing. */
export const checkOnce = pulumi.interpolate`gcloud run jobs execute ${drain.job.name} --region ${config.region} --args=check --tasks=1 --wait`;

/** The operations job: every operator command but `check`, run in the cloud as its own account. */
export const operationsJob = operations.job.name;
const subscription = data.deadLetterSubscription.name;
const ops = (args: pulumi.Input<string>) =>
  operationsCommand(operations.job.name, config.region, args as string);
/**
 * Ready commands (docs/operations.md): each is one execution; its exit code is the command's, its output
 * is in Cloud Logging (`logs`, with EXECUTION set to the name the execution printed).
 */
export const operatorCommands = {
  status: ops('status'),
  verify: ops('verify'),
  deadLetters: pulumi.interpolate`gcloud run jobs execute ${operations.job.name} --region ${config.region} --args=dead-letters,--subscription,${subscription} --wait`,
  replayDeadLetters: pulumi.interpolate`gcloud run jobs execute ${operations.job.name} --region ${config.region} --args=replay-dead-letters,--subscription,${subscription} --wait`,
  pause: ops('pause,--topic,TOPIC,--reason,WHY'),
  seek: ops('seek,--topic,TOPIC,--partition,P,--timestamp,ISO-TIME,--reason,WHY,--dry-run'),
  pauseSchedule: pulumi.interpolate`gcloud scheduler jobs pause ${drain.scheduler.name} --location ${config.region}`,
  resumeSchedule: pulumi.interpolate`gcloud scheduler jobs resume ${drain.scheduler.name} --location ${config.region}`,
  logs: logsCommand(operations.job.name, config.project),
};

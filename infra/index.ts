/**
 * The Pulumi program (`pulumi up` in this folder): data and state, the drain job and its schedule, the
 * status function, and monitoring, for one pipeline. Settings: docs/deploy.md.
 */
import { readInfraConfig } from './config.js';
import { DrainJob } from './drain-job.js';
import { PipelineMonitoring } from './monitoring.js';
import { PipelineData } from './pipeline-data.js';
import { StatusService } from './status-service.js';

const config = readInfraConfig();
const data = new PipelineData('data', config);
const drain = new DrainJob('drain', config, data);
const status = new StatusService('status', config, drain);
new PipelineMonitoring('monitoring', config, drain.job.name);

export const jobName = drain.job.name;
export const imageRepository = drain.imageRepository;
export const schedulerJob = drain.scheduler.name;
export const statusUrl = status.service.uri;
export const deadLetterTopic = data.deadLetterTopic.name;
export const alertTopic = data.alertTopic.name;
export const targetTable = data.targetTable.tableId;
export const targetTables = data.tables.map((t) => t.target.tableId);

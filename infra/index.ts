/**
 * The Pulumi program (`pulumi up` in this folder): one pipeline from the stack's config (data and state,
 * the drain job and its schedule, the status function, the operations job, monitoring). Settings:
 * docs/deploy.md. Many pipelines in a program of your own: the `DrainPipeline` component (component.ts).
 */
import { readInfraConfig } from './config.js';
import { makePipeline } from './pipeline.js';

// The parts at the top of the stack, named as they always were: an existing stack keeps every URN.
const pipeline = makePipeline(readInfraConfig(), (part) => part);

export const jobName = pipeline.jobName;
export const imageRepository = pipeline.imageRepository;
export const schedulerJob = pipeline.schedulerJob;
export const statusUrl = pipeline.statusUrl;
/** The dispatcher's URL, with `dispatchMaxTasks` set (the schedule calls it instead of the job). */
export const dispatcherUrl = pipeline.dispatcherUrl;
export const deadLetterTopic = pipeline.deadLetterTopic;
export const alertTopic = pipeline.alertTopic;
export const targetTable = pipeline.targetTable;
export const targetTables = pipeline.targetTables;
export const image = pipeline.image;
export const enabledApis = pipeline.enabledApis;
/** Run the job once now, as the schedule would. */
export const runOnce = pipeline.runOnce;
/** Check the pipeline from inside the cloud (its own account, network and secrets): changes nothing. */
export const checkOnce = pipeline.checkOnce;
/** The operations job: every operator command but `check`, run in the cloud as its own account. */
export const operationsJob = pipeline.operationsJob;
/** Ready commands (docs/operations.md), each one execution of the operations job. */
export const operatorCommands = pipeline.operatorCommands;

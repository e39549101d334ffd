/**
 * The `status` HTTP function (functions-framework): per partition, checkpoint, lag, lease holder and open
 * alerts, as JSON. Deployed private: only principals granted the invoker role can call it.
 */
import * as functions from '@google-cloud/functions-framework';
import kafkajs from 'kafkajs';
import { parseConfig } from '../config/config.js';
import { createGoogleClients } from '../google/clients.js';
import { resolveSecretReferences } from '../google/secret-references.js';
import { routeTopics } from '../job/routing.js';
import { ConfigError } from '../kernel/errors.js';
import { createLogger } from '../kernel/logger.js';
import { kafkaClientOptions } from '../sources/kafka-client.js';
import { createKafkaSource } from '../sources/kafka-source.js';
import { partitionStatus } from './partition-status.js';

functions.http('status', async (_request, response) => {
  let config: ReturnType<typeof parseConfig>;
  try {
    config = parseConfig(await resolveSecretReferences(process.env));
  } catch (error) {
    response.status(500).json({
      error: error instanceof ConfigError ? `configuration error: ${error.message}` : 'configuration error',
    });
    return;
  }
  const clients = createGoogleClients(config);
  const logger = createLogger({ level: config.logLevel });
  const kafka = new kafkajs.Kafka(
    kafkaClientOptions(config, `kafka-bigquery-drain-status-${config.pipelineId}`),
  );
  try {
    const partitions = await partitionStatus(
      { firestore: clients.firestore, source: createKafkaSource(kafka, { groupPrefix: 'unused', logger }) },
      { pipelineId: config.pipelineId, routed: await routeTopics(config, kafka) },
    );
    response.status(200).json({ pipeline: config.pipelineId, partitions });
  } catch (error) {
    logger.error('status failed', { error });
    response.status(503).json({ error: error instanceof Error ? error.message : String(error) });
  } finally {
    await clients.close();
  }
});

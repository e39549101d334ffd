/**
 * A pipeline's HTTP function (functions-framework): the configuration read from the environment as the
 * job reads it (Secret Manager references resolved), the Google clients and Kafka made for the request and
 * closed after it. A configuration error answers 500 naming the variable; a failure answers 503.
 */

import type { Response } from '@google-cloud/functions-framework';
import * as functions from '@google-cloud/functions-framework';
import kafkajs from 'kafkajs';
import { type DrainConfig, parseConfig } from '../config/config.js';
import { createGoogleClients, type GoogleClients } from '../google/clients.js';
import { resolveSecretReferences } from '../google/secret-references.js';
import { ConfigError } from '../kernel/errors.js';
import { createLogger, type Logger } from '../kernel/logger.js';
import type { Source } from '../kernel/ports.js';
import { kafkaClientOptions } from '../sources/kafka-client.js';
import { createKafkaSource } from '../sources/kafka-source.js';

export interface FunctionServices {
  readonly config: DrainConfig;
  readonly clients: GoogleClients;
  readonly kafka: kafkajs.Kafka;
  readonly source: Source;
  readonly logger: Logger;
}

export function pipelineFunction(
  name: string,
  handle: (services: FunctionServices, response: Response) => Promise<void>,
): void {
  functions.http(name, async (_request, response) => {
    let config: DrainConfig;
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
      kafkaClientOptions(config, `kafka-bigquery-drain-${name}-${config.pipelineId}`),
    );
    try {
      const source = createKafkaSource(kafka, { groupPrefix: 'unused', logger });
      await handle({ config, clients, kafka, source, logger }, response);
    } catch (error) {
      logger.error(`${name} failed`, { error });
      response.status(error instanceof ConfigError ? 500 : 503).json({
        error:
          error instanceof ConfigError
            ? `configuration error: ${error.message}`
            : error instanceof Error
              ? error.message
              : String(error),
      });
    } finally {
      await clients.close();
    }
  });
}

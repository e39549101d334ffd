import kafkajs from 'kafkajs';
import { type DrainConfig, parseConfig } from '../config/config.js';
import { createGoogleClients } from '../google/clients.js';
import { ConfigError } from '../kernel/errors.js';
import { createLogger } from '../kernel/logger.js';
import { kafkaClientOptions } from '../sources/kafka-client.js';
import { createKafkaSource } from '../sources/kafka-source.js';

/** The operator commands' configuration, or undefined (after saying why) when it is wrong. */
export function readConfig(env: NodeJS.ProcessEnv): DrainConfig | undefined {
  try {
    return parseConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`configuration error: ${error.message}\n`);
    return undefined;
  }
}

/** What an operator command talks to: the Google clients, Kafka and its source (warnings on stderr). */
export function cliServices(config: DrainConfig) {
  const clients = createGoogleClients(config);
  const logger = createLogger({ level: 'warning', write: (line) => process.stderr.write(`${line}\n`) });
  const kafka = new kafkajs.Kafka(
    kafkaClientOptions(config, `kafka-bigquery-drain-cli-${config.pipelineId}`),
  );
  return { clients, logger, kafka, source: createKafkaSource(kafka, { groupPrefix: 'unused', logger }) };
}

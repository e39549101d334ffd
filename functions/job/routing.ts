import type { Kafka } from 'kafkajs';
import type { DrainConfig } from '../config/config.js';
import { needsTopicList, type RoutedTopics, resolveTopics } from '../config/routes.js';
import { listTopics } from '../sources/kafka-client.js';

/**
 * This run's topics per route, in the routes' order. The broker's topic list is read only when a route
 * names topics by regex, so a new topic matching one is picked up by the next run.
 */
export async function routeTopics(config: DrainConfig, kafka: Kafka): Promise<RoutedTopics[]> {
  const brokerTopics =
    config.kafka.topics.length === 0 && needsTopicList(config.routes) ? await listTopics(kafka) : [];
  return resolveTopics(config.routes, config.kafka.topics, brokerTopics);
}

/** Every topic of the routes, for the commands that look at all of them (status, seek, pause). */
export async function allTopics(config: DrainConfig, kafka: Kafka): Promise<string[]> {
  return [...new Set((await routeTopics(config, kafka)).flatMap((routed) => routed.topics))].sort();
}

/**
 * The `status` HTTP function (functions-framework): per partition, checkpoint, lag, lease holder and open
 * alerts, as JSON. Deployed private: only principals granted the invoker role can call it.
 */
import { pipelineFunction } from '../job/http-function.js';
import { routeTopics } from '../job/routing.js';
import { partitionStatus } from './partition-status.js';

pipelineFunction('status', async ({ config, clients, kafka, source }, response) => {
  const partitions = await partitionStatus(
    { firestore: clients.firestore, source },
    { pipelineId: config.pipelineId, routed: await routeTopics(config, kafka) },
  );
  response.status(200).json({ pipeline: config.pipelineId, partitions });
});

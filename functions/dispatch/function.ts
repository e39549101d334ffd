/**
 * The `dispatch` HTTP function (functions-framework), what Cloud Scheduler calls every period when
 * DISPATCH_MAX_TASKS is set: one decision (dispatcher.ts), an execution of DISPATCH_JOB started through
 * the Cloud Run Admin API when it asks for tasks. Deployed private: the scheduler's account invokes it
 * with an OIDC token. Answers the decision as JSON (200), 500 on a configuration error, 503 on a failure
 * (the scheduler retries then).
 */
import { pipelineFunction } from '../job/http-function.js';
import { allTopics } from '../job/routing.js';
import { ConfigError } from '../kernel/errors.js';
import { cloudRunLauncher } from './cloud-run-launcher.js';
import { dispatchOnce } from './dispatcher.js';

pipelineFunction('dispatch', async ({ config, clients, kafka, source, logger }, response) => {
  const { minTasks, maxTasks } = config.dispatch;
  if (maxTasks === null)
    throw new ConfigError(
      'DISPATCH_MAX_TASKS',
      'must be set for the dispatcher (the most tasks it may launch)',
    );
  const launcher = await cloudRunLauncher(config.dispatch);
  try {
    const outcome = await dispatchOnce({ firestore: clients.firestore, source, logger }, config, {
      topics: await allTopics(config, kafka),
      limits: { minTasks, maxTasks },
      launcher,
    });
    response
      .status(200)
      .json({ ...outcome.line, ...(outcome.execution ? { execution: outcome.execution } : {}) });
  } finally {
    await launcher.close();
  }
});

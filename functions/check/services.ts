/** `check`'s looks at Firestore and Pub/Sub: each answers, within its deadline, and its topics exist. */
import { randomBytes } from 'node:crypto';
import type { DrainConfig } from '../config/config.js';
import type { GoogleClients } from '../google/clients.js';
import { callDeadlinesMs } from '../job/deadline.js';
import type { CallTracker } from '../kernel/calls.js';
import type { checkList } from './report.js';

/** Firestore answers reads and writes: a probe document written and deleted at once. */
export async function checkFirestore(
  config: DrainConfig,
  list: ReturnType<typeof checkList>,
  clients: GoogleClients,
  calls: CallTracker,
) {
  await list.run(
    'firestore',
    "check the project, the database and the job account's role (roles/datastore.user)",
    async () => {
      const probe = clients.firestore
        .collection('pipelines')
        .doc(config.pipelineId)
        .collection('check-probes')
        .doc(randomBytes(6).toString('hex'));
      await calls.track(
        'firestore',
        'write and delete a probe',
        async () => {
          await probe.create({ at: new Date() });
          await probe.delete();
        },
        { deadlineMs: callDeadlinesMs.firestore },
      );
      const partitions = await clients.firestore
        .collection('pipelines')
        .doc(config.pipelineId)
        .collection('partitions')
        .count()
        .get();
      return `read and write answered (a probe written and deleted); ${partitions.data().count} partitions checkpointed`;
    },
  );
}

export async function checkPubSub(
  config: DrainConfig,
  list: ReturnType<typeof checkList>,
  clients: GoogleClients,
  calls: CallTracker,
) {
  const topics: [string, string][] = [['dead letters', config.deadLetterTopic]];
  if (config.alertTopic !== null) topics.push(['alerts', config.alertTopic]);
  for (const [what, topic] of topics) {
    const [exists] = await calls
      .track('pubsub', `look up topic ${topic}`, () => clients.pubsub.topic(topic).exists(), {
        deadlineMs: callDeadlinesMs.pubsub,
      })
      .catch((error: unknown) => {
        list.fail(`pubsub ${what}`, (error as Error).message);
        return [undefined];
      });
    if (exists === true) list.pass(`pubsub ${what}`, `topic ${topic} exists`);
    else if (exists === false)
      list.fail(
        `pubsub ${what}`,
        `topic ${topic} does not exist: create it (infra/ does), or correct ${what === 'alerts' ? 'ALERT_TOPIC' : 'DEAD_LETTER_TOPIC'}`,
      );
  }
}

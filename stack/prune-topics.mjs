// Deletes the Kafka topics the test suite made: those whose name starts with the suite's prefix (`kbdtest`,
// then `_`, `-` or `.`), and no other. Every name the suite makes carries it (test/support/stack.ts's
// uniqueName), so a broker reused run after run keeps only the user's own topics and the stack's; its start
// time and disk stay flat.
//   node stack/prune-topics.mjs HOST:PORT
import kafkajs from 'kafkajs';

const suitePrefix = /^kbdtest[-_.]/;

const kafka = new kafkajs.Kafka({
  clientId: 'stack-prune',
  brokers: [process.argv[2] ?? '127.0.0.1:19092'],
  logLevel: kafkajs.logLevel.NOTHING,
  connectionTimeout: 3000,
});
const admin = kafka.admin();
try {
  await admin.connect();
  const topics = (await admin.listTopics()).filter((topic) => suitePrefix.test(topic));
  // In chunks: one request naming thousands of topics outlives the request timeout.
  for (let i = 0; i < topics.length; i += 200) {
    await admin.deleteTopics({ topics: topics.slice(i, i + 200), timeout: 60_000 });
  }
  console.log(`deleted ${topics.length} topics of the test suite`);
} catch (error) {
  console.error(`could not delete the test suite's topics: ${String(error)}`);
  process.exitCode = 1;
} finally {
  await admin.disconnect().catch(() => {});
}

// Health check for the local broker: a real metadata round trip through kafkajs, not just an open port.
import kafkajs from 'kafkajs';

const broker = process.argv[2];
const kafka = new kafkajs.Kafka({
  clientId: 'stack-ping',
  brokers: [broker],
  logLevel: kafkajs.logLevel.NOTHING,
  connectionTimeout: 1000,
  retry: { retries: 0 },
});
const admin = kafka.admin();
try {
  await admin.connect();
  const cluster = await admin.describeCluster();
  if (cluster.brokers.length === 0) throw new Error('no brokers');
  console.log(JSON.stringify(cluster));
} catch (error) {
  console.error(String(error));
  process.exitCode = 1;
} finally {
  await admin.disconnect().catch(() => {});
}

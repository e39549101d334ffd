import kafkajs from 'kafkajs';
import type { Position } from '../kernel/records.js';

const { AssignerProtocol } = kafkajs;

/** An assigner that gives the (only) member of the group exactly the partitions this run leased. */
export function explicitAssigner(positions: readonly Position[]) {
  const assignment: Record<string, number[]> = {};
  for (const [topic, ps] of groupByTopic(positions)) assignment[topic] = ps.map((p) => p.partition);
  return () => ({
    name: 'KafkaBigQueryDrainExplicit',
    version: 1,
    async assign({ members }: { members: { memberId: string }[] }) {
      return members.map((member, i) => ({
        memberId: member.memberId,
        memberAssignment: AssignerProtocol.MemberAssignment.encode({
          version: 1,
          assignment: i === 0 ? assignment : {},
          userData: Buffer.alloc(0),
        }),
      }));
    },
    protocol({ topics }: { topics: string[] }) {
      return {
        name: 'KafkaBigQueryDrainExplicit',
        metadata: AssignerProtocol.MemberMetadata.encode({ version: 1, topics, userData: Buffer.alloc(0) }),
      };
    },
  });
}

function groupByTopic(positions: readonly Position[]): Map<string, Position[]> {
  const byTopic = new Map<string, Position[]>();
  for (const p of positions) byTopic.set(p.topic, [...(byTopic.get(p.topic) ?? []), p]);
  return byTopic;
}

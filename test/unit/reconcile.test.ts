import { describe, expect, test } from 'vitest';
import { type LedgerEntry, rollUpLedger } from '../../functions/checkpoints/ledger-entry.js';
import { reconcile } from '../../functions/verify/reconcile.js';

const entry = (
  from: number,
  to: number,
  rows = to - from,
  deadLetters = 0,
  records = to - from,
): LedgerEntry => ({
  from,
  to,
  records,
  rows,
  deadLetters,
  tombstones: 0,
  filtered: 0,
  lost: false,
});
const p = { topic: 't', partition: 0 };

describe('reconcile', () => {
  describe('after a replay of dead letters', () => {
    // 20 offsets: 16 committed as rows, 4 as dead letters; a replay wrote 3 of the 4 into the table.
    const ledger = [entry(0, 20, 16, 4)];
    const table = (distinctOffsets: number, rows = distinctOffsets) => ({
      rows,
      distinctOffsets,
      minOffset: 0,
      maxOffset: 19,
    });
    const letters = { rows: 4, distinctOffsets: 4, minOffset: 0, maxOffset: 19 };

    test('the replayed rows are counted beside the committed ones: clean, the letters still once in the error table', () => {
      const v = reconcile({ ...p, checkpoint: 20 }, ledger, table(19), letters, undefined, {
        count: 3,
        held: 3,
      });
      expect(v).toMatchObject({
        ok: true,
        ledgerRows: 16,
        replayed: 3,
        replayedMissing: 0,
        unknownRows: 0,
        missingRows: 0,
        errorTableRows: 4,
      });
    });

    test('without the replay log the same table is a failure: rows the ledger never counted', () => {
      expect(reconcile({ ...p, checkpoint: 20 }, ledger, table(19), letters)).toMatchObject({
        ok: false,
        unknownRows: 3,
      });
    });

    test('a replayed row deleted from the table is missing', () => {
      expect(
        reconcile({ ...p, checkpoint: 20 }, ledger, table(18), letters, undefined, { count: 3, held: 2 }),
      ).toMatchObject({ ok: false, replayedMissing: 1, missingRows: 0, unknownRows: 0 });
    });

    test('a row of an origin neither committed nor replayed is unknown', () => {
      expect(
        reconcile({ ...p, checkpoint: 20 }, ledger, table(20), letters, undefined, { count: 3, held: 3 }),
      ).toMatchObject({ ok: false, unknownRows: 1, replayedMissing: 0 });
    });

    test('a replayed row written twice is a duplicate', () => {
      expect(
        reconcile({ ...p, checkpoint: 20 }, ledger, table(19, 20), letters, undefined, { count: 3, held: 3 }),
      ).toMatchObject({ ok: false, duplicates: 1 });
    });
  });

  test('a contiguous ledger matching the table is ok', () => {
    const v = reconcile({ ...p, checkpoint: 30 }, [entry(0, 10), entry(10, 30, 18, 2)], {
      rows: 28,
      distinctOffsets: 28,
      minOffset: 0,
      maxOffset: 29,
    });
    expect(v).toMatchObject({
      ok: true,
      commits: 2,
      ledgerRows: 28,
      deadLetters: 2,
      duplicates: 0,
      missingRows: 0,
      gaps: [],
    });
  });

  test('duplicates, missing rows, gaps and overlaps are each reported', () => {
    expect(
      reconcile({ ...p, checkpoint: 10 }, [entry(0, 10)], {
        rows: 12,
        distinctOffsets: 10,
        minOffset: 0,
        maxOffset: 9,
      }),
    ).toMatchObject({ ok: false, duplicates: 2 });
    expect(
      reconcile({ ...p, checkpoint: 10 }, [entry(0, 10)], {
        rows: 9,
        distinctOffsets: 9,
        minOffset: 0,
        maxOffset: 9,
      }),
    ).toMatchObject({ ok: false, missingRows: 1 });
    expect(
      reconcile({ ...p, checkpoint: 30 }, [entry(0, 10), entry(20, 30)], {
        rows: 20,
        distinctOffsets: 20,
        minOffset: 0,
        maxOffset: 29,
      }).gaps,
    ).toEqual(['[10, 20)']);
    expect(
      reconcile({ ...p, checkpoint: 30 }, [entry(0, 12), entry(10, 30)], {
        rows: 30,
        distinctOffsets: 30,
        minOffset: 0,
        maxOffset: 29,
      }).gaps,
    ).toEqual(['overlap [10, 12)']);
    expect(
      reconcile({ ...p, checkpoint: 40 }, [entry(0, 30)], {
        rows: 30,
        distinctOffsets: 30,
        minOffset: 0,
        maxOffset: 29,
      }).gaps,
    ).toEqual(['ledger ends at 30, checkpoint is 40']);
  });

  test('offsets Kafka skipped and ranges lost to retention are counted as such, not as holes', () => {
    const v = reconcile(
      { ...p, checkpoint: 50 },
      [
        entry(0, 10, 8, 0, 8),
        { from: 10, to: 40, records: 0, rows: 0, deadLetters: 0, tombstones: 0, filtered: 0, lost: true },
        entry(40, 50),
      ],
      { rows: 18, distinctOffsets: 18, minOffset: 0, maxOffset: 49 },
    );
    expect(v).toMatchObject({ ok: true, skipped: 2, lost: 30 });
  });

  test('after an operator reset, history is reconciled from the reset on', () => {
    const v = reconcile(
      { ...p, checkpoint: 25 },
      [
        entry(0, 10),
        entry(10, 30),
        {
          from: 30,
          to: 15,
          records: 0,
          rows: 0,
          deadLetters: 0,
          tombstones: 0,
          filtered: 0,
          lost: false,
          reset: true,
        },
        entry(15, 25),
      ],
      { rows: 10, distinctOffsets: 10, minOffset: 15, maxOffset: 24 },
    );
    expect(v).toMatchObject({ ok: true, from: 15, commits: 2, ledgerRows: 10, gaps: [] });
  });

  test('storage-write: the error table must hold each dead letter of the ledger exactly once', () => {
    const ledger = [entry(0, 10, 8, 2)];
    const table = { rows: 8, distinctOffsets: 8, minOffset: 0, maxOffset: 9 };
    const letters = (rows: number, distinct: number) => ({
      rows,
      distinctOffsets: distinct,
      minOffset: 3,
      maxOffset: 7,
    });
    expect(reconcile({ ...p, checkpoint: 10 }, ledger, table, letters(2, 2))).toMatchObject({
      ok: true,
      errorTableRows: 2,
    });
    expect(reconcile({ ...p, checkpoint: 10 }, ledger, table, letters(1, 1)).ok).toBe(false);
    expect(reconcile({ ...p, checkpoint: 10 }, ledger, table, letters(3, 2))).toMatchObject({
      ok: false,
      errorTableDuplicates: 1,
    });
    expect(reconcile({ ...p, checkpoint: 10 }, ledger, table).ok).toBe(true);
  });

  test('a roll-up keeps the sums and the holes of what it folds; reconciling with it gives the same verdict', () => {
    const ledger: LedgerEntry[] = [
      entry(0, 10),
      entry(10, 20, 9, 1),
      { ...entry(20, 30, 0, 0, 0), lost: true },
      entry(30, 40, 8, 0, 8),
      entry(45, 50), // a hole: [40, 45)
      entry(50, 60),
    ];
    const table = { rows: 42, distinctOffsets: 42, minOffset: 0, maxOffset: 59 };
    const whole = reconcile({ ...p, checkpoint: 60 }, ledger, table);
    const folded = rollUpLedger(ledger.slice(0, 5));
    expect(folded).toMatchObject({
      from: 0,
      to: 50,
      rows: 32,
      deadLetters: 1,
      lostOffsets: 10,
      commits: 5,
      gaps: ['[40, 45)'],
    });
    const rolled = reconcile({ ...p, checkpoint: 60 }, [folded, ledger[5]!], table);
    expect(rolled).toEqual(whole);
    expect(rolled).toMatchObject({ ok: false, gaps: ['[40, 45)'], lost: 10, skipped: 2, commits: 6 });
    // A roll-up of a roll-up and newer entries is the roll-up of them all.
    expect(rollUpLedger([folded, ledger[5]!])).toEqual(rollUpLedger(ledger));
  });

  test('a roll-up starts after the last reset it folds', () => {
    const reset: LedgerEntry = {
      from: 30,
      to: 15,
      records: 0,
      rows: 0,
      deadLetters: 0,
      tombstones: 0,
      filtered: 0,
      lost: false,
      reset: true,
    };
    expect(rollUpLedger([entry(0, 10), entry(10, 30), reset, entry(15, 25)])).toMatchObject({
      from: 15,
      to: 25,
      rows: 10,
      gaps: [],
    });
  });
});

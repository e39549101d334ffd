// Packages (or parts of them) that ship no types; these are the calls the drain makes.
declare module 'snappyjs' {
  const snappy: { uncompress(data: Uint8Array): Uint8Array; compress(data: Uint8Array): Uint8Array };
  export default snappy;
}
declare module 'lz4js' {
  const lz4: {
    /** Decompresses one block of src[at, at + size) into dst from written on; returns the new end. */
    decompressBlock(src: Uint8Array, dst: Uint8Array, at: number, size: number, written: number): number;
    compress(data: Uint8Array): Uint8Array;
  };
  export default lz4;
}
// kafkajs's request queue (kafkajs-patch.ts): a class, typed there.
declare module 'kafkajs/src/network/requestQueue/index.js' {
  const RequestQueue: unknown;
  export default RequestQueue;
}
// kafkajs's record batch (head-probe.ts): a class, typed there.
declare module 'kafkajs/src/consumer/batch.js' {
  const Batch: unknown;
  export default Batch;
}

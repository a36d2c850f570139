// ioredis's own slot function (the package ships no types): the reference the key layout is checked against.
declare module 'cluster-key-slot' {
  function calculateSlot(key: string): number;
  namespace calculateSlot {
    function generateMulti(keys: string[]): number;
  }
  export = calculateSlot;
}

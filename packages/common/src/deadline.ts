/**
 * `promise`'s outcome, or `late()` thrown once `ms` passed without one. The work goes on either way (a promise
 * cannot be stopped): only the wait for it ends. The timer is cleared as soon as either settles.
 */
export function settleWithin<T>(promise: Promise<T>, ms: number, late: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late()), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

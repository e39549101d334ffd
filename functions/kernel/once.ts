/**
 * A promise made at the first call and shared by every call after it, forgotten when it fails so that the
 * next call makes it again (a table to create, a principal to look up: worth doing once, not worth
 * giving up on after one failure).
 */
export function onceUntilFailure<T>(make: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | undefined;
  return () => {
    if (made === undefined) {
      const attempt = make();
      made = attempt;
      attempt.catch(() => {
        if (made === attempt) made = undefined;
      });
    }
    return made;
  };
}

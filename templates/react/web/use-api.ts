import { useEffect, useState } from 'react';
import { api, messageOf } from './api';

export type Loaded<T> =
  | { state: 'loading' }
  | { state: 'ok'; data: T }
  | { state: 'error'; message: string };

/**
 * Loads `path` from the app's API when the component mounts and whenever
 * `path` changes; an answer for a path the component has left is dropped.
 */
export function useApi<T>(path: string): Loaded<T> {
  const [loaded, setLoaded] = useState<Loaded<T>>({ state: 'loading' });
  useEffect(() => {
    let current = true;
    setLoaded({ state: 'loading' });
    api<T>(path).then(
      (data) => current && setLoaded({ state: 'ok', data }),
      (err: unknown) => current && setLoaded({ state: 'error', message: messageOf(err) }),
    );
    return () => {
      current = false;
    };
  }, [path]);
  return loaded;
}

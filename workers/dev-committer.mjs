// Development entry of the committer thread when running from TypeScript sources.
import { register } from 'tsx/esm/api';

register();
await import('./committer.ts');

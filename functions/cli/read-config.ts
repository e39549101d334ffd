import { type DrainConfig, parseConfig } from '../config/config.js';
import { ConfigError } from '../kernel/errors.js';

/** The operator commands' configuration, or undefined (after saying why) when it is wrong. */
export function readConfig(env: NodeJS.ProcessEnv): DrainConfig | undefined {
  try {
    return parseConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`configuration error: ${error.message}\n`);
    return undefined;
  }
}

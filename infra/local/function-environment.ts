import { secretArnVariable, secretSettings, settingNames, settingSources, type SettingName } from '../../shared/platform/config.ts';

/** Every variable that is a setting, in the form the local runtime holds it and in a secret's `_ARN` form. */
const settingVariables = new Map<string, SettingName>([
  ...settingNames.map((name): [string, SettingName] => [name, name]),
  ...secretSettings.map((name): [string, SettingName] => [secretArnVariable(name), name]),
]);

/**
 * A local execution environment's variables, as the stack gives a function its own: everything of this process but
 * the settings the function does not read (its entry of functions/settings.ts), but those Lambda sets for every
 * function. A secret setting keeps whichever
 * form this process has (its value locally, the `_ARN` of its secret in tests). Undeclared functions (test
 * fixtures) get the whole environment.
 */
export function functionEnvironment(settings: readonly SettingName[] | undefined, env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  if (!settings) return { ...env };
  const reads = new Set<SettingName>(settings);
  return Object.fromEntries(Object.entries(env).filter(([variable]) => {
    const setting = settingVariables.get(variable);
    // What Lambda sets itself (AWS_REGION) every function has, whether its code reads it or only the SDK does.
    return setting === undefined || reads.has(setting) || settingSources[setting] === 'lambda';
  }));
}

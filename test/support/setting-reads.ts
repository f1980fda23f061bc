import { resolve } from 'node:path';
import { build } from 'esbuild';
import { lambdaBundling } from '../../infra/bundling.ts';
import { settingNames, type SettingName } from '../../shared/platform/config.ts';

const repoRoot = resolve(import.meta.dirname, '../..');

/**
 * Files that declare settings rather than read them: the configuration schema, and the declarations of the
 * functions (route groups, consumers, their settings), which the edge function bundles whole for /openapi.json.
 */
const declarations = [/^shared\/platform\/config\.ts$/, /^functions\/settings\.ts$/, /^functions\/route-groups\.ts$/, /^functions\/consumers\.ts$/, /^functions\/[^/]+\/routes\.ts$/];

/**
 * The settings (variables of shared/platform/config.ts) the code of a Lambda function reads: its handler bundled as
 * the stack bundles it (tree-shaken, so only code that can run is there), unminified so each module's code follows
 * its `// path` line, and each module but the declarations searched, comments left out, for the settings' names. A setting is read
 * where code names it: `config.TABLE_NAME`, a destructuring, `secretSetting(config, 'STRIPE_WEBHOOK_SECRET')`.
 */
export async function settingsReadBy(entry: string): Promise<Set<SettingName>> {
  const result = await build({
    ...lambdaBundling,
    entryPoints: [resolve(repoRoot, entry)],
    absWorkingDir: repoRoot,
    minify: false,
    sourcemap: false,
    banner: {},
    legalComments: 'none',
    write: false,
    outfile: resolve(repoRoot, 'cdk.out/settings-reads.mjs'),
    logLevel: 'error',
  });
  const code = result.outputFiles.find((file) => file.path.endsWith('.mjs'))?.text ?? '';
  const parts = code.split(/^\/\/ (\S+)$/m);
  const reads = new Set<SettingName>();
  for (let index = 1; index < parts.length; index += 2) {
    const module = parts[index] as string;
    if (module.includes('node_modules/') || declarations.some((pattern) => pattern.test(module))) continue;
    // esbuild keeps some doc comments (on object properties); a comment that names a setting reads nothing.
    const body = (parts[index + 1] as string).replace(/\/\*[\s\S]*?\*\//g, '');
    for (const name of settingNames) if (new RegExp(`\\b${name}\\b`).test(body)) reads.add(name);
  }
  return reads;
}

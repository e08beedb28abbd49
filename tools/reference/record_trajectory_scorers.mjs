// Records what the reference's trajectory scorers (code and LLM-judged) and multi-turn judge
// (@mastra/evals) return. Reads tools/reference/trajectory_cases.json (each case: the reference
// factory and its arguments, the scorewatch options of the same scorer, the run, and for the
// LLM-judged ones the judge's answers in call order), writes
// tests/fixtures/reference/trajectory/recorded.json. See tools/reference/README.md.
//
// A trajectory-typed scorer is given what the reference's own eval runner gives it: agent
// messages go through `extractTrajectory` first; a trajectory (`{steps}`) is passed as it is.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { REF, probed, scriptedModel, stable, watchPrompts } from './mock_judge.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const prebuilt = await import(join(REF, '@mastra/evals/dist/scorers/prebuilt/index.js'));
const { extractTrajectory } = await import(join(REF, '@mastra/evals/dist/scorers/utils.js'));

const cases = JSON.parse(readFileSync(join(here, 'trajectory_cases.json'), 'utf8'));
const recorded = [];
for (const testCase of cases) {
  const factory = prebuilt[testCase.factory];
  if (typeof factory !== 'function') throw new Error(`unknown factory ${testCase.factory}`);
  const answers = (testCase.answers ?? []).map((a) => (typeof a === 'string' ? a : JSON.stringify(a)));
  const model = scriptedModel(answers);
  const prompts = watchPrompts(model);
  const expected = {};
  try {
    const scorer = factory(testCase.answers ? { model, ...testCase.args } : testCase.args);
    expected.id = scorer.id;
    expected.name = scorer.name;
    expected.type = scorer.type ?? null;
    const run = { ...testCase.run };
    if (scorer.type === 'trajectory' && Array.isArray(run.output)) {
      run.output = extractTrajectory(run.output);
    }
    const result = await scorer.run(run);
    expected.score = result.score ?? null;
    expected.preprocessStepResult = result.preprocessStepResult ?? null;
    expected.analyzeStepResult = result.analyzeStepResult ?? null;
    expected.reason = result.reason ?? null;
  } catch (error) {
    expected.error = String(error?.message ?? error);
  }
  expected.judgeCalls = model.calls;
  // Facts of what the judge was shown (see record_llm_scorers.mjs).
  if (testCase.probes) expected.probes = probed(testCase.probes, prompts);
  recorded.push({ ...testCase, expected: stable(expected) });
}
const folder = join(root, 'tests', 'fixtures', 'reference', 'trajectory');
mkdirSync(folder, { recursive: true });
const out = join(folder, 'recorded.json');
writeFileSync(out, JSON.stringify(recorded, null, 1) + '\n');
console.log(`recorded ${recorded.length} cases into ${out}`);

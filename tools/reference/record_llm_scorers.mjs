// Records what the reference's LLM-judged prebuilt scorers (@mastra/evals) return when their
// judge answers with fixed bytes. Reads tools/reference/llm_scorer_cases.json (each case: the
// reference factory and its arguments, the scorewatch options of the same scorer, the run, the
// judge's answers in call order), writes tests/fixtures/reference/llm_scorers/recorded.json.
// See tools/reference/README.md.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { REF, probed, scriptedModel, watchPrompts } from './mock_judge.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const prebuilt = await import(join(REF, '@mastra/evals/dist/scorers/prebuilt/index.js'));

const cases = JSON.parse(readFileSync(join(here, 'llm_scorer_cases.json'), 'utf8'));
const recorded = [];
for (const testCase of cases) {
  const factory = prebuilt[testCase.factory];
  if (typeof factory !== 'function') throw new Error(`unknown factory ${testCase.factory}`);
  const answers = testCase.answers.map((a) => (typeof a === 'string' ? a : JSON.stringify(a)));
  const model = scriptedModel(answers);
  const prompts = watchPrompts(model);
  const expected = {};
  try {
    const scorer = factory({ model, ...testCase.args });
    expected.id = scorer.id;
    expected.name = scorer.name;
    const result = await scorer.run(testCase.run);
    expected.score = result.score ?? null;
    expected.preprocessStepResult = result.preprocessStepResult ?? null;
    expected.analyzeStepResult = result.analyzeStepResult ?? null;
    expected.reason = result.reason ?? null;
  } catch (error) {
    expected.error = String(error?.message ?? error);
  }
  expected.judgeCalls = model.calls;
  if (testCase.probes) {
    // Whether each probe (a fact the judge must see, e.g. how a piece is numbered) was in a
    // prompt: the reference's prompts themselves are not kept, only these facts.
    expected.probes = probed(testCase.probes, prompts);
  }
  recorded.push({ ...testCase, expected });
}
const out = join(root, 'tests', 'fixtures', 'reference', 'llm_scorers', 'recorded.json');
writeFileSync(out, JSON.stringify(recorded, null, 1) + '\n');
console.log(`recorded ${recorded.length} cases into ${out}`);

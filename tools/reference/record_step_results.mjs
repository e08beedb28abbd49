// Records how the reference's result writes the step results of steps that return nothing (or a
// falsy value): which keys its JSON has and their values.
// Usage: node tools/reference/record_step_results.mjs > tests/fixtures/reference/core/step_results.json
import { REF } from './mock_judge.mjs';

const { createScorer } = await import(`${REF}/@mastra/core/dist/evals/index.js`);

const STEP_KEYS = ['preprocessStepResult', 'analyzeStepResult', 'score', 'reason'];
const base = () => createScorer({ id: 'steps', description: 'd' });
const cases = {
  score_only: () => base().generateScore(() => 1),
  preprocess_returns_nothing: () => base().preprocess(() => {}).generateScore(() => 1),
  preprocess_returns_null: () => base().preprocess(() => null).generateScore(() => 1),
  preprocess_returns_zero: () => base().preprocess(() => 0).generateScore(() => 1),
  preprocess_returns_empty_text: () => base().preprocess(() => '').generateScore(() => 1),
  preprocess_returns_false: () => base().preprocess(() => false).generateScore(() => 1),
  analyze_returns_nothing: () => base().preprocess(() => ({ a: 1 })).analyze(() => undefined).generateScore(() => 1),
  reason_returns_nothing: () => base().generateScore(() => 1).generateReason(() => undefined),
  reason_returns_null: () => base().generateScore(() => 1).generateReason(() => null),
};
const out = {};
for (const [name, build] of Object.entries(cases)) {
  const result = await build().run({ input: 'q', output: 'a' });
  const wire = JSON.parse(JSON.stringify(result));
  out[name] = Object.fromEntries(STEP_KEYS.map((key) => [key, key in wire ? { value: wire[key] } : 'absent']));
}
console.log(JSON.stringify(out, null, 1));

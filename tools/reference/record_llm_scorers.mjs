// Records what the reference's LLM-judged prebuilt scorers (@mastra/evals) return when their
// judge answers with fixed bytes. Reads tools/reference/llm_scorer_cases.json, writes
// tests/fixtures/reference/llm_scorers/recorded.json. See tools/reference/README.md.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const refRoot = process.env.MASTRA_REF ?? '/work/ref/node_modules';
const prebuilt = await import(join(refRoot, '@mastra/evals/dist/scorers/prebuilt/index.js'));

const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };

// A language model (AI SDK v2 shape) that replies with the next scripted text, whichever API
// the reference calls (generate or stream).
function scriptedModel(answers) {
  const state = { calls: 0 };
  const next = () => {
    const text = answers[state.calls];
    state.calls += 1;
    if (text === undefined) throw new Error(`judge call ${state.calls} has no scripted answer`);
    return text;
  };
  const model = {
    specificationVersion: 'v2',
    provider: 'scripted',
    modelId: 'scripted-judge',
    supportedUrls: {},
    async doGenerate() {
      return { content: [{ type: 'text', text: next() }], finishReason: 'stop', usage, warnings: [] };
    },
    async doStream() {
      const text = next();
      const stream = new ReadableStream({
        start(controller) {
          controller.enqueue({ type: 'stream-start', warnings: [] });
          controller.enqueue({ type: 'text-start', id: 't' });
          controller.enqueue({ type: 'text-delta', id: 't', delta: text });
          controller.enqueue({ type: 'text-end', id: 't' });
          controller.enqueue({ type: 'finish', finishReason: 'stop', usage });
          controller.close();
        },
      });
      return { stream };
    },
  };
  return { model, state };
}

const cases = JSON.parse(readFileSync(join(here, 'llm_scorer_cases.json'), 'utf8'));
const recorded = [];
for (const testCase of cases) {
  const factory = prebuilt[testCase.factory];
  if (typeof factory !== 'function') throw new Error(`unknown factory ${testCase.factory}`);
  const { model, state } = scriptedModel(testCase.answers.map((a) => (typeof a === 'string' ? a : JSON.stringify(a))));
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
  expected.judgeCalls = state.calls;
  recorded.push({ ...testCase, expected });
}
const out = join(root, 'tests', 'fixtures', 'reference', 'llm_scorers', 'recorded.json');
writeFileSync(out, JSON.stringify(recorded, null, 1) + '\n');
console.log(`recorded ${recorded.length} cases into ${out}`);

// Records what the reference returns when a step declares the run not scorable.
// Usage: node tools/reference/record_not_scorable.mjs > tests/fixtures/reference/core/not_scorable.json
import { REF, scriptedModel, stable } from './mock_judge.mjs';

const { createScorer, notScorable } = await import(`${REF}/@mastra/core/dist/evals/index.js`);
const { z } = await import(`${REF}/zod/index.js`);

const judge = (answers) => ({ model: scriptedModel(answers), instructions: 'Judge carefully.' });

const cases = {
  preprocess_with_reason: () =>
    createScorer({ id: 'ns', description: 'd' })
      .preprocess(() => notScorable('no tool calls'))
      .generateScore(() => 1),
  analyze_without_reason: () =>
    createScorer({ id: 'ns', description: 'd' })
      .preprocess(() => ({ words: 3 }))
      .analyze(() => notScorable())
      .generateScore(() => 1)
      .generateReason(() => 'never'),
  generate_score: () =>
    createScorer({ id: 'ns', description: 'd' })
      .preprocess(() => ({ words: 3 }))
      .generateScore(() => notScorable('empty'))
      .generateReason(() => 'never'),
  generate_reason_drops_score: () =>
    createScorer({ id: 'ns', description: 'd' })
      .generateScore(() => 1)
      .generateReason(() => notScorable('late')),
  after_prompt_step: () =>
    createScorer({ id: 'ns', description: 'd', judge: judge(['{"claims": ["a"]}']) })
      .analyze({
        description: 'Extract claims',
        outputSchema: z.object({ claims: z.array(z.string()) }),
        createPrompt: () => 'List the claims.',
      })
      .generateScore(({ results }) =>
        results.analyzeStepResult.claims.length > 1 ? 1 : notScorable('one claim only'),
      )
      .generateReason(() => 'never'),
};

const recorded = {};
for (const [name, build] of Object.entries(cases)) {
  const scorer = await build();
  recorded[name] = stable(await scorer.run({ input: 'q', output: 'a' }));
}
console.log(JSON.stringify(recorded, null, 2));

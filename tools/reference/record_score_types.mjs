// Records how the reference's score reads when interpolated by a reason step or a reason prompt.
// Usage: node tools/reference/record_score_types.mjs > tests/fixtures/reference/core/score_types.json
import { REF, scriptedModel } from './mock_judge.mjs';

const { createScorer } = await import(`${REF}/@mastra/core/dist/evals/index.js`);

const out = { functionScore: {}, judgedScore: {} };
for (const [name, value] of Object.entries({ one: 1, zero: 0, half: 0.5, seven: 7 })) {
  const result = await createScorer({ id: 'types', description: 'd' })
    .generateScore(() => value)
    .generateReason(({ score }) => `Score: ${score}`)
    .run({ output: 'a' });
  out.functionScore[name] = { score: result.score, reason: result.reason };
}
for (const [name, answer] of Object.entries({ one: '{"score": 1}', half: '{"score": 0.5}' })) {
  const model = scriptedModel([answer, 'because']);
  const result = await createScorer({ id: 'types', description: 'd', judge: { model, instructions: 'J.' } })
    .generateScore({ description: 'Score', createPrompt: () => 'Score it.' })
    .generateReason({ description: 'Explain', createPrompt: ({ score }) => `Explain the score ${score}.` })
    .run({ output: 'a' });
  out.judgedScore[name] = { answer, score: result.score, reasonPrompt: result.generateReasonPrompt };
}
console.log(JSON.stringify(out, null, 2));

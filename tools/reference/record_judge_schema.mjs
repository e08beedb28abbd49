// Records the JSON schema the reference sends its judge for a nested object step and for
// generateScore (the model's call options carry it as the response format).
// Usage: node tools/reference/record_judge_schema.mjs > tests/fixtures/reference/core/judge_schema.json
import { REF, scriptedModel } from './mock_judge.mjs';

const { createScorer } = await import(`${REF}/@mastra/core/dist/evals/index.js`);
const { z } = await import(`${REF}/zod/index.js`);

// Without native structured output the reference puts the schema in the prompt as JSON text:
// keep only that JSON (the surrounding sentences are the reference's, not ours to record).
function schemaInPrompt(prompt) {
  for (const message of prompt) {
    const parts = typeof message.content === 'string' ? [{ text: message.content }] : message.content;
    for (const part of parts) {
      const start = part.text?.indexOf('{"$schema"') ?? -1;
      if (start >= 0) {
        const end = part.text.indexOf('\n', start);
        return JSON.parse(part.text.slice(start, end < 0 ? undefined : end));
      }
    }
  }
  return null;
}

function capturing(answers) {
  const model = scriptedModel(answers);
  const seen = [];
  for (const method of ['doGenerate', 'doStream']) {
    const original = model[method].bind(model);
    model[method] = async (options) => {
      seen.push(options.responseFormat?.schema ?? schemaInPrompt(options.prompt));
      return original(options);
    };
  }
  return { model, seen };
}

const { model, seen } = capturing(['{"verdicts": [{"verdict": "yes", "reason": "r"}]}', '{"score": 1}']);
const scorer = createScorer({ id: 'schema', description: 'd', judge: { model, instructions: 'Judge.' } })
  .analyze({
    description: 'Verdicts',
    outputSchema: z.object({
      verdicts: z.array(z.object({ verdict: z.string(), reason: z.string() })),
    }),
    createPrompt: () => 'Give verdicts.',
  })
  .generateScore({ description: 'Score', createPrompt: () => 'Score.' });
await scorer.run({ input: 'q', output: 'a' });
console.log(JSON.stringify({ analyze: seen[0], generateScore: seen[1] }, null, 2));

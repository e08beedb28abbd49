// Records what the reference system makes of a stored agent trace when it scores it: the run an
// agent-type scorer is given (input, output and the trace fields) and the score it saves.
// Usage: node tools/reference/record_trace_runs.mjs > tests/fixtures/reference/traces/recorded.json
import { readFileSync } from 'node:fs';
import { REF, stable } from './mock_judge.mjs';

const { createScorer } = await import(`${REF}/@mastra/core/dist/evals/index.js`);
const { scoreTrace } = await import(`${REF}/@mastra/core/dist/evals/scoreTraces/index.js`);

const cases = JSON.parse(readFileSync(new URL('./trace_cases.json', import.meta.url), 'utf8'));

// A stand-in for the reference's storage: keeps the payload it is asked to save.
function memoryStorage() {
  const saved = [];
  const scores = {
    async saveScore(payload) {
      saved.push(payload);
      return { score: { ...payload, id: 'score-1', createdAt: new Date(0), updatedAt: new Date(0) } };
    },
  };
  const observability = { async updateSpan() {} };
  return { saved, async getStore(name) { return name === 'scores' ? scores : observability; } };
}

// Dates as the JSON text the reference would write; run ids and timings left out.
const plain = (value) => stable(JSON.parse(JSON.stringify(value)));

const recorded = [];
for (const testCase of cases) {
  let seen = null;
  // An agent-type scorer gets the trace as an agent run; any other, the target span's own
  // input and output (cases with "scorerType": "default").
  const type = testCase.scorerType === 'default' ? undefined : 'agent';
  const scorer = createScorer({ id: 'trace-probe', description: 'keeps the run it is given', type })
    .generateScore(({ run }) => {
      seen = run;
      return 1;
    });
  const storage = memoryStorage();
  const trace = { traceId: testCase.traceId, spans: testCase.spans };
  await scoreTrace({ storage, scorer, target: { trace, spanId: testCase.target } });
  const saved = storage.saved[0];
  recorded.push({
    name: testCase.name,
    run: plain({
      input: seen.input,
      output: seen.output,
      scoreSource: seen.scoreSource,
      targetScope: seen.targetScope,
      targetEntityType: seen.targetEntityType,
      targetTraceId: seen.targetTraceId,
      targetSpanId: seen.targetSpanId,
      targetCorrelationContext: seen.targetCorrelationContext,
      targetMetadata: seen.targetMetadata,
    }),
    saved: plain({
      traceId: saved.traceId,
      spanId: saved.spanId,
      entityId: saved.entityId,
      entityType: saved.entityType,
      entity: saved.entity,
      source: saved.source,
      scorerId: saved.scorerId,
      score: saved.score,
    }),
  });
}
process.stdout.write(`${JSON.stringify({ reference: '@mastra/core@1.71.0', cases: recorded }, null, 2)}\n`);

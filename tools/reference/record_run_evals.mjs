// Records the reference's runEvals result shape (scores, summary with notScorable counts, gate and
// threshold results, verdict), what onItemComplete receives, and the target fields of scorer runs.
// Usage: node tools/reference/record_run_evals.mjs > tests/fixtures/reference/evals/run_evals.json
import { REF, scriptedModel } from './mock_judge.mjs';

const { createScorer, notScorable, runEvals } = await import(`${REF}/@mastra/core/dist/evals/index.js`);

// Duck-typed agent: echoes its input as its output (the Python tests use `target=lambda x: x`).
const echoAgent = {
  id: 'echo-agent',
  name: 'echo-agent',
  async getModel() {
    return scriptedModel([]);
  },
  async generate(input) {
    return { text: String(input), scoringData: { input, output: input } };
  },
};

const seenRuns = {};
function watched(scorer) {
  const run = scorer.run.bind(scorer);
  scorer.run = async (input) => {
    seenRuns[scorer.id] ??= { targetScope: input.targetScope ?? null, targetEntityType: input.targetEntityType ?? null, scoreSource: input.scoreSource ?? null };
    return run(input);
  };
  return scorer;
}

const echo = () =>
  watched(
    createScorer({ id: 'echo', description: 'the output as a number' })
      .preprocess(({ run }) => (run.output === 'none' ? notScorable('no value') : { value: Number(run.output) }))
      .generateScore(({ results }) => results.preprocessStepResult.value),
  );
const half = () => watched(createScorer({ id: 'half', description: 'd' }).generateScore(() => 0.5));
const never = () =>
  watched(createScorer({ id: 'never', description: 'd' }).preprocess(() => notScorable()).generateScore(() => 1));
const gateOne = () => watched(createScorer({ id: 'gate-one', description: 'd' }).generateScore(() => 1));
const gateNever = () =>
  watched(createScorer({ id: 'gate-never', description: 'd' }).preprocess(() => notScorable('n/a')).generateScore(() => 1));
const gateBoom = () =>
  createScorer({ id: 'gate-boom', description: 'd' }).generateScore(() => {
    throw new Error('boom');
  });

const DATA = [{ input: '0.25' }, { input: '0.75' }, { input: 'none' }, { input: '1' }];

const callbacks = [];
const runs = {
  plain: await runEvals({ data: DATA, target: echoAgent, scorers: [echo(), half()] }),
  thresholds: await runEvals({
    data: DATA,
    target: echoAgent,
    scorers: [
      { scorer: echo(), threshold: 0.5 },
      { scorer: half(), threshold: { min: 0.4, max: 0.6 } },
      { scorer: never(), threshold: 0.9 },
    ],
    gates: [gateOne(), gateNever()],
    onItemComplete: (arg) => {
      callbacks.push({
        keys: Object.keys(arg).sort(),
        input: arg.item.input,
        scorerIds: Object.keys(arg.scorerResults).sort(),
      });
    },
  }),
  scored: await runEvals({
    data: DATA,
    target: echoAgent,
    scorers: [{ scorer: echo(), threshold: 0.9 }],
    gates: [gateOne()],
  }),
  failed_gate: await runEvals({
    data: DATA,
    target: echoAgent,
    scorers: [{ scorer: echo(), threshold: 0.1 }],
    gates: [gateOne(), gateBoom()],
  }),
};
console.log(JSON.stringify({ data: DATA, runs, onItemComplete: callbacks, scorerRuns: seenRuns }, null, 2));

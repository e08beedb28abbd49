// Records the reference's runEvals on the dataset shapes the first recording left out: items with an
// expected trajectory scored by trajectory scorers (`scorers: {agent, trajectory}`), multi-turn
// items (`inputs: [...]`), two scorers sharing an id, threshold edge values, which error comes
// first, and the details each error gives.
// Usage: node tools/reference/record_run_evals_shapes.mjs > tests/fixtures/reference/evals/run_evals_shapes.json
import { REF, scriptedModel, stable, watchPrompts } from './mock_judge.mjs';

const { createScorer, runEvals } = await import(`${REF}/@mastra/core/dist/evals/index.js`);
const prebuilt = await import(`${REF}/@mastra/evals/dist/scorers/prebuilt/index.js`);

// The agent's answers, looked up by the JSON of its input (the Python tests read the same table).
// Tool turns are agent messages with tool invocations; plain turns one assistant text message.
const message = (id, parts) => ({
  id,
  role: 'assistant',
  content: { format: 2, parts },
  createdAt: '2026-01-01T00:00:00.000Z',
});
const call = (id, name, args, result) => ({
  type: 'tool-invocation',
  toolInvocation: { toolCallId: id, toolName: name, state: 'result', args, result },
});
const text = (value) => ({ type: 'text', text: value });
const AGENT_OUTPUTS = {
  '"weather in Oslo"': [
    message('a1', [call('c1', 'geocode', { city: 'Oslo' }, { lat: 59.9 }), call('c2', 'forecast', { lat: 59.9, days: 2 }, { sky: 'rain' })]),
    message('a2', [text('Rain in Oslo for two days.')]),
  ],
  '"weather in Lima"': [
    message('b1', [call('d1', 'forecast', { city: 'Lima' }, { sky: 'sun' })]),
    message('b2', [text('Sunny in Lima.')]),
  ],
  '"just chat"': [message('e1', [text('Happy to chat.')])],
  '"Book a table for two"': [message('t1', [text('Which evening suits you?')])],
  '"Friday at eight"': [message('t2', [call('t2c', 'reserve', { day: 'Fri', time: '20:00', people: 2 }, { ok: true }), text('Booked for Friday at 20:00.')])],
  '"Thanks!"': [message('t3', [text('Enjoy your dinner.')])],
  '"Is it open on Mondays?"': [message('u1', [text('No, it is closed on Mondays.')])],
};
const answerOf = (input) => {
  const key = JSON.stringify(input);
  if (!(key in AGENT_OUTPUTS)) throw new Error(`the agent has no answer for ${key}`);
  return AGENT_OUTPUTS[key];
};

// What the agent was asked, per call: the input and the thread of its memory option.
let agentCalls = [];
const toolAgent = {
  id: 'tool-agent',
  name: 'tool-agent',
  async getModel() {
    return scriptedModel([]);
  },
  async getMemory() {
    return {}; // a memory is configured: turns share the thread
  },
  getMastraInstance() {
    return undefined;
  },
  async generate(input, options) {
    if (input === 'explode') throw new Error('the agent broke');
    agentCalls.push({ input, thread: options?.memory?.thread ?? null, resource: options?.memory?.resource ?? null });
    const output = answerOf(input);
    return { text: 'x', scoringData: { input, output } };
  },
};

// Scorers that keep what they were given.
const seen = {};
function keeping(scorer) {
  const run = scorer.run.bind(scorer);
  scorer.run = async (input) => {
    (seen[scorer.id] ??= []).push({
      input: input.input ?? null,
      output: input.output ?? null,
      expectedTrajectory: input.expectedTrajectory ?? null,
      hasExpectedTrajectory: 'expectedTrajectory' in input,
      groundTruth: input.groundTruth ?? null,
      targetScope: input.targetScope ?? null,
      targetEntityType: input.targetEntityType ?? null,
    });
    return run(input);
  };
  return scorer;
}
const constant = (id, value) => createScorer({ id, description: 'd' }).generateScore(() => value);
const outputCount = () =>
  createScorer({ id: 'output-count', description: 'd' }).generateScore(({ run }) =>
    Array.isArray(run.output) ? run.output.length / 10 : 0,
  );
const boom = () =>
  createScorer({ id: 'boom', description: 'd' }).generateScore(() => {
    throw new Error('the scorer broke');
  });

async function attempt(config) {
  agentCalls = [];
  for (const key of Object.keys(seen)) delete seen[key];
  const itemResults = [];
  try {
    const result = await runEvals({
      target: toolAgent,
      ...config,
      onItemComplete: ({ item, scorerResults }) => {
        itemResults.push({ item: JSON.stringify(item), scorerResults: summarize(scorerResults) });
      },
    });
    return { result, items: itemResults, seen: structuredClone(seen), agentCalls };
  } catch (error) {
    return {
      error: { id: error.id ?? null, message: error.message, details: error.details ?? null, cause: error.cause?.message ?? null },
      seen: structuredClone(seen),
      agentCalls,
    };
  }
}

// Scores and preprocess results of each scorer on one item (the nested kinds kept).
function summarize(results) {
  const out = {};
  for (const [key, value] of Object.entries(results)) {
    if (value && typeof value === 'object' && !('runId' in value)) out[key] = summarize(value);
    else out[key] = { score: value.score ?? null, preprocessStepResult: value.preprocessStepResult ?? null };
  }
  return out;
}

const TRAJECTORY_DATA = [
  {
    input: 'weather in Oslo',
    groundTruth: 'rain',
    expectedTrajectory: { steps: [{ stepType: 'tool_call', name: 'geocode' }, { stepType: 'tool_call', name: 'forecast' }], ordering: 'strict' },
  },
  {
    input: 'weather in Lima',
    expectedTrajectory: { steps: [{ name: 'geocode' }, { name: 'forecast' }], maxSteps: 1 },
  },
  { input: 'just chat', expectedTrajectory: { steps: [] } },
];
const MULTI_TURN_DATA = [
  { inputs: ['Book a table for two', 'Friday at eight', 'Thanks!'], groundTruth: 'a booking' },
  { inputs: ['Is it open on Mondays?'] },
  { input: 'just chat' },
];
const judgeAnswers = [
  '{"satisfied": true, "reasoning": "It asked, then booked."}',
  '{"satisfied": false, "reasoning": "No booking."}',
  '{"satisfied": false, "reasoning": "No booking."}',
];

// An agent whose turns answer plain text (no message objects), as a Python target usually does.
const textAgent = {
  ...toolAgent,
  id: 'text-agent',
  async generate(input, options) {
    agentCalls.push({ input, thread: options?.memory?.thread ?? null, resource: options?.memory?.resource ?? null });
    return { text: `echo: ${input}`, scoringData: { input, output: `echo: ${input}` } };
  },
};
// A judge that keeps whether the transcript it was shown had any assistant turn.
const judgePrompts = [];
function watchedJudge(answers) {
  const model = scriptedModel(answers);
  judgePrompts.push(watchPrompts(model));
  return model;
}

const runs = {
  trajectory: await attempt({
    data: TRAJECTORY_DATA,
    scorers: {
      agent: [keeping(outputCount()), constant('half', 0.5)],
      trajectory: [keeping(prebuilt.createTrajectoryAccuracyScorerCode()), keeping(prebuilt.createTrajectoryScorerCode())],
    },
  }),
  trajectory_only: await attempt({
    data: TRAJECTORY_DATA,
    scorers: { trajectory: [prebuilt.createTrajectoryAccuracyScorerCode({ comparisonOptions: { ordering: 'unordered' } })] },
  }),
  trajectory_in_flat_list: await attempt({
    data: TRAJECTORY_DATA,
    scorers: [keeping(prebuilt.createTrajectoryAccuracyScorerCode())],
  }),
  trajectory_gate: await attempt({
    data: TRAJECTORY_DATA.slice(0, 2),
    scorers: [constant('half', 0.5)],
    gates: [keeping(prebuilt.createTrajectoryAccuracyScorerCode())],
  }),
  trajectory_empty_kinds: await attempt({ data: TRAJECTORY_DATA, scorers: { agent: [], trajectory: [] } }),
  multi_turn: await attempt({
    data: MULTI_TURN_DATA,
    scorers: [
      keeping(outputCount()),
      { scorer: keeping(prebuilt.createMultiTurnJudgeScorer({ model: scriptedModel(judgeAnswers), criterion: 'A table gets booked.' })), threshold: 1 },
    ],
  }),
  multi_turn_trajectory: await attempt({
    data: [{ inputs: ['Book a table for two', 'Friday at eight'], expectedTrajectory: { steps: [{ name: 'reserve' }] } }],
    scorers: { trajectory: [keeping(prebuilt.createTrajectoryAccuracyScorerCode())] },
  }),
  multi_turn_text_target: await attempt({
    target: textAgent,
    data: [{ inputs: ['Hello', 'Bye'] }],
    scorers: [
      keeping(outputCount()),
      prebuilt.createMultiTurnJudgeScorer({ model: watchedJudge(['{"satisfied": true, "reasoning": "ok"}']), criterion: 'It greets.' }),
    ],
  }),
  kind_misspelt: await attempt({
    data: TRAJECTORY_DATA,
    scorers: { agent: [constant('half', 0.5)], trajectroy: [prebuilt.createTrajectoryAccuracyScorerCode()] },
  }),
  turns_item: await attempt({
    data: [{ turns: [{ input: 'Book a table for two', scorers: [constant('turn-half', 0.5)] }, { input: 'Friday at eight' }] }],
    scorers: [outputCount()],
  }),
  duplicate_ids: await attempt({
    data: [{ input: 'just chat' }, { input: 'weather in Lima' }],
    scorers: [constant('dup', 0.2), constant('dup', 0.8), constant('other', 1)],
  }),
  duplicate_ids_thresholds: await attempt({
    data: [{ input: 'just chat' }],
    scorers: [
      { scorer: constant('dup', 0.2), threshold: 0.1 },
      { scorer: constant('dup', 0.8), threshold: 0.9 },
    ],
  }),
  duplicate_gate_ids: await attempt({
    data: [{ input: 'just chat' }],
    scorers: [constant('half', 0.5)],
    gates: [constant('gate', 1), constant('gate', 0)],
  }),
  threshold_null: await attempt({ data: [{ input: 'just chat' }], scorers: [{ scorer: constant('half', 0.5), threshold: null }] }),
  threshold_unknown_key: await attempt({
    data: [{ input: 'just chat' }],
    scorers: [{ scorer: constant('half', 0.5), threshold: { min: 0.4, weight: 2 } }],
  }),
  threshold_only_unknown_key: await attempt({
    data: [{ input: 'just chat' }],
    scorers: [{ scorer: constant('half', 0.5), threshold: { minimum: 0.4 } }],
  }),
  threshold_null_bound: await attempt({
    data: [{ input: 'just chat' }],
    scorers: [{ scorer: constant('half', 0.5), threshold: { min: null, max: 0.6 } }],
  }),
  threshold_array: await attempt({ data: [{ input: 'just chat' }], scorers: [{ scorer: constant('half', 0.5), threshold: [0.5] }] }),
  threshold_string: await attempt({ data: [{ input: 'just chat' }], scorers: [{ scorer: constant('half', 0.5), threshold: '0.5' }] }),
  empty_data_no_scorers: await attempt({ data: [], scorers: [] }),
  empty_data_bad_threshold: await attempt({ data: [], scorers: [{ scorer: constant('half', 0.5), threshold: 2 }] }),
  bad_item_no_scorers: await attempt({ data: [{ output: 'x' }], scorers: [] }),
  bad_item_then_good: await attempt({ data: [{ input: 'just chat' }, { expected: 'x' }], scorers: [constant('half', 0.5)] }),
  item_not_object: await attempt({ data: ['just chat'], scorers: [constant('half', 0.5)] }),
  empty_inputs: await attempt({ data: [{ inputs: [] }], scorers: [constant('half', 0.5)] }),
  inputs_not_a_list: await attempt({ data: [{ inputs: 'just chat' }], scorers: [constant('half', 0.5)] }),
  target_failure: await attempt({
    data: [{ input: 'just chat' }, { input: 'explode', groundTruth: { n: 1.5, tags: ['a'] } }],
    scorers: [constant('half', 0.5)],
  }),
  scorer_failure: await attempt({
    data: [{ input: 'weather in Lima', groundTruth: { n: 2, when: null }, requestContext: { user: 'u1' } }],
    scorers: [boom()],
  }),
  trajectory_scorer_failure: await attempt({
    data: [{ input: 'weather in Lima', expectedTrajectory: { steps: [{ name: 'forecast' }], maxSteps: -1 } }],
    scorers: { trajectory: [prebuilt.createTrajectoryScorerCode()] },
  }),
};

// Thread ids are random: keep only whether the turns of one item share one, and items differ.
for (const run of Object.values(runs)) {
  const threads = run.agentCalls.map((c) => c.thread);
  const distinct = [...new Set(threads.filter(Boolean))];
  run.agentCalls = run.agentCalls.map((c) => ({
    input: c.input,
    thread: c.thread === null ? null : distinct.indexOf(c.thread),
    resourceIsThread: c.resource !== null && c.resource === c.thread,
  }));
}
runs.multi_turn_text_target.judgeSaw = judgePrompts.flat().map((prompt) => ({
  shownNoTurns: prompt.includes('(no assistant messages)'),
  mentionsEcho: prompt.includes('echo: '),
}));
console.log(JSON.stringify(stable({ agentOutputs: AGENT_OUTPUTS, judgeAnswers, runs }), null, 1));
